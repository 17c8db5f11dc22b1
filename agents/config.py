"""Typed configs for every command: each default is defined here once, every key validated once.

Hydra composes `key=value` overrides into a plain dict; these pydantic models (all `extra="forbid"`)
turn it into one typed object at the boundary, so a typo or a nonsense value (`episodes=-1`,
`episodes=1.5`, `max_steps=0`, `agent.mode=bogus`) stops the command with exit code 2 before any
episode starts, naming the key and what is allowed. The defaults reach Hydra from these models
(`agents.cli.register_schemas`), so `--help` shows them and no YAML repeats them.

This module is the floor of `agents` (docs/architecture.md, "Layers"): it imports nothing of the agent's parts.
What a config means once the parts are known (the brain's registered defaults, `adapter=auto`, the perception
keys left at auto, lanes, the step limit and the run's identity) is fixed once, by `agents.resolve.resolve`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
DEFAULT_STEP_LIMIT = 30  # for an env registered without a step limit (`env=gym env.id=...`)
SEED_MAX = 2**32 - 1  # numpy's SeedSequence and Gymnasium accept 0 .. 2**32-1 for a plain int seed


class ConfigError(ValueError):
    """A user mistake in the configuration; the message says what is wrong and what is valid."""


# A field so marked does not count for a run's identity (`agents.resolve.run_hash`): it says how or where a run
# executes, not what its episodes are, so it may change between a run and its resume.
NOT_IDENTITY: dict[str, Any] = {"identity": False}


def identity_fields(model: type[BaseModel]) -> frozenset[str]:
    """The fields of `model` marked `NOT_IDENTITY`."""
    return frozenset(
        name
        for name, f in model.model_fields.items()
        if isinstance(f.json_schema_extra, dict) and f.json_schema_extra.get("identity") is False
    )


def identity(cfg: BaseModel) -> dict[str, Any]:
    """The config as plain JSON, less the fields that do not count for its identity."""
    return cfg.model_dump(mode="json", exclude=set(identity_fields(type(cfg))))


AUTO = "auto"  # a key the resolver fills in from the parts (`agents.resolve`)
# the prompt's default text: `agent.perception.*_template` overrides each (`str.format` fields as in agents.perception)
DEFAULT_SYSTEM = (
    "You are an agent acting in a text environment to accomplish a task. "
    "Each turn you see the task, what you remember, the current observation and the actions "
    "you can take. Choose one action per turn.\n{format}"
)
DEFAULT_USER = "Task: {instruction}\n\n{memory_block}Observation:\n{observation}\n\n{feedback_block}{actions_block}"
DEFAULT_TASK = "Task: {instruction}"
DEFAULT_TURN = "{memory_block}Observation:\n{observation}\n\n{feedback_block}{actions_block}"
LAYOUTS = ("transcript", "single")
TURN_STYLES = ("full", "compact")
DEFAULT_BUDGET_TOKENS = 2048  # `budget_tokens` at auto with no measured policy to follow
DEFAULT_TURN_STYLE = "full"  # `turn_style` at auto likewise
SEPARATOR_ERROR = "perception field_separator must show a character (e.g. ' [SEP] '), or be empty for none; got {!r}"


# Upper bounds on sizes, each with why: a size past them would exhaust memory or time long before it finished,
# so it is refused (exit 2) at validation, before anything is allocated.
MAX_EPISODES = 10_000_000
MAX_CONCURRENCY = 1024
MAX_STEPS = 10_000
EPISODES_WHY = (
    "a run keeps every episode's seed and id in memory and resume reads the whole store; split a larger "
    "collection into runs with their own out= and seed="
)
CONCURRENCY_WHY = (
    "each lane holds an episode in flight (its env, prompt and history) and more only queue on the brain; "
    "scale out with executor=ray workers=N instead"
)
STEPS_WHY = "an episode's steps stay in memory until it ends and are written as one line of the store"


def at_most(value: int, cap: int, what: str, why: str) -> int:
    """`value` if it is within `cap`, else a ValueError giving the bound and the reason for it."""
    if value > cap:
        raise ValueError(f"at most {cap:,} {what}: {why}")
    return value


class Strict(BaseModel):
    """Base of every config model: unknown keys are errors, and a validated config is never changed in place."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class EnvConfig(Strict):
    """Which env to make and how: `env=webshop`, or `env=gym env.id=... env.entry_point=module:Class`."""

    name: str = "gym"  # short name used in episode ids (`<name>-<seed>`)
    id: str  # the gymnasium id
    entry_point: str | None = None  # module:Class, to register an env that is not registered yet
    # agent steps per episode (Gymnasium's TimeLimit cuts with truncated=True); None = the env's registered limit
    # (set by `agents.resolve`, so the resolved config and its identity record the limit in force)
    max_steps: int | None = Field(default=None, ge=1)
    # an episode succeeds when its final reward reaches this; None: when the env says so (`info["success"]` at the
    # last step: BabyAI's solved levels score below 1), else at final reward 1
    success_threshold: float | None = None
    kwargs: dict[str, Any] = Field(default_factory=dict)  # constructor kwargs for gymnasium.make

    @field_validator("max_steps")
    @classmethod
    def _steps_bounded(cls, v: int | None) -> int | None:
        return v if v is None else at_most(v, MAX_STEPS, "steps per episode", STEPS_WHY)

    @field_validator("id")
    @classmethod
    def _id_set(cls, v: str) -> str:
        if not v or v == "???":
            raise ValueError("env.id is not set; e.g. env=webshop, or env=gym env.id=<registered gymnasium id>")
        return v


class PerceptionConfig(Strict):
    """How an observation becomes a prompt within a token budget (the defaults of `agents.perception` too)."""

    budget_tokens: int | None = Field(default=None, ge=64)  # None = as the shipped policy was measured, else 2048
    memory_share: float = Field(default=0.3, ge=0.0, le=1.0)
    actions_share: float = Field(default=0.25, ge=0.0, le=1.0)
    max_actions_listed: int = Field(default=60, ge=1)
    system_template: str = DEFAULT_SYSTEM
    user_template: str = DEFAULT_USER  # the `single` layout's one user turn
    # transcript: past steps stay turns and the KV cache reuses them; single: one turn rebuilt every step
    layout: Literal["transcript", "single"] = "transcript"
    task_template: str = DEFAULT_TASK  # `transcript`: appended to the system turn
    turn_template: str = DEFAULT_TURN  # `transcript`: each step's user turn
    compact_chars: int = Field(default=200, ge=0)  # `transcript`: observation kept in a compacted past turn
    # transcript: `compact` turns leave out what the prompt already holds (needs an adapter trained on them)
    # auto = the turns the brain's adapter was trained on (`agents.resolve.resolve_perception`), else full
    turn_style: Literal["auto", "full", "compact"] = "auto"
    # an env's field separator (WebShop's ` [SEP] `) shown as line breaks; None = as the env's
    # default policy was measured (ENV_PERCEPTION) when the turns are the ones it was measured on, else none
    field_separator: str | None = None

    @field_validator("field_separator")
    @classmethod
    def _visible(cls, v: str | None) -> str | None:
        if v and not v.strip():
            raise ValueError(SEPARATOR_ERROR.format(v))
        return v


class AgentConfig(Strict):
    """How the agent acts: generate text or choose among the listed actions, and its prompt budget."""

    mode: Literal["auto", "generate", "choose"] = "auto"  # auto = choose when the brain can rank
    slot_fill: Literal["task", "generate"] = "task"  # free-text slots: rank task-text spans, or write
    action_format: Literal["react", "tool_calls"] = "react"
    temperature: float | None = Field(default=None, ge=0.0)  # None = the brain's own
    max_tokens: int = Field(default=256, ge=1)
    # prompt tokens the memory context may take
    memory_budget_tokens: int = Field(default=512, ge=0)
    observation_memory_chars: int = Field(default=400, ge=0)
    perception: PerceptionConfig = Field(default_factory=PerceptionConfig)


class MemoryConfig(BaseModel):
    """`memory=<preset>` or `memory.name=a+b`; the other keys are that memory kind's own options."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str = "none"
    # keys that used to live here -> where they are now (the CLI's key check says so too)
    moved_keys: ClassVar[dict[str, str]] = {
        "budget_tokens": "agent.memory_budget_tokens",
        "carry": "carry_memory (a run key)",
    }

    @model_validator(mode="after")
    def _moved_keys(self) -> MemoryConfig:
        for key, now in self.moved_keys.items():
            if key in (self.model_extra or {}):
                raise ValueError(f"memory.{key} moved to {now}")
        return self

    @property
    def enabled(self) -> bool:
        """False for memory=none."""
        return self.name not in ("", "none")

    @property
    def options(self) -> dict[str, Any]:
        """The memory kind's own options (everything but name)."""
        return dict(self.model_extra or {})


class BrainConfig(BaseModel):
    """`brain=local|openai|scripted|<plugin>`; the other keys are checked against that brain's options model (and
    its registered defaults filled in) by `agents.resolve`, which knows the registered brains."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str = "local"

    @property
    def options(self) -> dict[str, Any]:
        """The brain's constructor options (everything but name)."""
        return dict(self.model_extra or {})


class RemoteConfig(Strict):
    """Run the env in an env server (`python -m envs.server`) instead of in-process."""

    url: str | None = None  # e.g. http://127.0.0.1:8000
    token: str | None = None  # default: $AGENTSIM_SERVER_TOKEN
    timeout_s: float = Field(default=60.0, gt=0)


class AgentInEnvConfig(Strict):
    """The keys of every command that runs an agent in an env; the agent's auto perception keys are resolved
    against the brain and env by `agents.resolve`, once, so the brain's adapter and the agent's prompt agree."""

    env: EnvConfig
    brain: BrainConfig = Field(default_factory=BrainConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)


class RunConfig(AgentInEnvConfig):
    """`python -m agents.run`: N episodes of one agent, interactive defaults (one lane, working memory)."""

    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    # episode i uses seed = seed + i and id <env>-<seed>; more episodes extend the same run
    episodes: int = Field(default=5, ge=1, json_schema_extra=NOT_IDENTITY)
    seed: int = Field(default=0, ge=0, le=SEED_MAX)
    max_steps: int | None = Field(default=None, ge=1)  # None = env.max_steps
    max_invalid: int = Field(default=5, ge=1)  # consecutive invalid outputs before the episode is truncated
    concurrency: int = Field(default=1, ge=1, json_schema_extra=NOT_IDENTITY)  # episodes in flight
    # an env of named tasks (a dataset folder): run each task this many times (episodes = tasks x trials)
    trials: int | None = Field(default=None, ge=1, json_schema_extra=NOT_IDENTITY)
    out: str = Field(json_schema_extra=NOT_IDENTITY)
    # continue a run whose out/ already holds episodes
    resume: bool = Field(default=False, json_schema_extra=NOT_IDENTITY)
    # store the full prompt of every step in the trajectory
    keep_messages: bool = Field(default=True, json_schema_extra=NOT_IDENTITY)
    # store each step's prompt/output token ids and logprobs (about doubles the file)
    keep_token_ids: bool = Field(default=True, json_schema_extra=NOT_IDENTITY)
    carry_memory: bool | None = None  # memory state passes between episodes; None = yes for reflective/facts
    remote: RemoteConfig = Field(default_factory=RemoteConfig, json_schema_extra=NOT_IDENTITY)
    progress: bool = Field(default=True, json_schema_extra=NOT_IDENTITY)
    log_level: LogLevel = Field(default="INFO", json_schema_extra=NOT_IDENTITY)

    @field_validator("seed", "episodes", "max_steps", "max_invalid", "concurrency", "trials", mode="before")
    @classmethod
    def _no_bool(cls, v: Any) -> Any:
        if isinstance(v, bool):
            raise ValueError("expected an integer, not a boolean")
        return v

    @field_validator("episodes")
    @classmethod
    def _episodes_bounded(cls, v: int) -> int:
        return at_most(v, MAX_EPISODES, "episodes per run", EPISODES_WHY)

    @field_validator("concurrency")
    @classmethod
    def _concurrency_bounded(cls, v: int) -> int:
        return at_most(v, MAX_CONCURRENCY, "episodes in flight (concurrency)", CONCURRENCY_WHY)

    @field_validator("max_steps")
    @classmethod
    def _steps_bounded(cls, v: int | None) -> int | None:
        return v if v is None else at_most(v, MAX_STEPS, "steps per episode (max_steps)", STEPS_WHY)

    @model_validator(mode="after")
    def _seeds_in_range(self) -> RunConfig:
        last = self.seed + self.episodes - 1
        if last > SEED_MAX:
            raise ValueError(
                f"episode i runs with seed seed+i, and the last one ({last:,}) is over the largest seed {SEED_MAX:,}; "
                f"lower seed= or episodes="
            )
        return self

    @property
    def out_dir(self) -> Path:
        """The run folder as a Path."""
        return Path(self.out)


class CollectConfig(RunConfig):
    """`python -m agents.collect`: the same engine with collection defaults (many lanes, resume, executors)."""

    episodes: int = Field(default=100, ge=1, json_schema_extra=NOT_IDENTITY)
    # episodes in flight, all executors together; 0 = auto (`agents.resolve.lanes`): one per in-process model, else 8
    concurrency: int = Field(default=0, ge=0, json_schema_extra=NOT_IDENTITY)
    # rerunning the same command finishes the collection
    resume: bool = Field(default=True, json_schema_extra=NOT_IDENTITY)
    executor: Literal["local", "ray"] = Field(default="local", json_schema_extra=NOT_IDENTITY)
    # executor=ray: Ray actors, each with its own brain
    workers: int = Field(default=2, ge=1, json_schema_extra=NOT_IDENTITY)
    # null starts a local Ray; "auto" or ray://host:10001 joins a cluster
    ray_address: str | None = Field(default=None, json_schema_extra=NOT_IDENTITY)
    ray_num_cpus: float = Field(default=1.0, gt=0, json_schema_extra=NOT_IDENTITY)  # CPUs reserved per actor
    # stop scheduling once more episodes than this failed
    max_failures: int | None = Field(default=100, ge=0, json_schema_extra=NOT_IDENTITY)


# keys set in YAML (groups, interpolations, Hydra's own) rather than by the models' defaults
_NOT_DEFAULTED = ("env", "brain", "memory", "agent", "out")


def schema_defaults(model: type[BaseModel]) -> dict[str, Any]:
    """The model's top-level defaults as a plain dict, for Hydra's ConfigStore."""
    out: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        if name in _NOT_DEFAULTED or field.is_required():
            continue
        value = field.get_default(call_default_factory=True)
        out[name] = value.model_dump() if isinstance(value, BaseModel) else value
    extra = getattr(model, "extra_schema_defaults", None)  # keys a model takes from its registered parts
    return {**out, **(extra() if callable(extra) else {})}


def describe_errors(err: ValidationError, model: type[BaseModel]) -> str:
    """One line per problem: the dotted key, what is wrong, and the valid keys where the key is unknown."""
    lines = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"])
        if e["type"] == "extra_forbidden":
            valid = _valid_keys(model, e["loc"][:-1])
            lines.append(f"unknown key {loc!r}" + (f"; valid keys here: {', '.join(valid)}" if valid else ""))
        elif e["type"] == "missing":
            lines.append(f"{loc} is required")
        else:
            got = e.get("input")
            shown = "" if isinstance(got, (dict, list)) else f" (got {got!r})"
            lines.append(f"{loc or 'config'}: {e['msg']}{shown}")
    return "; ".join(lines)


def _valid_keys(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    current: Any = model
    for part in loc:
        field = getattr(current, "model_fields", {}).get(part)
        if field is None:
            return []
        current = field.annotation
    fields = getattr(current, "model_fields", None)
    return sorted(fields) if fields else []


def validate_config(model: type[BaseModel], cfg: dict[str, Any] | BaseModel) -> Any:
    """`model.model_validate(cfg)` with errors turned into one readable `ConfigError`."""
    if isinstance(cfg, model):
        return cfg
    if isinstance(cfg, BaseModel):
        cfg = cfg.model_dump()
    plain = {k: v for k, v in dict(cfg).items() if k != "hydra"}
    try:
        return model.model_validate(plain)
    except ValidationError as e:
        raise ConfigError(describe_errors(e, model)) from None
