"""Per-round checkpoints of a society run, written atomically, so `kill -9` loses no finished round.

A checkpoint is one pickle (`checkpoint.pkl` in the run folder) of everything the next round
depends on: the scenario's arrays and generator, the rule's generator, the metric series, the
trajectories in the making, the event-log buffer (Parquet), and each brain seat's agent and
memory state. It is written to a temporary file, fsynced, and renamed over the old one (a
rename is atomic on POSIX), then the folder is fsynced: a reader sees the old checkpoint or the
new one, never half of one. The SQLite event log is committed per round before the checkpoint;
on resume the rows after the checkpoint's round are deleted, so each round is there exactly once.
LLM calls are in the call cache (`societies.cache`), committed as they are made, so the round
that was cut short replays the calls it had already paid for.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

from envs.util import atomic_write_bytes, partial_files

CHECKPOINT = "checkpoint.pkl"
VERSION = 1


def save_checkpoint(out: Path, state: dict[str, Any]) -> None:
    """Write `state` atomically as `out/checkpoint.pkl`."""
    atomic_write_bytes(out / CHECKPOINT, pickle.dumps({"version": VERSION, **state}, protocol=pickle.HIGHEST_PROTOCOL))


def load_checkpoint(out: Path) -> dict[str, Any] | None:
    """The last checkpoint in `out`, or None if there is none (or it is from another version)."""
    path = out / CHECKPOINT
    if not path.exists():
        return None
    with open(path, "rb") as f:
        state = pickle.load(f)  # our own file, written by save_checkpoint
    if not isinstance(state, dict) or state.get("version") != VERSION:
        return None
    return state


def clear_checkpoint(out: Path) -> None:
    (out / CHECKPOINT).unlink(missing_ok=True)
    for leftover in partial_files(out / CHECKPOINT):
        leftover.unlink(missing_ok=True)
