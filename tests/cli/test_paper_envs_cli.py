"""TextCraft and BabyAI through the three command lines users run: `agents.run`, `agents.collect` and `prm.search`.

Each is the real CLI in a subprocess with the scripted expert (the LLM paths are the same code, measured in
bench/paper_envs.py); what they write is read back through the project's trajectory store."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agents.trajectories.store import TRAJECTORIES, TrajectoryStore

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, f"{' '.join(args)} exited {done.returncode}:\n{done.stderr[-2000:]}"


def episodes(folder: Path):
    return list(TrajectoryStore(folder / TRAJECTORIES).read(strict=True))


@pytest.mark.parametrize("env", ["textcraft", "babyai"])
def test_run_collect_and_search_work_on_the_paper_envs(env: str, tmp_path: Path) -> None:
    cli("agents.run", f"env={env}", "brain=scripted", "episodes=2", "env.kwargs.split=eval", f"out={tmp_path / 'run'}")
    ran = episodes(tmp_path / "run")
    assert len(ran) == 2 and all(ep.env == env and ep.steps for ep in ran)
    assert any(ep.outcome.success for ep in ran)  # the expert solves these eval tasks

    cli("agents.collect", f"env={env}", "brain=scripted", "episodes=3", "seed=7", f"out={tmp_path / 'collect'}")
    collected = episodes(tmp_path / "collect")
    assert sorted(ep.seed for ep in collected) == [7, 8, 9]

    cli(
        "prm.search",
        f"env={env}",
        "strategy=vote",
        "m=3",
        "episodes=1",
        "brain=scripted",
        "brain.epsilon=0.5",
        f"out={tmp_path / 'search'}",
    )
    [searched] = episodes(tmp_path / "search")
    assert searched.meta["search"]["strategy"] == "rerank" and searched.meta["search"]["samples"] >= len(searched.steps)
