"""Adding an env, a brain, a memory or a society scenario is one module: `tests/extensions/throwaway.py`
declares one of each with its decorator, and the real commands use them by name, facts included."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import gymnasium as gym
import pytest

import envs
from agents.brains.registry import BRAIN_REGISTRY, in_process
from agents.config import RunConfig, validate_config
from agents.memory.registry import MEMORY_REGISTRY, carries_state
from agents.resolve import resolve
from agents.trajectories import TrajectoryStore
from envs.contract import check_text_env
from envs.plugins import PartSpec, Registry
from envs.registry import ENV_REGISTRY, env_names
from envs.server.entries import ENTRIES
from societies.scenarios import SCENARIO_REGISTRY, scenario_names

MODULE = "tests.extensions.throwaway"
REGISTRIES = (ENV_REGISTRY, BRAIN_REGISTRY, MEMORY_REGISTRY, SCENARIO_REGISTRY)


@pytest.fixture(scope="module", autouse=True)
def throwaway() -> Iterator[ModuleType]:
    """Import the module (its decorators register the parts); afterwards forget them, as other tests expect."""
    sys.modules.pop(MODULE, None)
    yield importlib.import_module(MODULE)
    for registry in REGISTRIES:
        for name, spec in registry.loaded().items():
            if spec.where.startswith(MODULE + ":"):
                registry.remove(name)
    sys.modules.pop(MODULE, None)


def command(main_module: str, args: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    """Run a CLI in this process (where the throwaway module is imported) as `python -m <module> args`."""
    monkeypatch.setattr(sys, "argv", [main_module, *args])
    try:
        importlib.import_module(main_module).main()
    except SystemExit as e:
        return int(e.code or 0)
    return 0


def test_the_parts_are_registered_with_their_facts(throwaway: ModuleType) -> None:
    assert "tally" in env_names() and "tally_reader" in BRAIN_REGISTRY.names()
    assert "tally_log" in MEMORY_REGISTRY.names() and "vote" in scenario_names()
    assert envs.ENVS["tally"] == ("agentsim/tally-v0", "tests.extensions.throwaway:TallyEnv")
    assert envs.MAX_EPISODE_STEPS["tally"] == throwaway.TALLY_STEPS == gym.spec("agentsim/tally-v0").max_episode_steps
    assert ENTRIES["tally"].allowed() == ["max_episode_steps", "max_target"]
    assert not in_process("tally_reader") and in_process("local")
    assert carries_state("working+tally_log") and not carries_state("working")
    assert SCENARIO_REGISTRY.get("vote").options is throwaway.VoteParams
    check_text_env(gym.make("agentsim/tally-v0"))


def test_agents_run_uses_them_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "run"
    args = ["env=tally", "brain=tally_reader", "memory=tally_log", "episodes=4", "progress=false", f"out={out}"]
    assert command("agents.run", args, monkeypatch) == 0
    summary = json.loads((out / "summary.json").read_text())["summary"]
    assert summary["episodes"] == 4 and summary["success_rate"] == 1.0
    eps = list(TrajectoryStore(out / "trajectories.jsonl").read(strict=True))
    assert {e.brain for e in eps} == {"tally_reader"} and {e.model for e in eps} == {"tally_reader(short_by=0)"}
    # the memory carries its state across episodes because its registration says so
    assert json.loads((out / "memory_state.json").read_text())["episodes"] == 4
    # the brain's options model: a known option works, an unknown one is refused naming the valid ones
    short = tmp_path / "short"
    assert command("agents.run", [*args[:-1], "brain.short_by=1", f"out={short}"], monkeypatch) == 0
    assert json.loads((short / "summary.json").read_text())["summary"]["success_rate"] < 1.0
    assert command("agents.run", [*args[:-1], "+brain.shortby=1", f"out={tmp_path / 'x'}"], monkeypatch) == 2


def test_the_env_step_limit_comes_from_its_registration(tmp_path: Path, throwaway: ModuleType) -> None:
    cfg = validate_config(RunConfig, {"env": {"name": "tally", "id": "tally"}, "out": str(tmp_path)})
    assert resolve(cfg).steps_limit == throwaway.TALLY_STEPS
    cfg = validate_config(RunConfig, {"env": {"name": "tally", "id": "tally", "max_steps": 3}, "out": str(tmp_path)})
    assert resolve(cfg).steps_limit == 3


def test_societies_run_plays_the_scenario(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "vote"
    args = ["scenario=vote", "agents=20", "rounds=4", "vote.p_yes=1.0", "plots=false", f"out={out}"]
    assert command("societies.run", args, monkeypatch) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["series"]["yes_share"][-1] == 1.0
    bad = ["scenario=vote", "vote.p_yes=2", f"out={tmp_path / 'bad'}"]
    assert command("societies.run", bad, monkeypatch) == 2


def test_an_unknown_scenario_names_the_closest(tmp_path: Path) -> None:
    from agents.config import ConfigError
    from societies.config import SocietyRunConfig

    with pytest.raises(ConfigError, match="unknown scenario 'vot' \\(did you mean 'vote'\\?\\)"):
        validate_config(SocietyRunConfig, {"scenario": "vot", "out": str(tmp_path)})
    assert ENV_REGISTRY.get("tally").server is not None


def test_a_module_dropped_into_the_package_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The project's parts are found by their decorator in their package: a new module there needs no list."""
    pkg = tmp_path / "newparts"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text("raise RuntimeError('not a part: never imported')\n")
    decl = "from tests.extensions.test_one_module import REG\n\n@register_part({name!r})\nclass Part: ...\n"
    (pkg / "alpha.py").write_text(decl.format(name="alpha").replace("@register_part", "@REG.decorate"))
    (pkg / "sub" / "beta.py").write_text(decl.format(name="beta").replace("@register_part", "@REG.decorate"))
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = NewParts("part", "agentsim.test-parts", ("newparts",), "@REG.decorate(", lambda n, t: PartSpec(n, t))
    monkeypatch.setattr(sys.modules[__name__], "REG", registry, raising=False)
    assert registry.names() == ["alpha", "beta"]
    assert registry.get("beta").where == "newparts.sub.beta:Part"
    with pytest.raises(ValueError, match="unknown part 'alpah' \\(did you mean 'alpha'\\?\\); valid: alpha, beta"):
        registry.get("alpah")
    for module in [m for m in sys.modules if m.split(".")[0] == "newparts"]:
        del sys.modules[module]


class NewParts(Registry[PartSpec]):
    """A registry of a made-up kind, with a decorator, as each kind has."""

    def decorate(self, name: str):  # type: ignore[no-untyped-def]
        def deco(cls: type) -> type:
            self.add(PartSpec(name, cls))
            return cls

        return deco
