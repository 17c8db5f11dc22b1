"""Run `python -m agents.collect` as a user types it, against the corridor env or an env server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from agents.trajectories import TrajectoryStore
from tests.toy_env import ENV_ID

ROOT = Path(__file__).resolve().parents[2]
CORRIDOR = ["env=gym", f"env.id={ENV_ID}", "env.entry_point=tests.toy_env:CorridorEnv", "env.name=corridor"]
REMOTE_CORRIDOR = ["env=gym", f"env.id={ENV_ID}", "env.name=corridor"]  # the server registers it


def collect_cmd(out: Path, episodes: int, *extra: str, env: list[str] | None = None) -> list[str]:
    return [
        sys.executable,
        "-m",
        "agents.collect",
        *(env or CORRIDOR),
        "brain=scripted",
        "brain.epsilon=0.2",
        f"episodes={episodes}",
        f"out={out}",
        "progress=false",
        *extra,
    ]


def run_collect(
    out: Path, episodes: int, *extra: str, env: list[str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    return subprocess.run(
        collect_cmd(out, episodes, *extra, env=env), cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


def stored_ids(out: Path) -> list[str]:
    return [e.episode_id for e in TrajectoryStore(out / "trajectories.jsonl").read(strict=True)]


def summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())
