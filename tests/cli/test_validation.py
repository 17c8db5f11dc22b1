"""Every entry point refuses nonsense before any episode starts (exit 2, the key named), and reports crashes (exit 1)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agents.config import CollectConfig, ConfigError, RunConfig, validate_config
from agents.perception import PerceptionConfig
from tests.toy_env import ENV_ID

ROOT = Path(__file__).resolve().parents[2]
CORRIDOR = [
    "env=gym",
    f"env.id={ENV_ID}",
    "env.entry_point=tests.toy_env:CorridorEnv",
    "env.name=corridor",
    "brain=scripted",
    "memory=none",
    "progress=false",
]


def cli(module: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.parametrize(
    "override,key",
    [
        ("agent.mode=bogus", "agent.mode"),
        ("seed=-1", "seed"),
        ("episodes=-1", "episodes"),
        ("episodes=0", "episodes"),
        ("episodes=1.5", "episodes"),
        ("max_steps=0", "max_steps"),
        ("max_steps=-3", "max_steps"),
        ("max_invalid=0", "max_invalid"),
        ("concurrency=0", "concurrency"),
        ("+epsiodes=3", "epsiodes"),
        ("memory=working", None),
        ("+memory.budget_tokens=100", "agent.memory_budget_tokens"),
        ("agent.perception.field_separator=' '", "agent.perception.field_separator"),
    ],
)
def test_run_refuses_bad_values_before_any_episode(tmp_path: Path, override: str, key: str | None) -> None:
    out = tmp_path / "r"
    res = cli("agents.run", *CORRIDOR, "episodes=2", override, f"out={out}")
    if key is None:  # a valid override, for contrast: the same command runs
        assert res.returncode == 0, res.stderr[-2000:]
        return
    assert res.returncode == 2, (override, res.returncode, res.stderr[-2000:])
    assert key in res.stderr and "Traceback" not in res.stderr, res.stderr[-2000:]
    assert not (out / "trajectories.jsonl").exists()  # nothing ran


def test_unknown_key_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigError) as e:
        validate_config(RunConfig, {"env": {"id": "x"}, "out": "o", "episods": 3})
    msg = str(e.value)
    assert "unknown key 'episods'" in msg and "episodes" in msg and "max_invalid" in msg


def test_a_blank_field_separator_is_refused_and_says_what_is_allowed() -> None:
    """Splitting on whitespace alone would cut every word onto its own line: refused, with the allowed values."""
    raw = {"env": {"id": "x"}, "out": "o", "agent": {"perception": {"field_separator": "  "}}}
    with pytest.raises(ConfigError) as e:
        validate_config(RunConfig, raw)
    assert "field_separator" in str(e.value) and "' [SEP] '" in str(e.value) and "empty for none" in str(e.value)
    with pytest.raises(ValueError, match="field_separator"):
        PerceptionConfig(field_separator="\t")
    ok = validate_config(RunConfig, {**raw, "agent": {"perception": {"field_separator": " | "}}})
    assert ok.agent.perception.field_separator == " | "


def test_collect_validates_the_same_way() -> None:
    with pytest.raises(ConfigError, match="executor"):
        validate_config(CollectConfig, {"env": {"id": "x"}, "out": "o", "executor": "spark"})
    with pytest.raises(ConfigError, match="workers"):
        validate_config(CollectConfig, {"env": {"id": "x"}, "out": "o", "workers": 0})


def test_a_run_whose_episodes_crash_exits_1_and_says_how_many(tmp_path: Path) -> None:
    out = tmp_path / "r"
    crashy = [a.replace("tests.toy_env:CorridorEnv", "tests.cli.crashy_env:CrashyCorridorEnv") for a in CORRIDOR]
    crashy = [a.replace(f"env.id={ENV_ID}", "env.id=agentsim-test/CrashyCorridor-v0") for a in crashy]
    res = cli("agents.run", *crashy, "episodes=4", f"out={out}")
    assert res.returncode == 1, res.stderr[-2000:]
    assert "2 episode(s) failed" in res.stderr and "simulated env crash" in res.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["episodes_completed"] == 2 and len(summary["failed_episodes"]) == 2
    assert [r for r in (out / "failed.jsonl").read_text().splitlines() if r]  # the failures are logged


def test_readme_kwargs_syntax_works_as_written(tmp_path: Path) -> None:
    res = cli(
        "agents.run",
        "env=webshop",
        "brain=scripted",
        "memory=none",
        "episodes=1",
        "progress=false",
        "env.kwargs.num_products=300",
        f"out={tmp_path / 'w'}",
    )
    assert res.returncode == 0, res.stderr[-2000:]
    summary = json.loads((tmp_path / "w" / "summary.json").read_text())
    assert summary["config"]["env"]["kwargs"] == {"num_products": 300}


def test_corrupt_manifest_names_the_file(tmp_path: Path) -> None:
    out = tmp_path / "c"
    args = ["agents.collect", *CORRIDOR, "episodes=2", f"out={out}"]
    assert cli(*args).returncode == 0
    (out / "collect.json").write_text("{not json")
    res = cli(*args[:-2], "episodes=3", f"out={out}")
    assert res.returncode == 2 and "collect.json is corrupt" in res.stderr and "Traceback" not in res.stderr
    assert len((out / "trajectories.jsonl").read_text().splitlines()) == 2  # nothing lost


@pytest.mark.parametrize(
    "state,words", [("[1, 2]", "not a memory state"), ('{"kind": "nonsense"}', "does not fit"), ("{oops", "is corrupt")]
)
def test_bad_memory_state_is_exit_2(tmp_path: Path, state: str, words: str) -> None:
    out = tmp_path / "m"
    args = [*[a for a in CORRIDOR if a != "memory=none"], "memory=reflective", f"out={out}"]
    assert cli("agents.run", *args, "episodes=1").returncode == 0
    (out / "memory_state.json").write_text(state)
    res = cli("agents.run", *args, "episodes=2", "resume=true")
    assert res.returncode == 2, res.stderr[-2000:]
    assert "memory_state.json" in res.stderr and words in res.stderr and "Traceback" not in res.stderr


def test_prm_train_accepts_one_path() -> None:
    from prm.config import TrainConfig

    cfg = validate_config(TrainConfig, {"data": "runs/ws", "out": "o"})
    assert cfg.data == ["runs/ws"]
    with pytest.raises(ConfigError) as e:
        validate_config(TrainConfig, {"data": "runs/ws", "out": "o", "epochs": 0})
    assert str(e.value).count("epochs") == 1
