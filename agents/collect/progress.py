"""The collection's live view: episodes done, episodes/s, tokens/s, successes and failures."""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


class CollectProgress:
    def __init__(self, console: Console, total: int, title: str, enabled: bool = True) -> None:
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[eps]} ep/s"),
            TextColumn("{task.fields[tps]} tok/s"),
            TextColumn("ok {task.fields[ok]} · failed {task.fields[failed]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            disable=not enabled,
        )
        self._task = self._progress.add_task(title, total=total, eps="-", tps="-", ok=0, failed=0)
        self.t0 = time.perf_counter()
        self.episodes = self.successes = self.failed = self.tokens = 0

    def __enter__(self) -> CollectProgress:
        self._progress.__enter__()
        self.t0 = time.perf_counter()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._progress.__exit__(exc_type, exc, tb)

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def episode(self, tokens: int, success: bool) -> None:
        self.episodes += 1
        self.successes += int(success)
        self.tokens += tokens
        self._refresh()

    def failure(self) -> None:
        self.failed += 1
        self._refresh()

    def _refresh(self) -> None:
        dt = max(self.elapsed, 1e-9)
        self._progress.update(
            self._task,
            completed=self.episodes + self.failed,
            eps=f"{self.episodes / dt:.2f}",
            tps=f"{self.tokens / dt:,.0f}",
            ok=self.successes,
            failed=self.failed,
        )
