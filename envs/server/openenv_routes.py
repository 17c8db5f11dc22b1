"""OpenEnv's wire protocol for every servable env, so OpenEnv's `EnvClient` and the trainers that speak it
use our envs unchanged (docs/adapters.md).

OpenEnv (PyTorch / Hugging Face) serves one env per base URL: `POST /reset`, `POST /step`, `GET /state`,
`GET /health`, `GET /schema`, `GET /metadata`, and a WebSocket `/ws` on which its client keeps one
session (`{"type": "reset" | "step" | "state" | "close", "data": ...}`, answered by `{"type":
"observation" | "state" | "error", "data": ...}`). Here each servable env has such a base URL,
`/openenv/<env>`, over the same sessions, caps, idle eviction and guard as the native protocol.

A result is OpenEnv's `StepResult` on the wire: `{"observation": {...}, "reward": float | None, "done":
bool}`, where the observation holds the env's text, instruction, available actions, action templates, the
env's error for a refused action, and `terminated` / `truncated` (OpenEnv's `done` is either). An action is
`{"action": "<text>"}`. OpenEnv's own HTTP routes make a fresh env per request; a text env is only useful
with state, so here `/reset` opens a session and returns its id as `observation.episode_id`, and `/step`
and `/state` take that id (a request without one is told so: 422). The WebSocket needs no id.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from fastapi import APIRouter, Query, WebSocket, WebSocketDisconnect
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from envs.server.catalog import BadEnvArguments, UnknownEnv
from envs.server.protocol import MAX_SEED
from envs.server.service import ActionTooLong, BadResetArguments, EnvNotServed, EnvService
from envs.server.sessions import NotReset, ServerFull, Session, SessionNotFound
from envs.webshop.resources import CatalogBudgetExceeded

log = logging.getLogger(__name__)

PREFIX = "/openenv"
SURFACED = ("instruction", "available_actions", "action_templates", "error")  # info keys given their own fields
# OpenEnv's WSErrorCode values, so its client's "Server error: ... (code: ...)" reads the same as against its own server
INVALID_JSON, UNKNOWN_TYPE, VALIDATION_ERROR = "INVALID_JSON", "UNKNOWN_TYPE", "VALIDATION_ERROR"
EXECUTION_ERROR, CAPACITY_REACHED, SESSION_ERROR = "EXECUTION_ERROR", "CAPACITY_REACHED", "SESSION_ERROR"


class _UnknownType(ValueError):
    """A WebSocket message of a type OpenEnv does not have."""


class BadAction(ValueError):
    """An OpenEnv action that is not `{"action": "<text>"}` (422)."""


class MissingEpisode(ValueError):
    """An HTTP /step, /state or /close without the episode_id that /reset returned (422)."""


_CODES: list[tuple[type[Exception], str]] = [
    (ServerFull, CAPACITY_REACHED),
    (CatalogBudgetExceeded, CAPACITY_REACHED),
    (SessionNotFound, SESSION_ERROR),
    (NotReset, SESSION_ERROR),
    (EnvNotServed, SESSION_ERROR),
    (UnknownEnv, SESSION_ERROR),
    (BadEnvArguments, VALIDATION_ERROR),
    (BadResetArguments, VALIDATION_ERROR),
    (ActionTooLong, VALIDATION_ERROR),
    (BadAction, VALIDATION_ERROR),
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TextAction(_Strict):
    """OpenEnv's `Action` for a text env: the action string, as the env's `available_actions` spell it."""

    action: str = Field(..., description="one action, e.g. 'craft 4 oak planks using 1 oak log' or 'move[right]'")
    metadata: dict[str, Any] = Field(default_factory=dict, description="OpenEnv's free metadata; not read here")


class TextObservation(BaseModel):
    """OpenEnv's `Observation` of a text env (`done`, `reward` and `metadata` travel beside it, as OpenEnv's do)."""

    text: str = Field(..., description="the env's observation")
    instruction: str = ""
    available_actions: list[str] = Field(default_factory=list, description="the finite actions, where listed")
    action_templates: list[str] = Field(default_factory=list, description="free-text forms with one '...' slot")
    error: str | None = Field(None, description="why the last action was refused (state unchanged), else null")
    terminated: bool = False
    truncated: bool = False
    episode_id: str = Field(..., description="the session: pass it to HTTP /step and /state")
    step_count: int = 0
    info: dict[str, Any] = Field(default_factory=dict, description="the rest of the env's info dict")


class TextState(BaseModel):
    """OpenEnv's `State` (episode_id, step_count) plus which env this is."""

    episode_id: str
    step_count: int = Field(0, ge=0)
    env: str
    env_id: str
    episodes: int = 0


class ResetBody(_Strict):
    """OpenEnv's `ResetRequest`: seed and episode_id, plus this env's reset options."""

    seed: int | None = Field(None, ge=0, le=MAX_SEED)
    episode_id: str | None = Field(
        None, max_length=255, description="reset this open session again instead of opening a new one"
    )
    options: dict[str, Any] | None = Field(None, description="env reset options, validated per env")


class StepBody(_Strict):
    """OpenEnv's `StepRequest`, plus the `episode_id` that `/reset` returned (HTTP keeps no connection)."""

    action: dict[str, Any]
    episode_id: str | None = Field(None, max_length=255)
    timeout_s: float | None = Field(
        None, gt=0, description="accepted for OpenEnv's clients; the server's own bounds apply"
    )
    request_id: str | None = Field(None, max_length=255)


class StepResult(BaseModel):
    """OpenEnv's `ResetResponse` / `StepResponse`: what its client parses into a `StepResult`."""

    observation: TextObservation
    reward: float | None = None
    done: bool = False


class Metadata(BaseModel):
    """OpenEnv's `EnvironmentMetadata`."""

    name: str
    description: str
    version: str | None = None
    documentation_url: str | None = None


def observation(s: Session, obs: str, info: dict[str, Any], terminated: bool = False, truncated: bool = False) -> dict:
    """A session's observation as OpenEnv's observation dict."""
    return {
        "text": obs,
        "instruction": str(info.get("instruction", "")),
        "available_actions": list(info.get("available_actions") or []),
        "action_templates": list(info.get("action_templates") or []),
        "error": info.get("error"),
        "terminated": terminated,
        "truncated": truncated,
        "episode_id": s.id,
        "step_count": s.steps,
        "info": {k: v for k, v in info.items() if k not in SURFACED},
    }


def state(s: Session) -> dict[str, Any]:
    """A session's OpenEnv `State`."""
    return {"episode_id": s.id, "step_count": s.steps, "env": s.env_name, "env_id": s.env_id, "episodes": s.episodes}


def parse_action(data: Any) -> str:
    """The action string from OpenEnv's action dict (ValidationError says what shape is allowed)."""
    return TextAction.model_validate(data).action


class OpenEnvOps:
    """The protocol's operations over the env service, shared by the HTTP routes and the WebSocket."""

    def __init__(self, service: EnvService) -> None:
        self.service = service

    async def reset(self, s: Session, seed: int | None, options: dict[str, Any] | None) -> dict[str, Any]:
        obs, info = await self.service.reset(s, seed, options)
        return {"observation": observation(s, obs, info), "reward": None, "done": False}

    async def step(self, s: Session, data: Any) -> dict[str, Any]:
        obs, reward, terminated, truncated, info = await self.service.step(s, parse_action(data))
        return {
            "observation": observation(s, obs, info, terminated, truncated),
            "reward": reward,
            "done": terminated or truncated,
        }


def _missing_episode(route: str) -> MissingEpisode:
    return MissingEpisode(
        f"{route} needs the episode_id that POST /reset returned in observation.episode_id "
        "(HTTP keeps no connection; OpenEnv's EnvClient keeps its session over the WebSocket /ws instead)"
    )


def openenv_router(service: EnvService) -> APIRouter:
    """OpenEnv's routes for every servable env, under `/openenv/<env>`."""
    ops = OpenEnvOps(service)
    r = APIRouter(prefix=PREFIX + "/{env}", tags=["openenv"])

    def session(env: str, episode_id: str | None, route: str) -> Session:
        if not episode_id:
            raise _missing_episode(route)
        s = service.sessions.get(episode_id)
        name, _ = service.catalog.resolve(env)
        if s.env_name != name:
            raise SessionNotFound(f"episode {episode_id!r} is a {s.env_name!r} session, not {name!r}")
        return s

    @r.get("/health")
    async def health(env: str) -> dict[str, str]:
        service.catalog.resolve(env)
        return {"status": "healthy"}

    @r.get("/metadata", response_model=Metadata)
    async def metadata(env: str) -> Metadata:
        name, env_id = service.catalog.resolve(env)
        return Metadata(
            name=name,
            description=f"agentsim text env {env_id} over OpenEnv's protocol (actions are strings)",
            documentation_url="docs/adapters.md",
        )

    @r.get("/schema")
    async def schema(env: str) -> dict[str, Any]:
        service.catalog.resolve(env)
        return {
            "action": TextAction.model_json_schema(),
            "observation": TextObservation.model_json_schema(),
            "state": TextState.model_json_schema(),
        }

    @r.post("/reset", response_model=StepResult)
    async def reset(env: str, body: ResetBody | None = None) -> dict[str, Any]:
        body = body or ResetBody.model_validate({})
        if body.episode_id:
            s = session(env, body.episode_id, "POST /reset with an episode_id")
        else:
            s = await service.create(env, {})
        try:
            return await ops.reset(s, body.seed, body.options)
        except Exception:
            if not body.episode_id:  # a session this request opened is not left behind by a refused reset
                await service.close(s.id)
            raise

    @r.post("/step", response_model=StepResult)
    async def step(env: str, body: StepBody) -> dict[str, Any]:
        s = session(env, body.episode_id, "POST /step")
        try:
            return await ops.step(s, body.action)
        except ValidationError as e:
            raise BadAction(_action_problem(e)) from None

    @r.get("/state", response_model=TextState)
    async def get_state(env: str, episode_id: str | None = Query(None, max_length=255)) -> dict[str, Any]:
        return state(session(env, episode_id, "GET /state"))

    @r.post("/close")
    async def close(env: str, episode_id: str | None = Query(None, max_length=255)) -> dict[str, bool]:
        await service.close(session(env, episode_id, "POST /close").id)
        return {"closed": True}

    @r.websocket("/ws")
    async def ws(websocket: WebSocket, env: str) -> None:
        await WebSocketSession(websocket, service, ops, env).run()

    return r


def _action_problem(e: ValidationError) -> str:
    parts = [
        f"{'.'.join(str(x) for x in err.get('loc', ())) or 'action'}: {err.get('msg', 'invalid')}" for err in e.errors()
    ]
    return "invalid action: " + "; ".join(parts) + ' (send {"action": "<one action string>"})'


def _body_problem(e: ValidationError) -> str:
    parts = [
        f"{'.'.join(str(x) for x in err.get('loc', ())) or 'data'}: {err.get('msg', 'invalid')}" for err in e.errors()
    ]
    return "invalid reset data: " + "; ".join(parts) + " (allowed: seed, episode_id, options)"


class WebSocketSession:
    """One OpenEnv WebSocket connection: one env session, opened on connect and closed on disconnect.

    Bounded like the HTTP routes: a message over the server's body limit is refused (and uvicorn drops
    frames beyond it), a connection silent for the idle timeout is closed, and every fault is an
    `{"type": "error"}` message naming what was wrong, never a dropped connection without a word."""

    def __init__(self, websocket: WebSocket, service: EnvService, ops: OpenEnvOps, env: str) -> None:
        self.ws, self.service, self.ops, self.env = websocket, service, ops, env
        self.max_chars = service.cfg.max_body_bytes

    async def _error(self, message: str, code: str) -> None:
        await self.ws.send_text(json.dumps({"type": "error", "data": {"message": message, "code": code}}))

    async def run(self) -> None:
        await self.ws.accept()
        try:
            s = await self.service.create(self.env, {})
        except Exception as e:  # noqa: BLE001 - every refusal is told to the client, then the socket closes
            await self._error(str(e), _code(e))
            await self.ws.close(code=1008 if not isinstance(e, (ServerFull, CatalogBudgetExceeded)) else 1013)
            return
        try:
            await self._serve(s)
        except WebSocketDisconnect:
            pass
        finally:
            try:
                await self.service.close(s.id)
            except SessionNotFound:
                pass  # evicted while idle

    async def _serve(self, s: Session) -> None:
        while True:
            try:
                raw = await asyncio.wait_for(self.ws.receive_text(), timeout=self.service.cfg.idle_timeout_s)
            except asyncio.TimeoutError:
                await self._error(f"no message for {self.service.cfg.idle_timeout_s:g} s; closing", SESSION_ERROR)
                await self.ws.close(code=1000)
                return
            if len(raw) > self.max_chars:
                await self._error(
                    f"message of {len(raw):,} characters is over this server's limit of {self.max_chars:,}",
                    VALIDATION_ERROR,
                )
                continue
            try:
                msg = json.loads(raw)
            except json.JSONDecodeError as e:
                await self._error(f"Invalid JSON: {e}", INVALID_JSON)
                continue
            if not isinstance(msg, dict):
                await self._error('a message is a JSON object {"type": ..., "data": ...}', VALIDATION_ERROR)
                continue
            kind = msg.get("type")
            if kind == "close":
                await self.ws.close(code=1000)
                return
            try:
                reply = await self._handle(s, kind, msg.get("data"))
            except ValidationError as e:
                await self._error(_action_problem(e) if kind == "step" else _body_problem(e), VALIDATION_ERROR)
                continue
            except Exception as e:  # noqa: BLE001 - the mapped client faults; anything else is logged and reported
                code = _code(e)
                if code == EXECUTION_ERROR:
                    log.exception("openenv %s on session %s failed", kind, s.id)
                await self._error(str(e) if code != EXECUTION_ERROR else f"the env failed on {kind}", code)
                if isinstance(e, SessionNotFound):
                    await self.ws.close(code=1000)
                    return
                continue
            await self.ws.send_text(json.dumps(reply))

    async def _handle(self, s: Session, kind: Any, data: Any) -> dict[str, Any]:
        self.service.sessions.get(s.id)  # evicted while idle -> SessionNotFound, said so
        if kind == "reset":
            body = ResetBody.model_validate(data or {})
            if body.episode_id and body.episode_id != s.id:
                raise BadResetArguments("episode_id: on the WebSocket the session is the connection's; leave it out")
            return {"type": "observation", "data": await self.ops.reset(s, body.seed, body.options)}
        if kind == "step":
            return {"type": "observation", "data": await self.ops.step(s, data)}
        if kind == "state":
            return {"type": "state", "data": state(s)}
        shown = json.dumps(kind)[:80]
        raise _UnknownType(f"Unknown message type: {shown}; the types are reset, step, state, close")


def _code(e: Exception) -> str:
    if isinstance(e, _UnknownType):
        return UNKNOWN_TYPE
    for exc_type, code in _CODES:
        if isinstance(e, exc_type):
            return code
    return EXECUTION_ERROR
