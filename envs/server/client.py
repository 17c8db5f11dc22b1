"""`RemoteEnv`: a gymnasium env that lives in an env server, so agents use it exactly like a local one.

Sync (`reset`/`step`) over `httpx.Client`, async (`areset`/`astep`/`aclose`) over
`httpx.AsyncClient`; the episode loop picks the async pair when it runs under asyncio. The
session is created on the first reset and closed by `close()`. Failures are typed and say what
to do: `EnvServerUnavailable` (server down or not answering), `SessionLost` (closed, evicted or
the server restarted), `EnvServerFull` (still full after retrying), `RemoteEnvError` otherwise.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Generator
from typing import Any

import gymnasium as gym
import httpx
from gymnasium.envs.registration import EnvSpec

import envs
from envs.server import REMOTE_ENTRY_POINT
from envs.spaces import FreeText

Call = tuple[str, str, str, dict[str, Any]]  # (what, method, path, body) of one request
Reset = tuple[str, dict[str, Any]]
log = logging.getLogger(__name__)
TOKEN_ENV = "AGENTSIM_SERVER_TOKEN"


class RemoteEnvError(RuntimeError):
    """The env server answered with an error; the message is the server's."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class EnvServerUnavailable(RemoteEnvError):
    """The server cannot be reached or did not answer: nothing the episode can fix by itself."""


class SessionLost(RemoteEnvError):
    """The remote session is gone (closed, evicted after idle, or the server restarted)."""

    pass


class EnvServerFull(RemoteEnvError):
    """The server stayed full (503) for longer than the client's retry budget."""

    pass


def _detail(resp: httpx.Response) -> str:
    try:
        body = resp.json()
    except ValueError:
        return resp.text[:500]
    return str(body.get("detail", body)) if isinstance(body, dict) else str(body)[:500]


class RemoteEnv(gym.Env):
    """A Gymnasium env whose episodes run in an env server (`python -m envs.server`), with async twins."""

    metadata = {"render_modes": []}

    def __init__(
        self,
        url: str = "http://127.0.0.1:8000",
        env: str = "webshop",
        kwargs: dict[str, Any] | None = None,
        token: str | None = None,
        timeout_s: float = 60.0,
        full_retry_s: float = 30.0,
        max_observation_chars: int = 1_000_000,
        max_action_chars: int = 8192,
    ) -> None:
        self.url, self.env_name, self.env_kwargs = url.rstrip("/"), env, dict(kwargs or {})
        self.timeout_s, self.full_retry_s = timeout_s, full_retry_s
        token = token or os.environ.get(TOKEN_ENV)
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.observation_space = FreeText(max_observation_chars)
        self.action_space = FreeText(max_action_chars)
        self.session_id: str | None = None
        self._client: httpx.Client | None = None
        self._aclient: httpx.AsyncClient | None = None
        self._aloop: asyncio.AbstractEventLoop | None = None
        env_id = envs.ENVS[env][0] if env in envs.ENVS else (env if "/" in env else None)
        if env_id:  # records name the env behind the server, not the proxy
            self.spec = EnvSpec(id=env_id, entry_point=REMOTE_ENTRY_POINT, kwargs=self.env_kwargs)

    # -- transport --------------------------------------------------------------------------
    def _sync(self) -> httpx.Client:
        if self._client is None:
            self._client = httpx.Client(base_url=self.url, headers=self._headers, timeout=self.timeout_s)
        return self._client

    def _async(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._aclient is None or self._aloop is not loop:
            self._aclient = httpx.AsyncClient(base_url=self.url, headers=self._headers, timeout=self.timeout_s)
            self._aloop = loop
        return self._aclient

    def _unavailable(self, op: str, e: Exception) -> EnvServerUnavailable:
        kind = "did not answer in time" if isinstance(e, httpx.TimeoutException) else "is unreachable"
        return EnvServerUnavailable(
            f"env server {self.url} {kind} during {op} ({type(e).__name__}: {e}); "
            "is `python -m envs.server` running there?"
        )

    def _answer(self, op: str, resp: httpx.Response) -> Any:
        if resp.status_code < 300:
            return resp.json()
        detail = _detail(resp)
        if resp.status_code == 404 and op != "create":
            raise SessionLost(f"{op}: {detail}", 404)
        if resp.status_code == 503:
            raise EnvServerFull(f"{op}: {detail}", 503)
        if resp.status_code == 401:
            raise RemoteEnvError(f"{op}: {detail} (token: pass token=... or set ${TOKEN_ENV})", 401)
        raise RemoteEnvError(f"env server {self.url} refused {op} ({resp.status_code}): {detail}", resp.status_code)

    @staticmethod
    def _wait_or_raise(full: EnvServerFull, resp: httpx.Response, deadline: float) -> float:
        """A full server is retried after its Retry-After until `full_retry_s` has passed."""
        if time.monotonic() > deadline:
            raise full
        return float(resp.headers.get("retry-after", 1))

    def _call(self, op: str, method: str, path: str, body: dict | None = None) -> Any:
        deadline = time.monotonic() + self.full_retry_s
        while True:
            try:
                resp = self._sync().request(method, path, json=body)
            except httpx.TransportError as e:
                raise self._unavailable(op, e) from e
            try:
                return self._answer(op, resp)
            except EnvServerFull as full:
                time.sleep(self._wait_or_raise(full, resp, deadline))

    async def _acall(self, op: str, method: str, path: str, body: dict | None = None) -> Any:
        deadline = time.monotonic() + self.full_retry_s
        while True:
            try:
                resp = await self._async().request(method, path, json=body)
            except httpx.TransportError as e:
                raise self._unavailable(op, e) from e
            try:
                return self._answer(op, resp)
            except EnvServerFull as full:
                await asyncio.sleep(self._wait_or_raise(full, resp, deadline))

    def _create_body(self) -> dict[str, Any]:
        return {"env": self.env_name, "kwargs": self.env_kwargs}

    @staticmethod
    def _step_result(r: dict[str, Any]) -> tuple[str, float, bool, bool, dict[str, Any]]:
        return r["observation"], float(r["reward"]), bool(r["terminated"]), bool(r["truncated"]), r["info"]

    def _path(self, what: str) -> str:
        if self.session_id is None:
            raise RemoteEnvError(f"{what} before reset(): the remote session is created by the first reset")
        return f"/sessions/{self.session_id}/{what}"

    def _reset_calls(self, seed: int | None, options: dict[str, Any] | None) -> Generator[Call, dict[str, Any], Reset]:
        """The requests of a reset, as a plan both `reset` and `areset` drive: create the session if there is
        none, reset it, and if it was lost (evicted, server restarted) create a new one once."""
        body = {"seed": seed, "options": options}
        for attempt in (0, 1):
            if self.session_id is None:
                self.session_id = (yield ("create", "POST", "/sessions", self._create_body()))["session_id"]
            try:
                r = yield ("reset", "POST", self._path("reset"), body)
                return r["observation"], r["info"]
            except SessionLost:
                if attempt:
                    raise
                log.warning(
                    "remote session %s is gone (evicted or server restarted); creating a new one", self.session_id
                )
                self.session_id = None
        raise AssertionError("unreachable")

    # -- sync gymnasium API -----------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Reset:
        """Reset the remote session (created on the first reset, re-created once if it was lost)."""
        super().reset(seed=seed)
        plan = self._reset_calls(seed, options)
        try:
            call = next(plan)
            while True:
                try:
                    result = self._call(*call)
                except SessionLost as e:
                    call = plan.throw(e)
                else:
                    call = plan.send(result)
        except StopIteration as done:
            return done.value

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Step the remote session."""
        return self._step_result(self._call("step", "POST", self._path("step"), {"action": action}))

    def expert_action(self) -> str:
        """The server-side env's expert action in the current state."""
        return str(self._call("expert_action", "GET", self._path("expert_action"))["action"])

    def close(self) -> None:
        """Close the remote session and the HTTP client."""
        sid, self.session_id = self.session_id, None
        if sid is not None:
            try:
                self._call("close", "DELETE", f"/sessions/{sid}")
            except RemoteEnvError as e:  # the session is gone either way
                log.debug("closing remote session %s: %s", sid, e)
        if self._client is not None:
            self._client.close()
            self._client = None
        super().close()

    # -- async twins ------------------------------------------------------------------------
    async def areset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Reset:
        """`reset`, awaitable."""
        super().reset(seed=seed)
        plan = self._reset_calls(seed, options)
        try:
            call = next(plan)
            while True:
                try:
                    result = await self._acall(*call)
                except SessionLost as e:
                    call = plan.throw(e)
                else:
                    call = plan.send(result)
        except StopIteration as done:
            return done.value

    async def astep(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """`step`, awaitable."""
        return self._step_result(await self._acall("step", "POST", self._path("step"), {"action": action}))

    async def aexpert_action(self) -> str:
        """`expert_action`, awaitable."""
        return str((await self._acall("expert_action", "GET", self._path("expert_action")))["action"])

    async def aclose(self) -> None:
        """`close`, awaitable."""
        sid, self.session_id = self.session_id, None
        if sid is not None:
            try:
                await self._acall("close", "DELETE", f"/sessions/{sid}")
            except RemoteEnvError as e:
                log.debug("closing remote session %s: %s", sid, e)
        if self._aclient is not None:
            await self._aclient.aclose()
            self._aclient = None
        self.close()

    def health(self) -> dict[str, Any]:
        """The server's /health, or `EnvServerUnavailable`: a cheap check before a long run."""
        return self._call("health", "GET", "/health")

    def servable(self) -> dict[str, str]:
        """Short name -> gymnasium id of every env the server can build."""
        return {e["name"]: e["env_id"] for e in self._call("envs", "GET", "/envs")}
