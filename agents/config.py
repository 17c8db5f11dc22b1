"""Typed configs for every command: each default is defined here once, every key validated once.

Hydra composes `key=value` overrides into a plain dict; these pydantic models (all `extra="forbid"`)
turn it into one typed object at the boundary, so a typo or a nonsense value (`episodes=-1`,
`episodes=1.5`, `max_steps=0`, `agent.mode=bogus`) stops the command with exit code 2 before any
episode starts, naming the key and what is allowed. The defaults reach Hydra from these models
(`register_schemas`), so `--help` shows them and no YAML repeats them.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agents.brains.model_files import AUTO, perception_for
from agents.core.agent import Agent
from agents.perception import SEPARATOR_ERROR
from agents.perception import PerceptionConfig as PerceptionDefaults

_PERCEPTION = PerceptionDefaults()
_AGENT = {k: p.default for k, p in inspect.signature(Agent).parameters.items()}  # the Agent's defaults, defined there
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
# memories that learn across episodes; their state passes from episode to episode unless carry_memory=false
CROSS_EPISODE_MEMORIES = ("reflective", "facts")
IN_PROCESS_BRAINS = ("local",)  # brains whose model runs in this process, on its cores
SEED_MAX = 2**32 - 1  # numpy's SeedSequence and Gymnasium accept 0 .. 2**32-1 for a plain int seed


class ConfigError(ValueError):
    """A user mistake in the configuration; the message says what is wrong and what is valid."""


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
    """Base of every config model: unknown keys are errors, assignments are validated too."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class EnvConfig(Strict):
    """Which env to make and how: `env=webshop`, or `env=gym env.id=... env.entry_point=module:Class`."""

    name: str = "gym"  # short name used in episode ids (`<name>-<seed>`)
    id: str  # the gymnasium id
    entry_point: str | None = None  # module:Class, to register an env that is not registered yet
    max_steps: int = Field(default=30, ge=1)  # agent steps per episode (Gymnasium's TimeLimit cuts with truncated=True)
    success_threshold: float = 1.0  # an episode succeeds when its final reward reaches this
    kwargs: dict[str, Any] = Field(default_factory=dict)  # constructor kwargs for gymnasium.make

    @field_validator("max_steps")
    @classmethod
    def _steps_bounded(cls, v: int) -> int:
        return at_most(v, MAX_STEPS, "steps per episode", STEPS_WHY)

    @field_validator("id")
    @classmethod
    def _id_set(cls, v: str) -> str:
        if not v or v == "???":
            raise ValueError("env.id is not set; e.g. env=webshop, or env=gym env.id=<registered gymnasium id>")
        return v


class PerceptionConfig(Strict):
    """How an observation becomes a prompt within a token budget (defaults: `agents.perception.PerceptionConfig`)."""

    budget_tokens: int | None = Field(default=None, ge=64)  # None = as the shipped policy was measured, else 2048
    memory_share: float = Field(default=_PERCEPTION.memory_share, ge=0.0, le=1.0)
    actions_share: float = Field(default=_PERCEPTION.actions_share, ge=0.0, le=1.0)
    max_actions_listed: int = Field(default=_PERCEPTION.max_actions_listed, ge=1)
    system_template: str = _PERCEPTION.system_template
    user_template: str = _PERCEPTION.user_template
    # transcript: past steps stay turns and the KV cache reuses them; single: one turn rebuilt every step
    layout: Literal["transcript", "single"] = cast(Literal["transcript", "single"], _PERCEPTION.layout)
    task_template: str = _PERCEPTION.task_template
    turn_template: str = _PERCEPTION.turn_template
    compact_chars: int = Field(default=_PERCEPTION.compact_chars, ge=0)
    # transcript: `compact` turns leave out what the prompt already holds (needs an adapter trained on them)
    # auto = the turns the brain's adapter was trained on (`resolve_perception`), else full
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

    mode: Literal["auto", "generate", "choose"] = _AGENT["mode"]  # auto = choose when the brain can rank
    slot_fill: Literal["task", "generate"] = _AGENT["slot_fill"]  # free-text slots: rank task-text spans, or write
    action_format: Literal["react", "tool_calls"] = _AGENT["action_format"]
    temperature: float | None = Field(default=_AGENT["temperature"], ge=0.0)  # None = the brain's own
    max_tokens: int = Field(default=_AGENT["max_tokens"], ge=1)
    # prompt tokens the memory context may take
    memory_budget_tokens: int = Field(default=_AGENT["memory_budget_tokens"], ge=0)
    observation_memory_chars: int = Field(default=_AGENT["observation_memory_chars"], ge=0)
    perception: PerceptionConfig = Field(default_factory=PerceptionConfig)


class MemoryConfig(BaseModel):
    """`memory=<preset>` or `memory.name=a+b`; the other keys are that memory kind's own options."""

    model_config = ConfigDict(extra="allow")

    name: str = "none"

    @model_validator(mode="after")
    def _moved_keys(self) -> MemoryConfig:
        extra = self.model_extra or {}
        if "budget_tokens" in extra:
            raise ValueError("memory.budget_tokens moved to agent.memory_budget_tokens")
        if "carry" in extra:
            raise ValueError("memory.carry moved to carry_memory (a run key)")
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
    """`brain=local|openai|scripted|<plugin>`; the other keys are checked against that brain's constructor."""

    model_config = ConfigDict(extra="allow")

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


def resolve_perception(agent: AgentConfig, brain: BrainConfig | None, env: str | None) -> AgentConfig:
    """`agent` with its auto perception keys set to the prompt the brain's policy was measured with
    (`model_files.perception_for`): with the embedded brain's `adapter=auto`, the env's default policy's; with a
    shipped adapter, the turns it was trained on; else full turns in 2,048 tokens. An explicit value always wins."""
    p = agent.perception
    if p.turn_style != AUTO and p.budget_tokens is not None and p.field_separator is not None:
        return agent
    adapter = brain.options.get("adapter") if brain is not None and brain.name in IN_PROCESS_BRAINS else None
    preferred = perception_for(adapter, env, p.turn_style)
    turn_style = preferred.get("turn_style", _PERCEPTION.turn_style) if p.turn_style == AUTO else p.turn_style
    budget = p.budget_tokens or preferred.get("budget_tokens", _PERCEPTION.budget_tokens)
    separator = p.field_separator
    if separator is None:
        separator = preferred.get("field_separator", "") if turn_style == preferred.get("turn_style") else ""
    update = {"turn_style": turn_style, "budget_tokens": budget, "field_separator": separator}
    return agent.model_copy(update={"perception": p.model_copy(update=update)})


class AgentInEnvConfig(Strict):
    """The keys of every command that runs an agent in an env; the agent's auto perception keys are resolved
    against the brain and env here, once, so the brain's adapter and the agent's prompt cannot disagree."""

    env: EnvConfig
    brain: BrainConfig = Field(default_factory=BrainConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)

    @model_validator(mode="after")
    def _auto_perception(self) -> AgentInEnvConfig:
        resolved = resolve_perception(self.agent, self.brain, self.env.name)
        if resolved is not self.agent:  # assigning validates again, and then nothing is left to resolve
            self.agent = resolved
        return self


class RunConfig(AgentInEnvConfig):
    """`python -m agents.run`: N episodes of one agent, interactive defaults (one lane, working memory)."""

    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    episodes: int = Field(default=5, ge=1)  # episode i uses seed = seed + i and id <env>-<seed>
    seed: int = Field(default=0, ge=0, le=SEED_MAX)
    max_steps: int | None = Field(default=None, ge=1)  # None = env.max_steps
    max_invalid: int = Field(default=5, ge=1)  # consecutive invalid outputs before the episode is truncated
    concurrency: int = Field(default=1, ge=1)  # episodes in flight
    out: str
    resume: bool = False  # continue a run whose out/ already holds episodes
    keep_messages: bool = True  # store the full prompt of every step in the trajectory
    keep_token_ids: bool = True  # store each step's prompt/output token ids and logprobs (about doubles the file)
    carry_memory: bool | None = None  # memory state passes between episodes; None = yes for reflective/facts
    remote: RemoteConfig = Field(default_factory=RemoteConfig)
    progress: bool = True
    log_level: LogLevel = "INFO"

    @field_validator("seed", "episodes", "max_steps", "max_invalid", "concurrency", mode="before")
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
    def lanes(self) -> int:
        """Episodes in flight."""
        return self.concurrency

    @property
    def steps_limit(self) -> int:
        """The step limit in force: max_steps, else the env preset's."""
        return self.max_steps or self.env.max_steps

    @property
    def carries_memory(self) -> bool:
        """Whether memory state passes from episode to episode (via out/memory_state.json)."""
        if not self.memory.enabled:
            return False
        if self.carry_memory is not None:
            return self.carry_memory
        return any(part.strip() in CROSS_EPISODE_MEMORIES for part in self.memory.name.split("+"))

    @property
    def out_dir(self) -> Path:
        """The run folder as a Path."""
        return Path(self.out)


class CollectConfig(RunConfig):
    """`python -m agents.collect`: the same engine with collection defaults (many lanes, resume, executors)."""

    episodes: int = Field(default=100, ge=1)
    # episodes in flight, all executors together; 0 = auto (`lanes`): one per in-process model, else 8
    concurrency: int = Field(default=0, ge=0)
    resume: bool = True  # rerunning the same command finishes the collection
    executor: Literal["local", "ray"] = "local"
    workers: int = Field(default=2, ge=1)  # executor=ray: Ray actors, each with its own brain
    ray_address: str | None = None  # null starts a local Ray; "auto" or ray://host:10001 joins a cluster
    ray_num_cpus: float = Field(default=1.0, gt=0)  # CPUs reserved per actor
    max_failures: int | None = Field(default=100, ge=0)  # stop scheduling once more episodes than this failed

    @property
    def lanes(self) -> int:
        """Episodes in flight. Auto: one per in-process model (`brain=local`: the model is compute-bound on the
        cores, and episodes in flight evict each other's cached prompt or, in KV slots, lengthen every decode's
        attention; bench/unified_kv_cost.py), else 8 (a remote model or a cheap brain, where lanes overlap waits)."""
        if self.concurrency:
            return self.concurrency
        if self.brain.name in IN_PROCESS_BRAINS:
            return self.workers if self.executor == "ray" else 1
        return 8


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
    return out


def register_schemas(schemas: dict[str, type[BaseModel]] | None = None) -> None:
    """Put models' defaults where Hydra composes configs: `<name>` primary nodes, and the `agent/default` group."""
    from hydra.core.config_store import ConfigStore

    cs = ConfigStore.instance()
    for name, model in (schemas or {"run_schema": RunConfig, "collect_schema": CollectConfig}).items():
        cs.store(name=name, node=schema_defaults(model))
    cs.store(group="agent", name="default", node=AgentConfig().model_dump())
    _register_plugin_presets(cs)


def _register_plugin_presets(cs: Any) -> None:
    """`brain=<plugin>` / `memory=<plugin>` work on the command line for installed plugins (a preset with just the name)."""
    from agents.brains.registry import brain_names
    from agents.memory.registry import memory_names

    conf = Path(__file__).parent / "conf"
    for group, names in (("brain", brain_names()), ("memory", memory_names())):
        for name in names:
            if not (conf / group / f"{name}.yaml").exists():
                cs.store(group=group, name=name, node={"name": name})


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
