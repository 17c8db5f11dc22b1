"""The FastAPI app: native routes for every servable env, errors mapped to honest HTTP statuses.

Client mistakes never surface as 500: unknown session/env -> 404, bad body/kwargs/options or an
oversize action -> 422, stepping before reset or no expert -> 409, server full or the catalog
budget held by open sessions -> 503 with Retry-After (AgentGym's client retries 503), oversize
body -> 413, late body -> 408, non-UTF-8 body -> 422 (the last three in `guard.py`), bad token -> 401,
an env the operator did not enable (the coding env without --allow-coding) -> 403.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from envs.server.catalog import BadEnvArguments, UnknownEnv
from envs.server.config import ServerConfig
from envs.server.guard import Guard
from envs.server.openenv_routes import BadAction, MissingEpisode, openenv_router
from envs.server.protocol import (
    ActionsResponse,
    CloseResponse,
    CreateRequest,
    EnvEntry,
    ErrorResponse,
    ExpertResponse,
    HealthResponse,
    ObservationResponse,
    ResetRequest,
    ResetResponse,
    SessionInfo,
    StepRequest,
    StepResponse,
)
from envs.server.service import ActionTooLong, BadResetArguments, EnvNotServed, EnvService, NoExpert
from envs.server.sessions import NotReset, ServerFull, Session, SessionNotFound
from envs.util import to_jsonable
from envs.webshop.resources import CatalogBudgetExceeded
from envs.webshop.resources import cache as shop_cache

ERRORS: dict[int | str, dict[str, Any]] = {
    403: {"model": ErrorResponse},
    404: {"model": ErrorResponse},
    409: {"model": ErrorResponse},
    422: {"model": ErrorResponse},
    503: {"model": ErrorResponse},
}
_STATUS: list[tuple[type[Exception], int]] = [
    (EnvNotServed, 403),
    (SessionNotFound, 404),
    (UnknownEnv, 404),
    (BadEnvArguments, 422),
    (BadResetArguments, 422),
    (ActionTooLong, 422),
    (BadAction, 422),
    (MissingEpisode, 422),
    (NotReset, 409),
    (NoExpert, 409),
    (ServerFull, 503),
    (CatalogBudgetExceeded, 503),
]


def _validation_detail(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = err.get("loc", ())
        if err.get("type") == "json_invalid":
            why = (err.get("ctx") or {}).get("error", "")
            parts.append(f"the body is not valid JSON (at character {loc[-1] if loc else '?'}: {why})")
            continue
        parts.append(f"{'.'.join(str(x) for x in loc)}: {err.get('msg', 'invalid')}")
    return "invalid request: " + "; ".join(parts)


def _http_detail(request: Request, exc: StarletteHTTPException) -> str:
    """Starlette's own refusals (no such route, a method the route does not take, a body it could not
    parse) say what was wrong and what to do, like every other error of this server."""
    where = f"{request.method} {request.url.path[:200]}"
    if exc.status_code == 404 and exc.detail == "Not Found":
        return f"no route {where}; the routes are listed at /docs (a session's are under /sessions/<id>/)"
    if exc.status_code == 405:
        allowed = (getattr(exc, "headers", None) or {}).get("Allow", "")
        return f"method {request.method} is not allowed on {request.url.path[:200]}" + (
            f"; allowed: {allowed}" if allowed else ""
        )
    if exc.status_code == 400 and exc.detail == "There was an error parsing the body":
        return (
            "invalid request: the body could not be parsed (nested too deeply, or not the JSON the route takes); "
            "send a JSON object with content-type application/json"
        )
    return str(exc.detail)


def session_info(s: Session, max_action_chars: int) -> SessionInfo:
    """A session as the client may see it (never the operator's data paths)."""
    return SessionInfo(
        session_id=s.id,
        env=s.env_name,
        env_id=s.env_id,
        kwargs=to_jsonable(s.kwargs),
        created_at=s.created_at,
        idle_s=time.monotonic() - s.last_used,
        steps=s.steps,
        episodes=s.episodes,
        max_action_chars=max_action_chars,
    )


def build_app(cfg: ServerConfig) -> Guard:
    """The ASGI app (FastAPI wrapped in the token/size guard); `.app` is the FastAPI instance."""
    service = EnvService(cfg)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await service.start()
        yield
        await service.stop()

    api = FastAPI(
        title="agentsim env server",
        version="1.0",
        description="One protocol for every registered text env (gymnasium semantics over HTTP), "
        "plus OpenEnv's protocol for every env and AgentGym-compatible routes.",
        lifespan=lifespan,
    )
    api.state.service = service

    for exc_type, code in _STATUS:

        def handler(_: Request, exc: Exception, code: int = code) -> JSONResponse:
            headers = {"Retry-After": "1"} if code == 503 else None
            return JSONResponse({"detail": str(exc)}, status_code=code, headers=headers)

        api.add_exception_handler(exc_type, handler)

    @api.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": _validation_detail(exc)}, status_code=422)

    @api.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse(
            {"detail": _http_detail(request, exc)}, status_code=exc.status_code, headers=getattr(exc, "headers", None)
        )

    @api.get("/health", response_model=HealthResponse, tags=["server"])
    async def health() -> HealthResponse:
        catalogs, nbytes = shop_cache().stats()
        return HealthResponse(
            status="ok",
            sessions=len(service.sessions),
            max_sessions=cfg.max_sessions,
            idle_timeout_s=cfg.idle_timeout_s,
            uptime_s=time.monotonic() - service.started,
            envs=sorted(service.servable()),
            catalogs=catalogs,
            catalog_mb=round(nbytes / 2**20, 1),
        )

    @api.get("/envs", response_model=list[EnvEntry], tags=["server"])
    async def list_envs() -> list[EnvEntry]:
        return [EnvEntry(name=n, env_id=i) for n, i in sorted(service.servable().items())]

    @api.post(
        "/sessions",
        response_model=SessionInfo,
        status_code=status.HTTP_201_CREATED,
        responses=ERRORS,
        tags=["sessions"],
    )
    async def create(body: CreateRequest) -> SessionInfo:
        return session_info(await service.create(body.env, body.kwargs), cfg.max_action_chars)

    @api.get("/sessions", response_model=list[SessionInfo], tags=["sessions"])
    async def list_sessions() -> list[SessionInfo]:
        return [session_info(s, cfg.max_action_chars) for s in service.sessions.sessions()]

    # the hot routes answer with a ready JSONResponse (schema still published via response_model): info is
    # already JSON-safe, so a second pydantic pass per step would only cost time
    @api.post("/sessions/{sid}/reset", response_model=ResetResponse, responses=ERRORS, tags=["sessions"])
    async def reset(sid: str, body: ResetRequest | None = None) -> JSONResponse:
        body = body or ResetRequest.model_validate({})
        obs, info = await service.reset(service.sessions.get(sid), body.seed, body.options)
        return JSONResponse({"observation": obs, "info": info})

    @api.post("/sessions/{sid}/step", response_model=StepResponse, responses=ERRORS, tags=["sessions"])
    async def step(sid: str, body: StepRequest) -> JSONResponse:
        obs, reward, terminated, truncated, info = await service.step(service.sessions.get(sid), body.action)
        return JSONResponse(
            {"observation": obs, "reward": reward, "terminated": terminated, "truncated": truncated, "info": info}
        )

    @api.get("/sessions/{sid}/observation", response_model=ObservationResponse, responses=ERRORS, tags=["sessions"])
    async def observation(sid: str) -> ObservationResponse:
        s = service.sessions.get(sid)
        s.require_reset()
        return ObservationResponse(observation=s.observation or "", info=s.info)

    @api.get("/sessions/{sid}/available_actions", response_model=ActionsResponse, responses=ERRORS, tags=["sessions"])
    async def available_actions(sid: str) -> ActionsResponse:
        s = service.sessions.get(sid)
        s.require_reset()
        return ActionsResponse(
            available_actions=list(s.info.get("available_actions") or []),
            action_templates=list(s.info.get("action_templates") or []),
        )

    @api.get("/sessions/{sid}/expert_action", response_model=ExpertResponse, responses=ERRORS, tags=["sessions"])
    async def expert_action(sid: str) -> ExpertResponse:
        return ExpertResponse(action=await service.expert_action(service.sessions.get(sid)))

    @api.delete("/sessions/{sid}", response_model=CloseResponse, responses=ERRORS, tags=["sessions"])
    async def close(sid: str) -> CloseResponse:
        await service.close(sid)
        return CloseResponse(closed=True)

    @api.post("/sessions/{sid}/close", response_model=CloseResponse, responses=ERRORS, tags=["sessions"])
    async def close_post(sid: str) -> CloseResponse:
        await service.close(sid)
        return CloseResponse(closed=True)

    api.include_router(openenv_router(service))  # OpenEnv's protocol, /openenv/<env>/... (docs/adapters.md)
    if cfg.agentgym_env:
        from envs.server.agentgym import agentgym_router

        api.include_router(agentgym_router(service, cfg.agentgym_env))
    return Guard(api, cfg.token, cfg.max_body_bytes, cfg.read_timeout_s)
