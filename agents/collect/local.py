"""The asyncio executor: `concurrency` lanes in one process, overlapping env steps and brain calls.

Lanes pull seeds from one shared iterator, so at most `concurrency` episodes are in memory and a
stop (fatal error) takes effect at the next episode boundary.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

from agents.collect.sink import Sink
from agents.collect.worker import EpisodeWorker, is_fatal

log = logging.getLogger(__name__)


async def run_local(worker: EpisodeWorker, seeds: Iterable[int], concurrency: int, sink: Sink) -> None:
    """Run `seeds` in `concurrency` lanes, delivering every result or failure to `sink`."""
    pending = iter(list(seeds))

    async def lane() -> None:
        for seed in pending:
            if sink.stopping:
                return
            try:
                rec = await worker.run(seed)
            except Exception as e:  # one broken episode must not sink the run
                log.debug("episode seed=%d failed", seed, exc_info=True)
                sink.fail(seed, f"{type(e).__name__}: {e}", fatal=is_fatal(e), exc=e)
            else:
                sink.done(rec)

    await asyncio.gather(*(lane() for _ in range(concurrency)))
