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
from typing import Any, ClassVar, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agents.brains.model_files import AUTO, perception_for
from agents.brains.registry import in_process
from agents.core.agent import Agent
from agents.perception import SEPARATOR_ERROR
from agents.perception import PerceptionConfig as PerceptionDefaults

_PERCEPTION = PerceptionDefaults()
_AGENT = {k: p.default for k, p in inspect.signature(Agent).parameters.items()}  # the Agent's defaults, defined there
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
DEFAULT_STEP_LIMIT = 30  # for an env registered without a step limit (`env=gym env.id=...`)
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
    # agent steps per episode (Gymnasium's TimeLimit cuts with truncated=True); None = the env's registered limit
    max_steps: int | None = Field(default=None, ge=1)
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

    @model_validator(mode="before")
    @classmethod
    def _registered_step_limit(cls, data: Any) -> Any:
        """`max_steps` unset: the limit the env is registered with (its one place), else 30; resolved here, once,
        so the run's config (and identity) records the limit in force."""
        if isinstance(data, dict) and data.get("max_steps") is None and data.get("id") not in (None, "", "???"):
            from envs.registry import step_limit

            data = {**data, "max_steps": step_limit(str(data["id"])) or DEFAULT_STEP_LIMIT}
        return data

    @property
    def step_limit(self) -> int:
        """The step limit in force (`max_steps`, resolved at validation)."""
        return self.max_steps or DEFAULT_STEP_LIMIT


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
    """`brain=local|openai|scripted|<plugin>`; the other keys are checked against that brain's constructor."""

    model_config = ConfigDict(extra="allow")

    name: str = "local"

    @model_validator(mode="after")
    def _registered_defaults(self) -> BrainConfig:
        """Fill in the brain's registered option defaults, so `brain=local` from the command line and
        `{"name": "local"}` from code are the same config (and the same run identity)."""
        from agents.brains.registry import BRAIN_REGISTRY

        if self.name in BRAIN_REGISTRY:
            try:
                defaults = BRAIN_REGISTRY.get(self.name).option_defaults()
            except ValueError:  # a plugin that fails to load: named when the brain is built
                return self
            self.__pydantic_extra__ = {**defaults, **(self.__pydantic_extra__ or {})}
        return self

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
    adapter = brain.options.get("adapter") if brain is not None and in_process(brain.name) else None
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
    # an env of named tasks (a dataset folder): run each task this many times (episodes = tasks x trials)
    trials: int | None = Field(default=None, ge=1)
    out: str
    resume: bool = False  # continue a run whose out/ already holds episodes
    keep_messages: bool = True  # store the full prompt of every step in the trajectory
    keep_token_ids: bool = True  # store each step's prompt/output token ids and logprobs (about doubles the file)
    carry_memory: bool | None = None  # memory state passes between episodes; None = yes for reflective/facts
    remote: RemoteConfig = Field(default_factory=RemoteConfig)
    progress: bool = True
    log_level: LogLevel = "INFO"

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
    def lanes(self) -> int:
        """Episodes in flight."""
        return self.concurrency

    @property
    def steps_limit(self) -> int:
        """The step limit in force: max_steps, else the env's (env.max_steps, else its registered limit)."""
        return self.max_steps or self.env.step_limit

    @property
    def carries_memory(self) -> bool:
        """Whether memory state passes from episode to episode (via out/memory_state.json)."""
        if not self.memory.enabled:
            return False
        if self.carry_memory is not None:
            return self.carry_memory
        from agents.memory.registry import carries_state

        return carries_state(self.memory.name)

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
        if in_process(self.brain.name):
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
    extra = getattr(model, "extra_schema_defaults", None)  # keys a model takes from its registered parts
    return {**out, **(extra() if callable(extra) else {})}


def register_schemas(schemas: dict[str, type[BaseModel]] | None = None) -> None:
    """Put models' defaults where Hydra composes configs: `<name>` primary nodes, and the `agent/default` group."""
    from hydra.core.config_store import ConfigStore

    cs = ConfigStore.instance()
    for name, model in (schemas or {"run_schema": RunConfig, "collect_schema": CollectConfig}).items():
        cs.store(name=name, node=schema_defaults(model))
    cs.store(group="agent", name="default", node=AgentConfig().model_dump())
    _register_plugin_presets(cs)


def _register_plugin_presets(cs: Any) -> None:
    """`env=<name>`, `brain=<name>` and `memory=<name>` work on the command line for every registered part: a
    preset made from its registration (a brain's option defaults, an env's id), unless a YAML file holds one."""
    from agents.brains.registry import BRAIN_REGISTRY, brain_names
    from agents.memory.registry import memory_names
    from envs.registry import ENV_REGISTRY, env_names

    conf = Path(__file__).parent / "conf"
    presets: dict[str, dict[str, Any]] = {}
    for name in brain_names():
        presets[f"brain/{name}"] = {"name": name, **_brain_defaults(BRAIN_REGISTRY, name)}
    for name in memory_names():
        presets[f"memory/{name}"] = {"name": name}
    env_defaults = {k: f.get_default(call_default_factory=True) for k, f in EnvConfig.model_fields.items()}
    for name in env_names():
        presets[f"env/{name}"] = {**env_defaults, "name": name, "id": ENV_REGISTRY.get(name).id}
    for key, node in presets.items():
        group, name = key.split("/", 1)
        if not (conf / group / f"{name}.yaml").exists():
            cs.store(group=group, name=name, node=node)


def _brain_defaults(registry: Any, name: str) -> dict[str, Any]:
    """A brain's option defaults for its preset; none for a plugin that fails to load (it fails when used)."""
    try:
        return dict(registry.get(name).option_defaults())
    except ValueError:  # PluginError: named when the brain is built
        return {}


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
