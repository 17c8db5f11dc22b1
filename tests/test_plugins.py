"""Registries and declared capabilities: brains, memories and envs from a third-party package, used by name.

The demo plugin in tests/plugin_pkg declares one brain, one memory and one env as entry points
in its pyproject.toml. It is made visible two ways: a dist-info written from that pyproject.toml
(fast, no build), and a real `pip install --target` into a temporary folder (what a user does,
minus touching site-packages). Neither outlives its test.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import pytest

import envs
from agents.brains.base import (
    AsyncChoosingBrain,
    Brain,
    CheckableBrain,
    ChoosingBrain,
    EnvBoundBrain,
    ForkableBrain,
    writes_text,
)
from agents.brains.openai_brain import OpenAIBrain
from agents.brains.registry import BRAIN_REGISTRY, brain_names, in_process, make_brain
from agents.brains.scripted import ScriptedBrain
from agents.config import MemoryConfig
from agents.core import Agent, run_episode
from agents.core.factory import build_memory
from agents.memory import Memory, make_memory, memory_names
from agents.memory.composite import CompositeMemory
from agents.memory.registry import MEMORY_REGISTRY, carries_state
from agents.plugins import PluginError
from envs.capabilities import AsyncClosable, AsyncEnv, HasAsyncExpert, ServesEnvs
from envs.contract import check_text_env
from envs.registry import ENV_REGISTRY, env_id, env_names, load_env_plugins
from envs.server.client import RemoteEnv

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

PLUGIN_SRC = Path(__file__).parent / "plugin_pkg"
PROJECT_ENVS = dict(envs.ENVS)


def _entry_points(extra: dict[str, dict[str, str]] | None = None) -> dict[str, dict[str, str]]:
    groups = tomllib.loads((PLUGIN_SRC / "pyproject.toml").read_text())["project"]["entry-points"]
    for group, eps in (extra or {}).items():
        groups.setdefault(group, {}).update(eps)
    return groups


def write_dist_info(site: Path, groups: dict[str, dict[str, str]], name: str = "agentsim_demo_plugin") -> None:
    """What pip would leave in site-packages for the plugin: METADATA and entry_points.txt."""
    d = site / f"{name}-0.1.0.dist-info"
    d.mkdir(parents=True)
    (d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: 0.1.0\n")
    (d / "entry_points.txt").write_text(
        "".join(
            f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n" for group, eps in groups.items()
        )
    )


def forget_plugins() -> None:
    """Undo what loading the plugin did: modules, registry caches, env registrations."""
    for mod in [m for m in sys.modules if m.split(".")[0] == "agentsim_demo_plugin"]:
        del sys.modules[mod]
    for short in [n for n in envs.ENVS if n not in PROJECT_ENVS]:
        ENV_REGISTRY.remove(short)
    for registry in (BRAIN_REGISTRY, MEMORY_REGISTRY):
        for name in [n for n, spec in registry.loaded().items() if spec.where.startswith("agentsim_")]:
            registry.remove(name)
        registry.refresh()


@pytest.fixture
def visible(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A site folder put on sys.path for one test; everything loaded from it is forgotten afterwards."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    yield site
    monkeypatch.undo()
    forget_plugins()


@pytest.fixture(params=["dist-info", "pip-install"])
def plugin(request: pytest.FixtureRequest, visible: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "dist-info":
        write_dist_info(visible, _entry_points())
        monkeypatch.syspath_prepend(str(PLUGIN_SRC))  # the package's code, as an editable install would
    else:
        src = shutil.copytree(PLUGIN_SRC, tmp_path / "src")  # the build writes egg-info next to the sources
        res = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--no-deps",
                "--no-build-isolation",
                "--no-index",
                "--target",
                str(visible),
                str(src),
            ],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert res.returncode == 0, res.stderr[-2000:]
        assert list(visible.glob("agentsim_demo_plugin-*.dist-info/entry_points.txt"))
    load_env_plugins()
    return request.param


# ------------------------------------------------------------------------------------ registries
def test_unknown_names_list_the_known_ones():
    with pytest.raises(ValueError, match="unknown brain 'gpt5'; valid brains: local, openai, scripted"):
        make_brain("gpt5")
    with pytest.raises(
        ValueError, match="unknown memory 'vector'; valid: episodic, facts, reflective, summary, working"
    ):
        make_memory("working+vector")
    assert env_id("webshop") == "agentsim/WebShop-v0" and env_id("agentsim/FaultTree-v0") == "agentsim/FaultTree-v0"
    assert env_names()[:5] == ["babyai", "coding", "faulttree", "textcraft", "webshop"]


def test_the_embedded_brains_defaults_are_written_once() -> None:
    """`LocalBrain`'s options model holds brain=local's defaults; the class takes the same options with the same
    defaults, but for the two the library keeps for direct use (argmax, the base model)."""
    import inspect

    from agents.brains.local import LocalBrain, LocalBrainOptions

    params = {k: p.default for k, p in inspect.signature(LocalBrain).parameters.items()}
    preset = LocalBrainOptions().model_dump()
    assert set(params) == set(preset)
    assert {k for k in preset if preset[k] != params[k]} == {"temperature", "adapter"}
    assert BRAIN_REGISTRY.get("local").option_defaults() == preset


def test_plugins_are_used_by_name(plugin: str):
    assert brain_names() == ["local", "openai", "scripted", "first"]
    assert memory_names() == ["episodic", "facts", "reflective", "summary", "working", "notes"]
    assert "counter" in env_names() and envs.ENVS["counter"] == (
        "agentsim/counter-v0",
        "agentsim_demo_plugin.env:CounterEnv",
    )

    # facts: the env's and the memory's from their decorators, the undecorated brain's the defaults
    assert envs.MAX_EPISODE_STEPS["counter"] == 12 == gym.spec("agentsim/counter-v0").max_episode_steps
    assert carries_state("working+notes") and not in_process("first")

    brain = make_brain("first", prefer="stop")
    assert isinstance(brain, ChoosingBrain) and brain.name == "first" and not writes_text(brain)
    with pytest.raises(TypeError):
        make_brain("first", temperature=0.5)  # a plugin's options are its own

    mem = make_memory("working+notes", notes={"max_notes": 2})
    assert isinstance(mem, CompositeMemory) and isinstance(mem.part("notes"), Memory)
    with pytest.raises(ValueError, match="invalid options for notes memory"):
        make_memory("notes", colour="red")

    env = gym.make(env_id("counter"))
    assert type(env.unwrapped).__name__ == "CounterEnv"
    check_text_env(env)  # the library's contract checker covers plugin envs too

    # the plugin env's expert (via the scripted brain) solves it; the memory records the episode
    notes = make_memory("notes", max_notes=3)
    rec = run_episode(env, Agent(make_brain("scripted"), memory=notes), seed=1, max_steps=10)
    assert rec.outcome.success and rec.stats.invalid_actions == 0
    assert 0 < len(notes.save_state()["notes"]) <= 3
    # the plugin brain picks by its own rule
    rec = run_episode(gym.make("agentsim/counter-v0"), Agent(brain), seed=1, max_steps=10)
    assert [s.action for s in rec.steps] == ["stop[]"] and rec.brain == "first"


def test_memory_gets_the_brain_only_if_it_writes_text(plugin: str):
    text_brain = OpenAIBrain(base_url="http://127.0.0.1:9/v1")
    notes = MemoryConfig(name="notes")
    assert build_memory(notes, text_brain).brain is text_brain  # type: ignore[union-attr]
    assert build_memory(notes, ScriptedBrain()).brain is None  # type: ignore[union-attr]


def test_broken_and_shadowing_plugins_are_named(
    visible: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    monkeypatch.syspath_prepend(str(PLUGIN_SRC))
    write_dist_info(
        visible,
        {
            "agentsim.brains": {
                "broken": "agentsim_demo_plugin.missing:Brain",
                "local": "agentsim_demo_plugin.brain:FirstChoiceBrain",
            },
            "agentsim.envs": {"webshop": "agentsim_demo_plugin.env:CounterEnv"},
        },
        name="agentsim_bad_plugin",
    )
    with caplog.at_level(logging.WARNING):
        BRAIN_REGISTRY.refresh()
        assert load_env_plugins() == {}
    assert "brain plugin 'local' from agentsim-bad-plugin 0.1.0 ignored: the name is built in" in caplog.text
    assert "env plugin 'webshop'" in caplog.text and envs.ENVS["webshop"] == PROJECT_ENVS["webshop"]
    assert "broken" in brain_names()
    with pytest.raises(
        PluginError,
        match=r"brain plugin 'broken' \(agentsim_demo_plugin.missing:Brain, from "
        r"agentsim-bad-plugin 0.1.0\) failed to load: ModuleNotFoundError",
    ):
        make_brain("broken")


# ------------------------------------------------------------------------------------ capabilities
def test_brains_declare_capabilities_as_protocols():
    scripted = ScriptedBrain()
    assert isinstance(scripted, Brain) and isinstance(scripted, AsyncChoosingBrain)
    assert isinstance(scripted, EnvBoundBrain) and isinstance(scripted, ForkableBrain)
    assert not isinstance(scripted, CheckableBrain) and not writes_text(scripted)
    remote = OpenAIBrain(base_url="http://127.0.0.1:9/v1")
    assert isinstance(remote, Brain) and isinstance(remote, CheckableBrain) and writes_text(remote)
    assert not isinstance(remote, ChoosingBrain) and not isinstance(remote, EnvBoundBrain)
    assert not isinstance(remote, ForkableBrain)


def test_remote_env_declares_its_async_abilities():
    env = RemoteEnv(url="http://127.0.0.1:9", env="webshop")  # no request until reset
    assert isinstance(env, AsyncEnv) and isinstance(env, AsyncClosable)
    assert isinstance(env, ServesEnvs) and isinstance(env, HasAsyncExpert)
    plain = gym.make("agentsim-test/Corridor-v0")
    assert not isinstance(plain, AsyncEnv) and not isinstance(plain, ServesEnvs)


def test_the_cli_uses_a_plugins_parts_by_name(visible: Path, tmp_path: Path) -> None:
    """`python -m agents.run env=counter brain=first memory=notes`: presets, step limit and facts from the plugin."""
    import json
    import os

    write_dist_info(visible, _entry_points())
    out = tmp_path / "run"
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(visible), str(PLUGIN_SRC), str(root)])}
    args = ["env=counter", "brain=first", "brain.prefer=inc", "memory=notes", "episodes=2", f"out={out}"]
    res = subprocess.run(
        [sys.executable, "-m", "agents.run", *args], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr[-2000:]
    manifest = json.loads((out / "collect.json").read_text())["config"]
    assert manifest["env"]["max_steps"] == 12 and manifest["env"]["id"] == "agentsim/counter-v0"
    # "always inc" never stops: every episode is cut at the plugin env's registered step limit
    eps = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    assert [len(e["steps"]) for e in eps] == [12, 12] and all(e["outcome"]["truncated"] for e in eps)
    assert (out / "memory_state.json").exists()  # notes carries its state: the plugin's decorator says so
