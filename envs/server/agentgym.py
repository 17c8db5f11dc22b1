"""AgentGym-compatible WebShop routes, so AgentGym's `WebshopEnvClient` works unchanged.

AgentGym addresses envs by an integer `env_idx` and speaks WebShop's old gym API (`state`,
`done`, a reset that returns `[observation, null]`). Each route maps onto the same sessions as
the native protocol (see docs/server.md for the table): `env_idx` is the session's integer
alias, `session_id` on reset is the goal index, `done` = terminated or truncated. Unlike
AgentGym's server, `/close` exists in both protocols, sessions are capped and evicted when idle,
and every env shares one catalog and index.
"""

from __future__ import annotations

from fastapi import APIRouter, Query

from envs.server.protocol import (
    AgentGymActions,
    AgentGymClose,
    AgentGymCloseResponse,
    AgentGymReset,
    AgentGymState,
    AgentGymStep,
    AgentGymStepResponse,
)
from envs.server.service import EnvService
from envs.server.sessions import SessionNotFound

CLICK, SEARCH = "click[", "search[..."


def _clickables(actions: list[str]) -> list[str]:
    return [a[len(CLICK) : -1] for a in actions if a.startswith(CLICK) and a.endswith("]")]


def agentgym_router(service: EnvService, env: str) -> APIRouter:
    """The AgentGym-compatible routes for `env`: WebShop's, or TextCraft's / BabyAI's (`agentgym_games`)."""
    name, _ = service.catalog.resolve(env)  # fail at start-up, not on the first request
    if name in ("textcraft", "babyai"):
        from envs.server.agentgym_games import agentgym_game_router

        return agentgym_game_router(service, env)
    r = APIRouter(tags=["agentgym"])

    @r.get("/", response_model=str)
    async def ok() -> str:
        return "ok"

    @r.get("/list_envs", response_model=list[int])
    async def list_envs() -> list[int]:
        return [s.idx for s in service.sessions.sessions()]

    @r.post("/create", response_model=int)
    async def create() -> int:
        s = await service.create(env, {})
        await service.reset(s, None, None)  # AgentGym's server resets on create, so /observation works at once
        return s.idx

    @r.post("/step", response_model=AgentGymStepResponse)
    async def step(body: AgentGymStep) -> AgentGymStepResponse:
        obs, reward, terminated, truncated, _ = await service.step(service.sessions.get_idx(body.env_idx), body.action)
        return AgentGymStepResponse(state=obs, reward=reward, done=terminated or truncated)

    @r.post("/reset", response_model=tuple[str, None])
    async def reset(body: AgentGymReset) -> tuple[str, None]:
        s = service.sessions.get_idx(body.env_idx)
        options = None if body.session_id is None else {"goal_index": body.session_id}
        obs, _ = await service.reset(s, None, options)
        return obs, None

    @r.get("/observation", response_model=str)
    async def observation(env_idx: int = Query(...)) -> str:
        s = service.sessions.get_idx(env_idx)
        s.require_reset()
        return s.observation or ""

    @r.get("/available_actions", response_model=AgentGymActions)
    async def available_actions(env_idx: int = Query(...)) -> AgentGymActions:
        s = service.sessions.get_idx(env_idx)
        s.require_reset()
        templates = list(s.info.get("action_templates") or [])
        return AgentGymActions(
            has_search_bar=any(t.startswith(SEARCH) for t in templates),
            clickables=_clickables(list(s.info.get("available_actions") or [])),
        )

    @r.get("/instruction_text", response_model=str)
    async def instruction_text(env_idx: int = Query(...)) -> str:
        s = service.sessions.get_idx(env_idx)
        s.require_reset()
        return str(s.info.get("instruction", ""))

    @r.get("/state", response_model=AgentGymState)
    async def state(env_idx: int = Query(...)) -> AgentGymState:
        s = service.sessions.get_idx(env_idx)
        s.require_reset()
        base = s.env.unwrapped
        html = s.observation or ""
        view = getattr(base, "view", None)
        if callable(view):
            from envs.webshop.render import render

            html = render(view(), "html")
        return AgentGymState(
            url=f"{s.env_name}://{s.info.get('page', '')}",
            html=html,
            instruction_text=str(s.info.get("instruction", "")),
        )

    @r.post("/close", response_model=AgentGymCloseResponse)
    async def close(body: AgentGymClose) -> AgentGymCloseResponse:
        try:
            sid = service.sessions.get_idx(body.env_idx).id
        except SessionNotFound:
            return AgentGymCloseResponse(closed=False)  # AgentGym's semantics: closing an unknown env says False
        await service.close(sid)
        return AgentGymCloseResponse(closed=True)

    return r
