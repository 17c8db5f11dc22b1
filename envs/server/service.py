"""Session operations shared by the native and the AgentGym-compatible routes.

Env code (constructors, reset, step, close) runs in a bounded pool of worker threads so a slow
env never stalls the event loop (health checks and other sessions stay responsive); a session's
calls are serialised by its lock, so one client pipelining requests cannot corrupt its env.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import anyio
from anyio import to_thread

from envs.contract import HasExpert
from envs.server.catalog import BadEnvArguments, EnvCatalog
from envs.server.config import ALLOW_CODING_FLAG, CODING_ENV, ServerConfig
from envs.server.sessions import Session, SessionManager, close_env
from envs.util import to_jsonable
from envs.webshop.resources import configure as configure_shops

log = logging.getLogger(__name__)


class BadResetArguments(ValueError):
    """A reset's seed or options are invalid for this env (422)."""

    pass


class NoExpert(RuntimeError):
    """The env has no scripted expert (409)."""

    pass


class ActionTooLong(ValueError):
    """An action longer than the transport limit (422)."""

    pass


class EnvNotServed(PermissionError):
    """An env this server knows but the operator did not enable (403; the message names the flag)."""

    pass


class EnvService:
    """The server's work, HTTP-free: sessions, env construction and env calls on worker threads."""

    def __init__(self, cfg: ServerConfig) -> None:
        self.cfg = cfg
        self.catalog = EnvCatalog.build(
            cfg.extra_envs, cfg.env_kwargs, cfg.imports, cfg.client_kwargs, cfg.max_num_products
        )
        configure_shops(int(cfg.catalog_budget_mb * 2**20), int(cfg.disk_budget_mb * 2**20))
        self.sessions = SessionManager(cfg.max_sessions, cfg.idle_timeout_s)
        self.started = time.monotonic()
        self._limiter: anyio.CapacityLimiter | None = None
        self._evictor: asyncio.Task | None = None

    async def _run(self, fn: Any, *args: Any) -> Any:
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.cfg.env_threads)
        return await to_thread.run_sync(fn, *args, limiter=self._limiter)

    # -- lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        """Start the idle reaper and preload the envs the operator asked for."""
        for name in self.cfg.preload:
            t0 = time.perf_counter()
            _, env_id, kwargs, env = await self._run(self.catalog.make, name, {}, True)
            await self._run(close_env, env)
            log.info("preloaded %s (%s, kwargs %s) in %.1f s", name, env_id, kwargs, time.perf_counter() - t0)
        self._evictor = asyncio.create_task(self._evict_forever())

    async def stop(self) -> None:
        """Stop the reaper and close every session."""
        if self._evictor is not None:
            self._evictor.cancel()
        for s in self.sessions.pop_all():
            await self._run(close_env, s.env)

    async def _evict_forever(self) -> None:
        period = max(0.05, min(self.cfg.idle_timeout_s / 4, 5.0))
        while True:
            await asyncio.sleep(period)
            for s in self.sessions.pop_idle():
                log.info("session %s (%s) closed after %.0f s idle", s.id, s.env_name, self.cfg.idle_timeout_s)
                await self._run(close_env, s.env)

    # -- operations -----------------------------------------------------------------------
    def servable(self) -> dict[str, str]:
        """Short name -> gymnasium id of the envs a client may open here (the coding env only when allowed)."""
        return {n: i for n, i in self.catalog.names.items() if n != CODING_ENV or self.cfg.allow_coding}

    def _check_served(self, env: str) -> None:
        name, _ = self.catalog.resolve(env)
        if name not in self.servable():
            raise EnvNotServed(
                f"env {name!r} is not served here: it gives the client a shell in a sandbox, so the operator must "
                f"start the server with {ALLOW_CODING_FLAG}"
            )

    def _check_backend(self, kwargs: dict[str, Any]) -> None:
        """A coding session whose sandbox backend cannot run here is a 422 now, not a 500 at its first reset."""
        from envs.coding.sandbox import available_backends, unavailable_reason

        backend = str(kwargs.get("backend") or self.catalog.defaults.get(CODING_ENV, {}).get("backend") or "bwrap")
        why = unavailable_reason(backend) if backend in ("bwrap", "docker") else None
        if why is not None:
            raise BadEnvArguments(
                f"kwarg 'backend': the sandbox backend {backend!r} does not work on this server ({why}); "
                f"backends that work here: {', '.join(available_backends()) or 'none'}"
            )

    async def create(self, env: str, kwargs: dict[str, Any]) -> Session:
        """Open a session of `env` with a client's kwargs (validated before a slot is taken)."""
        self._check_served(env)  # the coding env refused before its kwargs are even looked at
        name, _, kwargs = self.catalog.client_kwargs(env, kwargs)  # unknown env / bad kwargs fail before a slot
        if name == CODING_ENV:
            await self._run(self._check_backend, kwargs)  # it may ask a Docker engine: not on the event loop
        self.sessions.reserve()
        try:
            name, env_id, merged, made = await self._run(self.catalog.make, env, kwargs, True)
        except BaseException:
            self.sessions.release()
            raise
        # a client sees the effective values of what a client may set, never the operator's data paths
        shown = {k: v for k, v in merged.items() if k in self.catalog.entries[name].allowed()}
        return self.sessions.add(name, env_id, shown, made)

    async def reset(self, s: Session, seed: int | None, options: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
        """Reset a session's env (on a worker thread); options validated per env."""
        try:
            options = self.catalog.reset_options(s.env_name, options)
        except ValueError as e:
            raise BadResetArguments(str(e)) from e
        async with s.lock:
            try:
                obs, info = await self._run(lambda: s.env.reset(seed=seed, options=options))
            except (ValueError, TypeError, KeyError, IndexError, OverflowError) as e:
                raise BadResetArguments(f"reset rejected by env {s.env_name!r}: {e}") from e
            s.observation, s.info = str(obs), to_jsonable(info)
            s.episodes += 1
            s.touch()
            return s.observation, s.info

    async def step(self, s: Session, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Step a session's env (on a worker thread)."""
        if len(action) > self.cfg.max_action_chars:
            raise ActionTooLong(
                f"action is {len(action):,} characters long; this server accepts at most "
                f"{self.cfg.max_action_chars:,} (server option --max-action-chars)"
            )
        async with s.lock:
            s.require_reset()
            obs, reward, terminated, truncated, info = await self._run(s.env.step, action)
            s.observation, s.info = str(obs), to_jsonable(info)
            s.steps += 1
            s.touch()
            r = float(reward)
            return s.observation, r, bool(terminated), bool(truncated), s.info

    async def expert_action(self, s: Session) -> str:
        """The session env's expert action, if it has an expert."""
        base = s.env.unwrapped
        if not isinstance(base, HasExpert):
            raise NoExpert(f"env {s.env_name!r} has no expert policy (expert_action())")
        async with s.lock:
            s.require_reset()
            return str(await self._run(base.expert_action))

    async def close(self, sid: str) -> None:
        """Close a session and its env."""
        s = self.sessions.pop(sid)
        async with s.lock:  # let an in-flight call finish before the env goes away
            await self._run(close_env, s.env)
