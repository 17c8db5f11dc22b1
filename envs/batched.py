"""EnvGroup: N copies of one env stepped together, for group-based RL (GRPO, GiGPO).

A group is N rollouts of the same task: every copy is reset with the same seed and options, so
they start in the same state, then each takes its own action per step. Each step's `info` carries
`state_key`, a hashable key of the copy's state after the step, so a trainer can group equal
states across the group's rollouts (GiGPO's anchor states) with `EnvGroup.groups()` or its own
dict. Where the key comes from, best first:

1. the env's own `state_key()` (`envs.capabilities.HasStateKey`: TextCraft, BabyAI): equal for
   equal states however reached;
2. a digest of the env's `snapshot()` (any `Snapshottable` env): equal snapshots give equal keys,
   but the same state reached by another path may pickle differently (dict order), so such an
   env groups less than it could, never wrongly;
3. otherwise the observation and the listed actions (what the agent can tell apart).

Copies are stepped one after another in this process: the project's envs are pure Python, so
threads would not run them faster. Any registered env works (a short name or a gymnasium id).
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Hashable, Sequence
from typing import Any

import gymnasium as gym

from envs.capabilities import HasStateKey
from envs.contract import Snapshottable
from envs.registry import env_id

Step = tuple[Any, float, bool, bool, dict[str, Any]]


def state_key(env: gym.Env, obs: Any, info: dict[str, Any]) -> Hashable:
    """The hashable key of `env`'s current state (see the module docstring for where it comes from)."""
    base = env.unwrapped
    if isinstance(base, HasStateKey):
        return ("env", base.state_key())
    if isinstance(base, Snapshottable):
        digest = hashlib.sha256(pickle.dumps(base.snapshot(), protocol=5)).hexdigest()
        return ("snapshot", digest)
    return ("observation", str(obs), tuple(info.get("available_actions") or ()))


class EnvGroup:
    """N copies of one env: reset together on one task, stepped together with one action each."""

    def __init__(self, env: str, n: int, **kwargs: Any) -> None:
        if n < 1:
            raise ValueError(f"a group needs at least one copy, got n={n}")
        self.env_id = env_id(env)
        self.envs = [gym.make(self.env_id, **kwargs) for _ in range(n)]
        self.done = [False] * n
        self.keys: list[Hashable] = [None] * n

    def __len__(self) -> int:
        return len(self.envs)

    def reset(self, seed: int, options: dict[str, Any] | None = None) -> list[tuple[Any, dict[str, Any]]]:
        """Reset every copy to the same task (same seed and options); each info gets its `state_key`."""
        out = []
        for i, env in enumerate(self.envs):
            obs, info = env.reset(seed=seed, options=options)
            info["state_key"] = self.keys[i] = state_key(env, obs, info)
            out.append((obs, info))
        self.done = [False] * len(self.envs)
        return out

    def step(self, actions: Sequence[str | None]) -> list[Step | None]:
        """Step copy i with `actions[i]`; `None` leaves a copy as it is (e.g. one whose episode ended) and gives None.

        A copy's step after its episode ended is passed to the env, which refuses it (the contract)."""
        if len(actions) != len(self.envs):
            raise ValueError(f"expected one action per copy ({len(self.envs)}), got {len(actions)}")
        out: list[Step | None] = []
        for i, (env, action) in enumerate(zip(self.envs, actions)):
            if action is None:
                out.append(None)
                continue
            obs, reward, terminated, truncated, info = env.step(action)
            info["state_key"] = self.keys[i] = state_key(env, obs, info)
            self.done[i] = self.done[i] or bool(terminated or truncated)
            out.append((obs, float(reward), bool(terminated), bool(truncated), info))
        return out

    def groups(self) -> dict[Hashable, list[int]]:
        """The copies' current states grouped: state key -> the copies in that state."""
        grouped: dict[Hashable, list[int]] = {}
        for i, key in enumerate(self.keys):
            grouped.setdefault(key, []).append(i)
        return grouped

    @property
    def all_done(self) -> bool:
        return all(self.done)

    def close(self) -> None:
        for env in self.envs:
            env.close()

    def __enter__(self) -> EnvGroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
