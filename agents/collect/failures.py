"""Failed episodes, kept out of the trajectory store: `failed.jsonl`, append-only, one failure a line.

A failed episode is not "done": the trajectory store holds only finished episodes (what trainers
read), and a rerun of the same command retries every seed that is not in it. This log keeps the
history of what went wrong (seed, error, when) so nothing fails silently.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from pydantic import BaseModel


class Failure(BaseModel):
    episode_id: str
    seed: int
    error: str
    fatal: bool = False
    time: float


class FailureLog:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def append(self, episode_id: str, seed: int, error: str, fatal: bool = False) -> Failure:
        f = Failure(episode_id=episode_id, seed=seed, error=error, fatal=fatal, time=time.time())
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(f.model_dump_json() + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        return f

    def read(self) -> list[Failure]:
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                out.append(Failure.model_validate(json.loads(line)))
            except (ValueError, TypeError):
                continue  # a torn last line from a killed run
        return out
