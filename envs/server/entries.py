"""Per-env server entries: which constructor kwargs and reset options a *client* may set, validated.

Why an allow-list: constructor kwargs reach `gymnasium.make` in the server process, so a client
that could name `catalog_path` or `dataset_path` could make the server open any file (and grow
without bound on `/dev/zero`). Data locations and anything else the operator decides come only
from `--env-kwargs`; a client may tune what changes an episode, within bounds that keep memory
bounded (`num_products <= --max-num-products`). Each model forbids unknown keys, so the 422 names
the key; `allowed()` lists the keys that would have been accepted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError, ValidationInfo, field_validator

from envs.server.protocol import MAX_SEED


class ClientKwargs(BaseModel):
    """Base of every env's client kwargs: unknown keys are refused, values validated strictly."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # gymnasium.make's own kwarg: the TimeLimit the env is wrapped in (every env registers a default)
    max_episode_steps: int | None = Field(None, ge=1, le=10_000)

    def to_env(self) -> dict[str, Any]:
        """The kwargs the client set (not the defaults), in the form the env constructor takes."""
        return self.model_dump(exclude_unset=True)


class WebShopKwargs(ClientKwargs):
    """What a client may set when creating a WebShop session (bounded; no data paths)."""

    num_products: int = Field(10_000, ge=10, description="synthetic catalog size, at most --max-num-products")
    catalog_seed: int = Field(0, ge=0, le=2**31 - 1)
    split: Literal["train", "eval", "test"] = "train"
    observation_mode: Literal["text", "text_rich", "html"] = "text"
    max_steps: int | None = Field(None, ge=1, le=1000, description="deprecated alias of max_episode_steps")

    @field_validator("num_products")
    @classmethod
    def _bounded(cls, v: int, info: ValidationInfo) -> int:
        cap = (info.context or {}).get("max_num_products")
        if cap is not None and v > cap:
            raise ValueError(f"at most {cap:,} products may be requested from this server (--max-num-products)")
        return v


class ExpertKwargs(BaseModel):
    """FaultTree's scripted-expert thresholds (envs.faulttree.expert.ExpertConfig) as a validated body."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    confidence: float = Field(0.95, gt=0, le=1)
    min_gain: float = Field(0.01, ge=0, le=100)
    recheck_discount: float = Field(0.5, ge=0, le=1)


class FaultTreeKwargs(ClientKwargs):
    """What a client may set when creating a FaultTree session (no data paths)."""

    domain: str | None = None
    vagueness: float = Field(0.3, ge=0, le=1)
    error_rate: float = Field(0.1, ge=0, le=1)
    rollback_distance: int = Field(8, ge=0, le=1000)
    rollback_prob: float = Field(0.8, ge=0, le=1)
    max_turns: int = Field(40, ge=1, le=500)
    split: Literal["train", "dev", "test"] = "test"
    n_entries: int = Field(3130, ge=10, le=10_000_000)
    base_seed: int = Field(0, ge=0, le=2**31 - 1)
    max_listed_checks: int = Field(12, ge=0, le=200)
    max_listed_diagnoses: int = Field(3, ge=0, le=50)
    show_tree: StrictBool = True
    expert: ExpertKwargs | None = None

    @field_validator("domain")
    @classmethod
    def _known_domain(cls, v: str | None) -> str | None:
        from envs.faulttree.dataset import DOMAIN_NAMES

        if v is not None and v not in DOMAIN_NAMES:
            raise ValueError(f"unknown domain {v!r}; choose from {list(DOMAIN_NAMES)}")
        return v

    def to_env(self) -> dict[str, Any]:
        """The constructor kwargs (the expert settings as the env's own config object)."""
        out = super().to_env()
        if self.expert is not None:
            from envs.faulttree.expert import ExpertConfig

            out["expert"] = ExpertConfig(**self.expert.model_dump())
        return out


class CodingKwargs(ClientKwargs):
    """What a client may set when creating a coding session: a shipped task by name (never a path,
    which would let a client make the server run any folder's scripts), an isolating backend."""

    task: str | None = Field(None, max_length=200, description="a shipped task's name, or 'all' (by seed)")
    backend: Literal["bwrap", "docker"] = "bwrap"
    command_timeout: float = Field(60.0, gt=0, le=600)
    output_chars: int = Field(8_000, ge=200, le=100_000)
    port_wait_s: float = Field(20.0, gt=0, le=120)

    @field_validator("task")
    @classmethod
    def _shipped(cls, v: str | None) -> str | None:
        from envs.coding.tasks import shipped_tasks

        if v is not None and v != "all" and v not in shipped_tasks():
            raise ValueError(f"unknown task {v!r}; choose 'all' or one of {sorted(shipped_tasks())}")
        return v

    def to_env(self) -> dict[str, Any]:
        """The constructor kwargs; a client-chosen task is looked up by name only."""
        out = super().to_env()
        if "task" in out:
            out["allow_task_path"] = False
        return out


class TextCraftKwargs(ClientKwargs):
    """What a client may set when creating a TextCraft session: the goal pool and the distractors."""

    split: Literal["train", "eval", "all"] = "train"
    min_depth: int = Field(1, ge=1, le=4)
    max_depth: int = Field(4, ge=1, le=4)
    max_distractors: int = Field(10, ge=0, le=50)


class BabyAIKwargs(ClientKwargs):
    """What a client may set when creating a BabyAI session: one BabyAI level by its gym id."""

    split: Literal["train", "eval"] = "train"
    level: str | None = Field(None, max_length=100, pattern=r"^BabyAI-[A-Za-z0-9]+-v\d+$")


class ResetOptions(BaseModel):
    """Reset options of an env without a model of its own: any JSON object, passed through."""

    model_config = ConfigDict(extra="allow", frozen=True)

    def to_env(self) -> dict[str, Any]:
        """The options as the env's reset takes them."""
        return self.model_dump(exclude_unset=True)


class WebShopOptions(ResetOptions):
    """WebShop reset options a client may pass (a goal by index)."""

    goal_index: int | None = Field(None, ge=0, le=MAX_SEED)


class FaultTreeOptions(ResetOptions):
    """FaultTree reset options a client may pass (a dialogue entry by index)."""

    entry_index: int | None = Field(None, ge=0, le=MAX_SEED)


class TextCraftOptions(ResetOptions):
    """TextCraft reset options: a goal by index (AgentGym's data_idx) or by item name."""

    goal_index: int | None = Field(None, ge=0, le=MAX_SEED)
    goal: str | None = Field(None, max_length=200)


class BabyAIOptions(ResetOptions):
    """BabyAI reset options: AgentGym's data_idx (level data_idx % 40, seed data_idx // 40)."""

    data_idx: int | None = Field(None, ge=0, le=MAX_SEED)


@dataclass(frozen=True)
class PathKwarg:
    """An operator-only kwarg naming a file or directory; checked at start-up, never taken from a client."""

    name: str
    kind: Literal["file", "dir"]
    must_hold: tuple[str, ...] = ()  # files a directory must contain


@dataclass(frozen=True)
class ServerEntry:
    """One env's server policy: client kwargs, reset options and the operator-only path kwargs."""

    client_kwargs: type[ClientKwargs] | None  # None: any key in `extra_keys` (JSON scalars), nothing else
    reset_options: type[ResetOptions] = ResetOptions
    paths: tuple[PathKwarg, ...] = ()
    extra_keys: tuple[str, ...] = field(default=())

    def allowed(self) -> list[str]:
        """The kwargs a client may set, for error messages."""
        if self.client_kwargs is not None:
            return sorted(self.client_kwargs.model_fields)
        return sorted(self.extra_keys)


ENTRIES: dict[str, ServerEntry] = {
    "webshop": ServerEntry(
        WebShopKwargs,
        WebShopOptions,
        paths=(
            PathKwarg("catalog_path", "file"),
            PathKwarg("attributes_path", "file"),
            PathKwarg("human_goals_path", "file"),
        ),
    ),
    "faulttree": ServerEntry(
        FaultTreeKwargs, FaultTreeOptions, paths=(PathKwarg("dataset_path", "dir", must_hold=("trees.jsonl",)),)
    ),
    "coding": ServerEntry(CodingKwargs),
    "textcraft": ServerEntry(TextCraftKwargs, TextCraftOptions),
    "babyai": ServerEntry(BabyAIKwargs, BabyAIOptions),
}


class KwargsRejected(ValueError):
    """A client's kwargs or options are not allowed or malformed; the message names the field."""


def _describe(e: ValidationError, what: str, allowed: list[str]) -> str:
    parts = []
    for err in e.errors():
        loc = ".".join(str(x) for x in err.get("loc", ())) or "(body)"
        if err.get("type") == "extra_forbidden":
            parts.append(
                f"{what} {loc!r} may not be set by a client (allowed: {', '.join(allowed) or 'none'}; "
                "data locations and other server settings come from the operator's --env-kwargs)"
            )
        else:
            parts.append(f"{what} {loc!r}: {err.get('msg', 'invalid').removeprefix('Value error, ')}")
    return "; ".join(parts)


_SCALAR = (str, int, float, bool, type(None))


def client_kwargs(entry: ServerEntry, name: str, given: dict[str, Any], max_num_products: int) -> dict[str, Any]:
    """Validate a client's kwargs for env `name`: the allow-listed keys only, values in range."""
    if entry.client_kwargs is None:
        bad = sorted(set(given) - set(entry.extra_keys))
        if bad:
            raise KwargsRejected(
                f"kwarg {bad[0]!r} may not be set by a client for env {name!r} (allowed: "
                f"{', '.join(entry.allowed()) or 'none'}; the operator allows more with --client-kwargs)"
            )
        for k, v in given.items():
            if (
                not isinstance(v, _SCALAR)
                or (isinstance(v, str) and len(v) > 1000)
                or (isinstance(v, float) and not math.isfinite(v))
            ):
                raise KwargsRejected(
                    f"kwarg {k!r} for env {name!r} must be a JSON scalar (a finite number, a "
                    "boolean, null, or a string up to 1,000 chars)"
                )
        return dict(given)
    try:
        model = entry.client_kwargs.model_validate(given, context={"max_num_products": max_num_products})
    except ValidationError as e:
        raise KwargsRejected(f"bad kwargs for env {name!r}: " + _describe(e, "kwarg", entry.allowed())) from e
    return model.to_env()


def reset_options(entry: ServerEntry, name: str, given: dict[str, Any] | None) -> dict[str, Any] | None:
    """Validate a client's reset options against the env's entry; the message names the field."""
    if given is None:
        return None
    try:
        return entry.reset_options.model_validate(given).to_env()
    except ValidationError as e:
        raise KwargsRejected(f"bad reset options for env {name!r}: " + _describe(e, "option", [])) from e


def check_operator_paths(entry: ServerEntry, name: str, kwargs: dict[str, Any]) -> None:
    """Fail at start-up (not on a client's request) when an operator's data location is wrong."""
    for p in entry.paths:
        value = kwargs.get(p.name)
        if value is None:
            continue
        path = Path(str(value)).expanduser()
        if not path.exists():
            raise ValueError(f"--env-kwargs {name}: {p.name}={str(value)!r} does not exist")
        if p.kind == "file" and not path.is_file():
            raise ValueError(f"--env-kwargs {name}: {p.name}={str(value)!r} is not a regular file")
        if p.kind == "dir":
            if not path.is_dir():
                raise ValueError(f"--env-kwargs {name}: {p.name}={str(value)!r} is not a directory")
            for must in p.must_hold:
                if not (path / must).is_file():
                    raise ValueError(f"--env-kwargs {name}: {p.name}={str(value)!r} holds no {must}")


def operator_kwargs(entry: ServerEntry, name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Check an operator's default kwargs once at start-up; convert nested bodies (e.g. FaultTree `expert`)."""
    check_operator_paths(entry, name, kwargs)
    if entry.client_kwargs is None:
        return dict(kwargs)
    known = {k: v for k, v in kwargs.items() if k in entry.client_kwargs.model_fields}
    try:
        converted = entry.client_kwargs.model_validate(known).to_env()
    except ValidationError as e:
        raise ValueError(f"--env-kwargs {name}: " + _describe(e, "kwarg", entry.allowed())) from e
    return {**kwargs, **converted}
