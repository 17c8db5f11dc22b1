"""The wire format: pydantic bodies for every route (they are also the published OpenAPI schema)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CreateRequest(_Body):
    """POST /sessions: which env, and the kwargs a client may set."""

    env: str = Field(
        ...,
        description="short name (e.g. 'webshop') or gymnasium id (e.g. 'agentsim/WebShop-v0')",
        min_length=1,
        max_length=200,
    )
    kwargs: dict[str, Any] = Field(default_factory=dict, description="constructor kwargs, over the server's defaults")


MAX_SEED = 2**63 - 1  # numpy seeds any non-negative int; this bound keeps JSON ints and logs sane


class ResetRequest(_Body):
    """POST /sessions/{id}/reset: seed (>= 0) and env options."""

    seed: int | None = Field(None, ge=0, le=MAX_SEED, description="gymnasium seeds are non-negative")
    options: dict[str, Any] | None = Field(
        None,
        description="env reset options, validated per env "
        "(WebShop: goal_index, FaultTree: entry_index; non-negative ints)",
    )


class StepRequest(_Body):
    """POST /sessions/{id}/step: one text action."""

    action: str


class SessionInfo(BaseModel):
    """A live session as the client sees it."""

    session_id: str
    env: str
    env_id: str
    kwargs: dict[str, Any]
    created_at: float
    idle_s: float
    steps: int
    episodes: int
    max_action_chars: int


class ResetResponse(BaseModel):
    """The first observation and info of an episode."""

    observation: str
    info: dict[str, Any]


class StepResponse(BaseModel):
    """Gymnasium's step result as JSON."""

    observation: str
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]


class ObservationResponse(BaseModel):
    """The latest observation and info."""

    observation: str
    info: dict[str, Any]


class ActionsResponse(BaseModel):
    """The actions valid now and the free-text templates."""

    available_actions: list[str]
    action_templates: list[str]


class ExpertResponse(BaseModel):
    """The env's scripted expert action in the current state."""

    action: str


class CloseResponse(BaseModel):
    """Whether a session was closed."""

    closed: bool


class EnvEntry(BaseModel):
    """One servable env: short name and Gymnasium id."""

    name: str
    env_id: str


class HealthResponse(BaseModel):
    """GET /health: liveness, load and limits."""

    status: str
    sessions: int
    max_sessions: int
    idle_timeout_s: float
    uptime_s: float
    envs: list[str]
    catalogs: int = Field(0, description="WebShop catalogs in memory")
    catalog_mb: float = Field(0.0, description="their estimated size (budget: --catalog-budget-mb)")


class ErrorResponse(BaseModel):
    """Every error body: what was wrong and what to do."""

    detail: str


# -- AgentGym's WebShop wire format (field names as its client sends and reads them)


class AgentGymStep(_Body):
    """AgentGym's POST /step body."""

    env_idx: int
    action: str


class AgentGymReset(_Body):
    """AgentGym's POST /reset body (session_id = goal index)."""

    env_idx: int
    session_id: int | None = Field(None, ge=0, le=MAX_SEED)


class AgentGymClose(_Body):
    """AgentGym's POST /close body."""

    env_idx: int


class AgentGymStepResponse(BaseModel):
    """AgentGym's step answer (state, reward, done)."""

    state: str
    reward: float
    done: bool
    info: None = None


class AgentGymActions(BaseModel):
    """AgentGym's available-actions answer."""

    has_search_bar: bool
    clickables: list[str]


class AgentGymState(BaseModel):
    """AgentGym's GET /state answer (url, html, instruction)."""

    url: str
    html: str
    instruction_text: str


class AgentGymCloseResponse(BaseModel):
    """AgentGym's close answer."""

    closed: bool
