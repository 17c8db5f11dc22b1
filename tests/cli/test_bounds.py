"""Issue 43: sizes are bounded, and checked before anything is allocated (exit 2, with the bound and why).

Before: `societies.run agents=1000000000` allocated 21 GB until the OOM killer ended it, and
`agents=10000000`, `rounds=10**12` were accepted. Each bound here is just over and just at its limit.
"""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from agents.config import (
    MAX_CONCURRENCY,
    MAX_EPISODES,
    MAX_STEPS,
    SEED_MAX,
    CollectConfig,
    ConfigError,
    RunConfig,
    validate_config,
)
from societies.budget import check_memory, estimate
from societies.config import MAX_AGENTS, MAX_ROUNDS, MAX_TOWN_AGENTS, SocietyRunConfig
from tests.cli.test_validation import CORRIDOR

ROOT = Path(__file__).resolve().parents[2]
RUN = {"env": {"id": "x"}, "out": "o"}


def cli(module: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    "model,key,cap,why",
    [
        (RunConfig, {"episodes": MAX_EPISODES}, f"{MAX_EPISODES:,} episodes", "seed and id in memory"),
        (CollectConfig, {"episodes": MAX_EPISODES}, f"{MAX_EPISODES:,} episodes", "seed and id in memory"),
        (RunConfig, {"concurrency": MAX_CONCURRENCY}, f"{MAX_CONCURRENCY:,} episodes in flight", "executor=ray"),
        (CollectConfig, {"concurrency": MAX_CONCURRENCY}, f"{MAX_CONCURRENCY:,} episodes in flight", "executor=ray"),
        (RunConfig, {"max_steps": MAX_STEPS}, f"{MAX_STEPS:,} steps per episode", "one line of the store"),
        (RunConfig, {"env": {"id": "x", "max_steps": MAX_STEPS}}, f"{MAX_STEPS:,} steps per episode", "one line"),
    ],
)
def test_run_and_collect_bounds_say_the_bound_and_why(model, key, cap, why) -> None:
    validate_config(model, {**RUN, **key})  # at the bound: accepted
    (name, value), = key.items()  # fmt: skip
    over = {**value, "max_steps": value["max_steps"] + 1} if isinstance(value, dict) else value + 1
    with pytest.raises(ConfigError) as e:
        validate_config(model, {**RUN, name: over})
    assert f"at most {cap}" in str(e.value) and why in str(e.value), str(e.value)


def test_seeds_must_stay_in_range() -> None:
    with pytest.raises(ConfigError, match="over the largest seed"):
        validate_config(RunConfig, {**RUN, "seed": SEED_MAX, "episodes": 2})
    assert validate_config(RunConfig, {**RUN, "seed": SEED_MAX, "episodes": 1}).seed == SEED_MAX


@pytest.mark.parametrize(
    "keys,needle",
    [
        ({"agents": MAX_AGENTS + 1}, f"at most {MAX_AGENTS:,} agents"),
        ({"agents": 1_000_000_000}, "shard a larger population"),
        ({"rounds": MAX_ROUNDS + 1}, f"at most {MAX_ROUNDS:,} rounds"),
        ({"rounds": 10**12}, "resumed runs"),
        ({"scenario": "town", "agents": MAX_TOWN_AGENTS + 1}, f"at most {MAX_TOWN_AGENTS:,} agents in the town"),
    ],
)
def test_society_bounds_say_the_bound_and_why(keys, needle) -> None:
    with pytest.raises(ValueError, match=needle):
        SocietyRunConfig(out="o", **keys)


def test_society_memory_is_checked_against_what_is_available() -> None:
    cfg = SocietyRunConfig(out="o", agents=1_000_000, scenario="diffusion")
    est = estimate(cfg)
    assert est.terms["agents"] > 0 and est.terms["graph"] > 0
    assert check_memory(cfg, available=est.total) is not None  # exactly enough: runs
    with pytest.raises(ConfigError) as e:
        check_memory(cfg, available=est.total - 1)
    msg = str(e.value)
    assert "needs about" in msg and "is available" in msg and "agents= (now 1,000,000)" in msg


def test_society_estimate_grows_with_every_size() -> None:
    small = estimate(SocietyRunConfig(out="o", agents=1000, rounds=10)).total
    for keys in ({"agents": 100_000}, {"rounds": 100_000}, {"trajectory_agents": 1000, "agents": 2000}):
        assert estimate(SocietyRunConfig(out="o", **{"agents": 1000, "rounds": 10, **keys})).total > small, keys


def _address_space(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def test_a_hundred_million_agents_are_refused_before_allocating(tmp_path: Path) -> None:
    """Within the bound, but more than this machine holds: refused by the estimate, not by the OOM killer.

    The run gets 16 GB of address space (`ulimit -v`), which the budget counts, so it is refused on any
    machine, and a budget that failed would meet a MemoryError, not take a large machine's memory."""
    args = ["societies.run", "agents=100000000", "scenario=diffusion", f"out={tmp_path / 's'}", "plots=false"]
    res = subprocess.run(
        [sys.executable, "-m", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: _address_space(16 << 30),
    )
    assert res.returncode == 2, res.stderr[-2000:]
    assert "needs about" in res.stderr and "is available" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "s" / "events.sqlite").exists()  # nothing was started


@pytest.mark.parametrize(
    "module,override,needle",
    [
        ("agents.run", f"episodes={MAX_EPISODES + 1}", "at most 10,000,000 episodes"),
        ("agents.collect", "concurrency=5000", "at most 1,024 episodes in flight"),
        ("agents.run", "max_steps=100000", "at most 10,000 steps"),
    ],
)
def test_bounds_exit_2_on_the_command_line(tmp_path: Path, module: str, override: str, needle: str) -> None:
    res = cli(module, *CORRIDOR, override, f"out={tmp_path / 'r'}")
    assert res.returncode == 2 and needle in res.stderr and "Traceback" not in res.stderr, res.stderr[-2000:]
