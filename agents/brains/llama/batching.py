"""Concurrent `achoose` calls gathered into batches, so one decode serves several agents.

Agents of one society round, or episodes of an async collection, call `achoose` at about the same time.
The first call waits `window_s` for others to join; calls arriving while a batch decodes form the next
one. A batch is served in a worker thread by the brain's own `serve` (its lock keeps llama.cpp single-
threaded); one bad call is retried alone so it fails only itself.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from agents.brains.base import BrainOutput, Message


@dataclass(frozen=True)
class ChooseRequest:
    """One `choose` call's arguments, queued for a batched decode."""

    messages: list[Message]
    candidates: list[str]
    temperature: float = 0.0
    prefix: str = ""
    seed: int | None = None


def _resolve(fut: asyncio.Future[BrainOutput], out: BrainOutput | None = None, error: Exception | None = None) -> None:
    """Answer a queued call on its own event loop (a cancelled caller is skipped)."""

    def answer() -> None:
        if fut.done():
            return
        if error is not None:
            fut.set_exception(error)
        else:
            fut.set_result(cast(BrainOutput, out))

    fut.get_loop().call_soon_threadsafe(answer)


class ChooseBatcher:
    """Queues `ChooseRequest`s and serves them in batches with `serve` (requests -> one answer each, in order)."""

    def __init__(self, serve: Callable[[list[ChooseRequest]], list[BrainOutput]], window_s: float) -> None:
        self.serve = serve
        self.window_s = window_s
        self._pending: list[tuple[ChooseRequest, asyncio.Future[BrainOutput]]] = []
        self._pending_lock = threading.Lock()
        self._flushing = False
        self.batches: list[int] = []  # requests per batched decode (the last 256), for benches and tests

    async def submit(self, req: ChooseRequest) -> BrainOutput:
        """Queue `req`; its answer once the batch it joins is served."""
        fut: asyncio.Future[BrainOutput] = asyncio.get_running_loop().create_future()
        with self._pending_lock:
            self._pending.append((req, fut))
            start, self._flushing = not self._flushing, True
        if start:
            asyncio.get_running_loop().create_task(self._flush())
        return await fut

    async def _flush(self) -> None:
        """Serve queued calls in batches until the queue is empty."""
        await asyncio.sleep(self.window_s)
        while True:
            with self._pending_lock:
                batch, self._pending = self._pending, []
                if not batch:
                    self._flushing = False
                    return
            self.batches = (self.batches + [len(batch)])[-256:]
            try:
                outs = await asyncio.to_thread(self.serve, [r for r, _ in batch])
            except Exception:  # one bad call must not fail the others: each is retried alone for its own answer
                for req, fut in batch:
                    try:
                        _resolve(fut, out=(await asyncio.to_thread(self.serve, [req]))[0])
                    except Exception as e:
                        _resolve(fut, error=e)
                continue
            for (_, fut), out in zip(batch, outs):
                _resolve(fut, out=out)
