"""The Ray executor: episodes spread over `workers` Ray actors, records streamed back to the driver.

Each actor builds its brain once and runs up to `concurrency / workers` episodes at a time on its
own event loop. The driver keeps at most `concurrency` episodes in flight and appends every
finished record to the one store as soon as it arrives. A killed actor is restarted and its
in-flight episodes re-run (`max_restarts`, `max_task_retries`); only the driver writes, so a
re-run cannot duplicate a record. `ray_address=null` starts a local Ray; set it for a cluster.
"""

from __future__ import annotations

import logging
import math
import os
from pathlib import Path
from typing import Any

from agents.collect.sink import Sink
from agents.config import CollectConfig, ConfigError
from agents.trajectories.schema import EpisodeRecord

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[2]


class EpisodeActor:
    """Lives in a Ray worker process; returns JSON (cheap to ship, no pickled pydantic)."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        from agents.collect.worker import EpisodeWorker
        from agents.resolve import resolve

        logging.basicConfig(level=logging.WARNING)
        # the driver's resolved config, which resolves to itself (the same adapter, limit and hash)
        self.worker = EpisodeWorker(resolve(CollectConfig.model_validate(cfg)))

    async def run(self, seed: int) -> tuple[bool, str, bool]:
        from agents.collect.worker import is_fatal

        try:
            rec = await self.worker.run(seed)
        except Exception as e:  # reported to the driver, which records it and goes on
            return False, f"{type(e).__name__}: {e}", is_fatal(e)
        return True, rec.model_dump_json(), False

    def pid(self) -> int:
        return os.getpid()


def _init_ray(cfg: CollectConfig) -> bool:
    """Connect to (or start) Ray; True if this call started it (and so must shut it down)."""
    try:
        import ray
    except ImportError as e:
        raise ConfigError("executor=ray needs Ray: pip install 'agentsim[ray]'") from e
    if ray.is_initialized():
        return False
    address = cfg.ray_address
    kwargs: dict[str, Any] = dict(
        include_dashboard=False, log_to_driver=cfg.log_level == "DEBUG", logging_level=logging.WARNING
    )
    if address:
        ray.init(address=address, **kwargs)
    else:  # a local Ray: make sure workers import this checkout
        workers = cfg.workers
        ray.init(
            num_cpus=max(os.cpu_count() or 1, workers), runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}}, **kwargs
        )
    return True


def run_ray(cfg: CollectConfig, seeds: list[int], concurrency: int, sink: Sink) -> None:
    """Run `seeds` on `cfg.workers` actors, at most `concurrency` in flight, results into `sink`."""
    import ray
    from ray.exceptions import RayError

    workers = cfg.workers
    started = _init_ray(cfg)
    per_actor = max(1, math.ceil(concurrency / workers))
    # ray's typed overloads of remote(**options) list task options only; max_concurrency is an actor option
    actor_cls = ray.remote(  # type: ignore[call-overload]
        num_cpus=cfg.ray_num_cpus, max_restarts=3, max_task_retries=3, max_concurrency=per_actor
    )(EpisodeActor)
    plain = cfg.model_dump(mode="json")  # ships as JSON-able data, validated again in the actor
    actors = [actor_cls.remote(plain) for _ in range(workers)]
    try:
        ray.get([a.pid.remote() for a in actors])  # surfaces a broken worker config once, up front
    except RayError as e:
        raise ConfigError(f"Ray workers could not start: {e}") from e
    pending = iter(seeds)
    in_flight: dict[Any, int] = {}
    turn = 0

    def submit() -> None:
        nonlocal turn
        while len(in_flight) < concurrency and not sink.stopping:
            seed = next(pending, None)
            if seed is None:
                return
            in_flight[actors[turn % workers].run.remote(seed)] = seed
            turn += 1

    try:
        submit()
        while in_flight:
            ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=1.0)
            for ref in ready:
                seed = in_flight.pop(ref)
                try:
                    ok, payload, fatal = ray.get(ref)
                except RayError as e:  # the actor died for good (retries used up)
                    sink.fail(seed, f"ray worker lost: {type(e).__name__}: {str(e)[:500]}")
                    continue
                if ok:
                    sink.done(EpisodeRecord.model_validate_json(payload))
                else:
                    sink.fail(seed, payload, fatal)
            submit()
    finally:
        for a in actors:
            ray.kill(a)
        if started:
            ray.shutdown()
