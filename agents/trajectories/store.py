"""Append-only JSONL trajectory store: one episode a line, flushed and fsynced per episode.

A crash (even SIGKILL) loses at most the episode in flight: a torn last line is detected on
read, reported, and skipped; the next append first truncates it away so the file stays valid.
An episode id is one episode: a later line with an id already read (a file concatenated twice, a
hand-merged store) is skipped with a warning, so counts, summaries and resume see each episode once.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from agents.trajectories.schema import EpisodeRecord

TRAJECTORIES = "trajectories.jsonl"  # the store's file name inside a run folder


log = logging.getLogger(__name__)


class TrajectoryStore:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._repaired = False

    def _repair_tail(self) -> None:
        """Cut a torn final line (no trailing newline) left by a crash, so appends stay line-aligned."""
        if self._repaired or not self.path.exists():
            self._repaired = True
            return
        with open(self.path, "rb+") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            if size == 0:
                self._repaired = True
                return
            f.seek(size - 1)
            if f.read(1) != b"\n":
                # find the last newline; everything after it is the torn episode
                pos = size - 1
                chunk = 1 << 16
                cut = 0
                while pos > 0:
                    start = max(0, pos - chunk)
                    f.seek(start)
                    buf = f.read(pos - start)
                    idx = buf.rfind(b"\n")
                    if idx >= 0:
                        cut = start + idx + 1
                        break
                    pos = start
                log.warning(
                    "%s: dropping a torn last line (%d bytes) left by an interrupted run", self.path, size - cut
                )
                f.truncate(cut)
        self._repaired = True

    def append(self, episode: EpisodeRecord) -> None:
        self._repair_tail()
        line = episode.model_dump_json() + "\n"
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())

    def __iter__(self) -> Iterator[EpisodeRecord]:
        return self.read()

    def read(self, strict: bool = False) -> Iterator[EpisodeRecord]:
        """Yield valid episodes, each id once (the first line wins); skip (and log) a torn or invalid line,
        or a line repeating an id already read, unless `strict` (then either is a ValueError)."""
        if not self.path.exists():
            return
        seen: dict[str, int] = {}  # episode id -> the line it was first read from
        with open(self.path, encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    ep = EpisodeRecord.model_validate(json.loads(line))
                except (json.JSONDecodeError, ValidationError) as e:
                    msg = f"{self.path}:{lineno}: skipping an unreadable episode line ({type(e).__name__}: {str(e)[:200]})"
                    if strict:
                        raise ValueError(msg) from e
                    log.warning(msg)
                    continue
                first = seen.get(ep.episode_id)
                if first is not None:
                    msg = (
                        f"{self.path}:{lineno}: skipping a second line for episode {ep.episode_id!r} "
                        f"(first on line {first}); it is not counted"
                    )
                    if strict:
                        raise ValueError(msg)
                    log.warning(msg)
                    continue
                seen[ep.episode_id] = lineno
                yield ep

    def episode_ids(self) -> set[str]:
        return {ep.episode_id for ep in self.read()}

    def __len__(self) -> int:
        return sum(1 for _ in self.read())
