"""Large-scale, resumable rollout collection: `python -m agents.collect env=... brain=... episodes=N`.

`worker` (one episode from a config; shared with `agents.run`), `plan` (seeds, what is missing,
the run's manifest), `local` (asyncio executor), `ray_executor` (Ray actors), `sink` (the one
writer), `failures`, `progress`, `collector` (ties them together).
"""

from typing import Any

__all__ = ["CollectResult", "collect"]


def __getattr__(name: str) -> Any:  # lazy: `agents.runner` imports `agents.collect.worker` without the collector
    if name in __all__:
        from agents.collect import collector

        return getattr(collector, name)
    raise AttributeError(name)
