"""The run folders under the root the UI was given, and the only files of theirs it reads.

A run is named by its path relative to the root (`webshop/scripted`). Names are checked before any
file is opened: no absolute paths, no `..`, no hidden parts, and the resolved folder (symlinks
followed) must still lie inside the resolved root, so a link pointing out of the runs folder is
refused like a `..`. Only the files the project writes are read, by fixed names.
"""

from __future__ import annotations

import json
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.ui.index import EpisodeIndex

TRAJECTORIES = "trajectories.jsonl"
SUMMARY = "summary.json"
METRICS = "metrics.json"  # a society's metric series
EVENTS = "events.sqlite"  # a society's moves
REPORT = "report.json"  # a society scenario's own account (the town)
INTERVIEWS = "interviews.jsonl"  # a society's interview answers (societies.interviews)
MANIFEST = "collect.json"  # written by agents.run / agents.collect before the first episode
RUN_MARKERS = (TRAJECTORIES, SUMMARY, METRICS, EVENTS, MANIFEST)
MAX_DEPTH = 4  # how deep under the root runs are looked for
MAX_RUNS = 2000
MAX_JSON_BYTES = 20 << 20  # summary / metrics / report files larger than this are not parsed
NAME_PART = re.compile(r"^[^./\\\x00][^/\\\x00]*$")  # no empty, hidden, `.`/`..` parts; no backslash or NUL


BACKGROUND_BYTES = 32 << 20  # more than this to index: do it in a thread and answer "indexing…" meanwhile


class Indexing(Exception):
    """A big store is being indexed in the background (answered 202 with the progress; the page reloads)."""

    def __init__(self, run: str, done: int, total: int) -> None:
        self.run, self.done, self.total = run, done, total
        super().__init__(
            f"indexing run {run!r}: {done / 1e6:,.1f} of {total / 1e6:,.1f} MB of its store read "
            f"({100 * done / max(total, 1):.0f}%); this is done once, and this page reloads until then"
        )


class NotFound(Exception):
    """A run, episode or round the request named does not exist here (answered 404 with this message)."""


@dataclass(frozen=True)
class Run:
    """One run folder: its name under the root and what it holds."""

    name: str
    path: Path

    @property
    def store(self) -> Path:
        return self.path / TRAJECTORIES

    @property
    def is_society(self) -> bool:
        return (self.path / METRICS).is_file() or (self.path / EVENTS).is_file()

    def json_file(self, name: str) -> dict[str, Any] | None:
        """One of the run's JSON files (by its fixed name), or None when absent, too big or unreadable."""
        p = self.path / name
        try:
            if not p.is_file() or p.stat().st_size > MAX_JSON_BYTES or not _inside(p, self.path):
                return None
            data = json.loads(p.read_text(encoding="utf-8", errors="replace"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def file(self, name: str) -> Path | None:
        """A fixed-name file of the run that exists and does not lead out of it."""
        p = self.path / name
        return p if p.is_file() and _inside(p, self.path) else None


def _inside(p: Path, root: Path) -> bool:
    try:
        p.resolve().relative_to(root.resolve())
    except (ValueError, OSError):
        return False
    return True


class RunsRoot:
    """The runs folder: finds runs, resolves names safely, and keeps one index per store."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise NotADirectoryError(f"{root} is not a folder (give the folder that holds your runs, e.g. runs/)")
        self._indexes: dict[Path, EpisodeIndex] = {}
        self._lock = threading.Lock()

    def runs(self) -> list[Run]:
        """Every run folder under the root (a folder holding a store, a summary or a society's metrics)."""
        found: list[Run] = []
        for dirpath, dirnames, filenames in os.walk(self.root, followlinks=False):
            here = Path(dirpath)
            depth = len(here.relative_to(self.root).parts)
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and depth < MAX_DEPTH)
            if any(m in filenames for m in RUN_MARKERS):
                name = here.relative_to(self.root).as_posix()
                found.append(Run(name if name != "." else ".", here))
            if len(found) >= MAX_RUNS:
                break
        return found

    def run(self, name: str | None) -> Run:
        """The run called `name`, or NotFound saying why the name is not one."""
        if not name:
            raise NotFound("no run named: pass ?run=<folder under the runs root>, as listed on the front page")
        if len(name) > 500:
            raise NotFound("run name too long (at most 500 characters)")
        if name == ".":
            parts: list[str] = []
        else:
            parts = name.split("/")
            bad = next((p for p in parts if not NAME_PART.match(p)), None)
            if bad is not None:
                raise NotFound(
                    f"{name!r} is not a run name: a path under the runs folder with '/' between parts "
                    "(no '..', no absolute paths, no hidden folders, no backslashes)"
                )
        path = self.root.joinpath(*parts)
        if not _inside(path, self.root):
            raise NotFound(f"{name!r} leads outside the runs folder; only runs inside it are served")
        if not path.is_dir() or not any((path / m).is_file() for m in RUN_MARKERS):
            raise NotFound(f"no run {name!r} under the runs folder (a run holds {', '.join(RUN_MARKERS)})")
        return Run(name, path)

    def index(self, run: Run) -> EpisodeIndex:
        """The run's episode index, caught up with its store."""
        if run.file(TRAJECTORIES) is None:
            raise NotFound(f"run {run.name!r} has no {TRAJECTORIES} (nothing recorded yet)")
        with self._lock:
            idx = self._indexes.get(run.path)
            if idx is None:
                idx = self._indexes[run.path] = EpisodeIndex(run.store)
        if not idx.building and idx.pending_bytes() > BACKGROUND_BYTES:
            idx.refresh_in_background()
        if idx.building:
            raise Indexing(run.name, *idx.progress)
        idx.refresh()
        return idx
