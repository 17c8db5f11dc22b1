"""The asyncio executor: `concurrency` lanes in one process, overlapping env steps and brain calls.

Lanes pull seeds from one shared iterator, so at most `concurrency` episodes are in memory and a
stop (fatal error) takes effect at the next episode boundary. SIGTERM or SIGINT stops the run at once:
every lane is cancelled, so each episode's env is closed (its sandbox and processes gone, its temporary
folders removed) before the run reports what it finished; a second signal kills the process outright.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

from agents.collect.sink import Sink
from agents.collect.worker import EpisodeWorker, is_fatal

log = logging.getLogger(__name__)
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


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

    loop = asyncio.get_running_loop()
    # an env that steps in threads (`steps_block`) needs one per lane: the default pool has min(32, cpus + 4)
    loop.set_default_executor(ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="env-step"))
    lanes = asyncio.gather(*(lane() for _ in range(concurrency)))
    installed: list[signal.Signals] = []

    def stop(sig: signal.Signals) -> None:
        sink.stop(f"stopped by {sig.name}: the episodes in flight were cancelled and their sandboxes closed")
        for s in installed:  # a second signal gets the default: the process dies at once
            loop.remove_signal_handler(s)
        lanes.cancel()

    for sig in STOP_SIGNALS:
        try:
            loop.add_signal_handler(sig, stop, sig)
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals here
            pass
    try:
        await lanes
    except asyncio.CancelledError:
        if not sink.stopping:
            raise  # cancelled from outside, not by a signal: not ours to swallow
    finally:
        for sig in installed:
            with contextlib.suppress(Exception):
                loop.remove_signal_handler(sig)
