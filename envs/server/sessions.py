"""Live env sessions: a hard cap, idle eviction and explicit close, so memory stays bounded under RL load.

All bookkeeping happens on the event loop (no locks needed for the tables); env code runs in
worker threads, one call at a time per session (`Session.lock`). Creation reserves a slot first,
so concurrent creates cannot overshoot the cap while slow constructors run.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

log = logging.getLogger(__name__)


class SessionNotFound(LookupError):
    """No such session (closed, evicted after idle, or never existed): 404."""

    pass


class ServerFull(RuntimeError):
    """Every session slot is taken: 503 with Retry-After."""

    pass


class NotReset(RuntimeError):
    """A step or observation before the first reset: 409."""

    pass


@dataclass
class Session:
    """One client's env instance and its bookkeeping (idle time, steps, episodes)."""

    id: str
    idx: int  # small integer alias (AgentGym clients address envs by int)
    env_name: str
    env_id: str
    kwargs: dict[str, Any]
    env: gym.Env
    created_at: float = field(default_factory=time.time)
    last_used: float = field(default_factory=time.monotonic)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    steps: int = 0
    episodes: int = 0
    observation: str | None = None  # None until the first reset
    info: dict[str, Any] = field(default_factory=dict)

    def touch(self) -> None:
        """Mark the session used now (for the idle reaper)."""
        self.last_used = time.monotonic()

    def require_reset(self) -> None:
        """Raise NotReset unless the env has been reset."""
        if self.observation is None:
            raise NotReset(f"session {self.id} has not been reset yet; call reset first")


class SessionManager:
    """The live sessions, capped, with idle eviction and AgentGym's integer aliases."""

    def __init__(self, max_sessions: int, idle_timeout_s: float) -> None:
        self.max_sessions, self.idle_timeout_s = max_sessions, idle_timeout_s
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._by_idx: dict[int, str] = {}
        self._next_idx = 0
        self._pending = 0
        self._gone: deque[str] = deque(maxlen=4096)  # recently evicted ids, to say why a lookup failed
        self.created = self.closed = self.evicted = 0

    def __len__(self) -> int:
        return len(self._sessions)

    def sessions(self) -> list[Session]:
        """Every live session."""
        return list(self._sessions.values())

    def reserve(self) -> None:
        """Claim a slot for a session about to be built; `ServerFull` if there is none."""
        if len(self._sessions) + self._pending >= self.max_sessions:
            raise ServerFull(
                f"server is full: {len(self._sessions)} sessions open (max {self.max_sessions}); "
                f"close sessions you no longer need, or retry later (idle sessions are closed after "
                f"{self.idle_timeout_s:g} s)"
            )
        self._pending += 1

    def release(self) -> None:
        """Give back a slot reserved for a create that failed."""
        self._pending -= 1

    def add(self, env_name: str, env_id: str, kwargs: dict[str, Any], env: gym.Env) -> Session:
        """Register a built env in a slot taken by `reserve()`."""
        self._pending -= 1
        sid = secrets.token_urlsafe(12)
        idx = self._next_idx
        self._next_idx += 1
        s = Session(id=sid, idx=idx, env_name=env_name, env_id=env_id, kwargs=kwargs, env=env)
        self._sessions[sid] = s
        self._by_idx[idx] = sid
        self.created += 1
        return s

    def get(self, sid: str) -> Session:
        """The session with this id (touched), or SessionNotFound saying why it is gone."""
        s = self._sessions.get(sid)
        if s is None:
            why = (
                f"it was closed after {self.idle_timeout_s:g} s idle"
                if sid in self._gone
                else "it was closed, never existed, or the server restarted"
            )
            raise SessionNotFound(f"unknown session {sid!r}: {why}; create a new one")
        s.touch()
        return s

    def get_idx(self, idx: int) -> Session:
        """The session behind an AgentGym integer alias."""
        sid = self._by_idx.get(idx)
        if sid is None:
            raise SessionNotFound(f"unknown env_idx {idx}: it was closed, evicted after idle, or never created")
        return self.get(sid)

    def pop(self, sid: str) -> Session:
        """Remove a session (its env is closed by the caller)."""
        s = self._sessions.pop(sid, None)
        if s is None:
            raise SessionNotFound(f"unknown session {sid!r}: already closed, evicted, or never created")
        self._by_idx.pop(s.idx, None)
        self.closed += 1
        return s

    def pop_idle(self, now: float | None = None) -> list[Session]:
        """Remove and return sessions idle longer than the timeout (and not busy)."""
        now = time.monotonic() if now is None else now
        idle = [s for s in self._sessions.values() if now - s.last_used > self.idle_timeout_s and not s.lock.locked()]
        for s in idle:
            self._sessions.pop(s.id, None)
            self._by_idx.pop(s.idx, None)
            self._gone.append(s.id)
        self.evicted += len(idle)
        return idle

    def pop_all(self) -> list[Session]:
        """Remove every session (server shutdown)."""
        out = list(self._sessions.values())
        self._sessions.clear()
        self._by_idx.clear()
        return out


def close_env(env: gym.Env) -> None:
    """Close an env, logging (not raising) a failure: a broken close must not leak the slot."""
    try:
        env.close()
    except Exception:  # noqa: BLE001 - any env may fail to close; the session is gone either way
        log.exception("closing env %r failed", env)
