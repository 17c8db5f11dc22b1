"""The corridor env, except that it crashes at reset for odd seeds: a run whose episodes break mid-way."""

from __future__ import annotations

from typing import Any

from tests.toy_env import CorridorEnv


class CrashyCorridorEnv(CorridorEnv):
    """Raises at reset when the seed is odd (a bug in an env, not a user mistake)."""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        if seed is not None and seed % 2:
            raise RuntimeError(f"simulated env crash at seed {seed}")
        return super().reset(seed=seed, options=options)
