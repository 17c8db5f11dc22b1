"""Typed config of a society run (`python -m societies.run`), the project's pattern: one pydantic
model with `extra="forbid"`, the only place defaults live; Hydra composes the overrides.

Scenario parameters are nested (`opinion.threshold=0.2`, `diffusion.p=0.05`,
`cooperation.strategies=[tit_for_tat,always_defect]`), so a key meant for another scenario is
still validated. Each scenario's parameters model lives with it (`societies/scenarios/<name>/params.py`);
the built-in ones are fields here, a new scenario's are validated by its registered model
(`params_of`). `build(cfg)` turns a config into the env and its rule brain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, ModelWrapValidatorHandler, PrivateAttr, field_validator, model_validator

from agents.config import SEED_MAX, AgentConfig, BrainConfig, LogLevel, MemoryConfig, Strict, at_most
from societies.graphs import GraphSpec
from societies.interviews import InterviewConfig
from societies.personas import make_personas
from societies.scenarios.cooperation.params import CooperationParams
from societies.scenarios.diffusion.params import DiffusionParams
from societies.scenarios.feed.params import FeedParams
from societies.scenarios.opinion.params import OpinionParams
from societies.scenarios.public_goods.params import PublicGoodsParams
from societies.scenarios.town.params import TownParams

if TYPE_CHECKING:
    from societies.env import SocietyEnv
    from societies.rules import Rule

RULE = "rule"  # brain name that means: every seat follows the scenario's rule (no Agent, no prompts)
PERSONAS_MAX = 10_000  # above this, agents are named by id (100k pydantic personas cost more than the run)
# Upper bounds, each with why (a run past them is refused at validation, before anything is allocated)
MAX_AGENTS = 100_000_000
MAX_ROUNDS = 1_000_000
MAX_TOWN_AGENTS = 10_000
AGENTS_WHY = (
    "every agent costs a few hundred bytes in each of several arrays, so 1e8 agents already need tens of GB; "
    "shard a larger population over machines (shards=N ray_address=...) or sample it"
)
ROUNDS_WHY = (
    "every round adds to the metric series, the sampled agents' paths and the recorded agents' trajectories "
    "in memory; run longer histories as resumed runs (checkpoint_every=, resume=true) or sample them"
)
TOWN_WHY = (
    "the town keeps agents x agents matrices (who knows whom, when each pair last talked: about 30 bytes a pair, "
    "3 GB at 10k residents) and renders every resident's day as text; use the feed or opinion scenarios for "
    "larger populations"
)


class SocietyRunConfig(Strict):
    """`python -m societies.run scenario=diffusion agents=1000 rounds=50 seed=0 out=runs/x`."""

    scenario: str = "opinion"  # a registered scenario (societies/scenarios/: opinion, diffusion, ... or a plugin's)
    agents: int = Field(default=100, ge=2)
    rounds: int = Field(default=50, ge=1)  # truncation (the scenario may end earlier)
    seed: int = Field(default=0, ge=0, le=SEED_MAX)
    out: str
    activity: float = Field(default=1.0, ge=0, le=1)  # each agent's chance of being active in a round
    graph: GraphSpec = Field(default_factory=GraphSpec)
    opinion: OpinionParams = Field(default_factory=OpinionParams)
    diffusion: DiffusionParams = Field(default_factory=DiffusionParams)
    cooperation: CooperationParams = Field(default_factory=CooperationParams)
    public_goods: PublicGoodsParams = Field(default_factory=PublicGoodsParams)
    feed: FeedParams = Field(default_factory=FeedParams)
    town: TownParams = Field(default_factory=TownParams)
    trajectory_agents: int = Field(default=200, ge=0)  # write per-agent trajectories for agents 0..k-1
    event_log: Literal["sqlite", "parquet"] = "sqlite"
    state_agents: int = Field(default=1000, ge=0)  # log the scenario's state of agents 0..k-1 after every round
    plots: bool = True
    log_level: LogLevel = "INFO"
    # -- brain agents (societies.seats): brain=rule keeps the vectorised rule for everyone
    brain: BrainConfig = Field(default_factory=lambda: BrainConfig(name=RULE))  # rule|scripted|local|openai|<plugin>
    memory: MemoryConfig = Field(default_factory=MemoryConfig)  # per brain agent; none|working|...
    agent: AgentConfig = Field(default_factory=lambda: AgentConfig(slot_fill="generate"))  # as agents.run's agent.*
    # ranked: a seat's free slot (opinion[...]) is offered as the scenario's discrete choices, ranked like any action;
    # free: the brain writes the value (small models copy the instruction's example); see Scenario.choices
    seat_actions: Literal["ranked", "free"] = "ranked"
    llm_fraction: float = Field(default=1.0, ge=0, le=1)  # share of seats the brain plays (the rest: the rule)
    llm_agents: int | None = Field(default=None, ge=0)  # or an exact number of brain seats (overrides the fraction)
    max_concurrency: int = Field(default=8, ge=1)  # brain calls in flight (asyncio semaphore); 1 = one at a time, sync
    brain_pool: int = Field(default=1, ge=1)  # brain instances serving the calls (local: threads split between them)
    cache: Literal["on", "off", "replay"] = "on"  # LLM call cache in out/llm_cache.sqlite; replay = never call a model
    keep_messages: bool = False  # keep each brain step's prompt in its trajectory step
    # -- interviews (societies.interviews): questions asked of agents during the run, kept in interviews.jsonl
    interview: InterviewConfig = Field(default_factory=InterviewConfig)
    # -- resume (societies.checkpoint)
    # rounds between checkpoints; 0 = none; None = every round with brain seats, none for rule-only runs
    # (at 1M rule agents a checkpoint per round triples the run time; rerunning is cheaper than resuming)
    checkpoint_every: int | None = Field(default=None, ge=0)
    resume: bool = False  # continue a run in `out` from its last checkpoint
    # -- sharding (societies.sharding): rule-brain diffusion / opinion runs over Ray actors by graph partition
    shards: int = Field(default=1, ge=1)  # 1 = one process, no Ray
    # counter-based randomness keyed by (seed, edge) / (seed, round, agent), so any shard count gives the
    # same run; None = on iff shards > 1 (`shards=1 keyed=true` is the unsharded reference of a sharded run)
    keyed: bool | None = None
    ray_address: str | None = None  # shards > 1: an existing Ray cluster; None starts a local Ray

    _params: dict[str, BaseModel] = PrivateAttr(default_factory=dict)  # params of scenarios without a field here

    @field_validator("scenario")
    @classmethod
    def _registered(cls, v: str) -> str:
        from societies.scenarios import scenario_spec

        scenario_spec(v)  # ValueError naming the valid scenarios and the closest
        return v

    @model_validator(mode="wrap")
    @classmethod
    def _scenario_params(cls, data: Any, handler: ModelWrapValidatorHandler[SocietyRunConfig]) -> SocietyRunConfig:
        """Take out the params of registered scenarios that have no field of their own (a new scenario's
        `<name>.<key>=`), validated by the scenario's params model; `params_of` hands them back."""
        params: dict[str, BaseModel] = {}
        if isinstance(data, dict):
            from societies.scenarios import SCENARIO_REGISTRY

            data = dict(data)
            for name, spec in SCENARIO_REGISTRY.loaded().items():
                if name not in cls.model_fields and spec.options is not None:
                    params[name] = spec.options.model_validate(data.pop(name, None) or {})
        model = handler(data)
        model._params = {**model._params, **params}
        return model

    def params_of(self, scenario: str) -> BaseModel | None:
        """The parameters of `scenario` (its field here, or the ones its params model validated)."""
        value = getattr(self, scenario, None) if scenario in type(self).model_fields else self._params.get(scenario)
        return value if isinstance(value, BaseModel) else None

    @classmethod
    def extra_fields(cls) -> dict[str, type[BaseModel]]:
        """The params models of registered scenarios without a field here (their `<name>.` keys)."""
        from societies.scenarios import SCENARIO_REGISTRY, scenario_names

        scenario_names()  # loads the project's scenarios and lists plugins
        return {
            name: spec.options
            for name, spec in SCENARIO_REGISTRY.loaded().items()
            if name not in cls.model_fields and spec.options is not None
        }

    @classmethod
    def extra_schema_defaults(cls) -> dict[str, Any]:
        """Defaults of those params, for Hydra, so `<name>.<key>=` needs no `+`."""
        return {name: model().model_dump() for name, model in cls.extra_fields().items()}

    @property
    def checkpoint_rounds(self) -> int:
        """Rounds between checkpoints after resolving the default (0 = none)."""
        if self.checkpoint_every is not None:
            return self.checkpoint_every
        return 1 if self.brain.name != RULE else 0

    @property
    def keyed_randomness(self) -> bool:
        """Whether the rules draw keyed randomness (always when sharded)."""
        return self.keyed if self.keyed is not None else self.shards > 1

    @model_validator(mode="after")
    def _sharded_runs_are_keyed(self) -> SocietyRunConfig:
        if self.shards > 1 and self.keyed is False:
            raise ValueError(
                "shards > 1 needs keyed randomness (keyed=true or unset): draws must not depend on the shard"
            )
        return self

    @field_validator("agents", "rounds", "seed", "trajectory_agents", "state_agents", mode="before")
    @classmethod
    def _no_bool(cls, v: object) -> object:
        if isinstance(v, bool):
            raise ValueError("expected an integer")
        return v

    @field_validator("agents")
    @classmethod
    def _agents_bounded(cls, v: int) -> int:
        return at_most(v, MAX_AGENTS, "agents", AGENTS_WHY)

    @field_validator("rounds")
    @classmethod
    def _rounds_bounded(cls, v: int) -> int:
        return at_most(v, MAX_ROUNDS, "rounds", ROUNDS_WHY)

    @model_validator(mode="after")
    def _interviewed_agents_exist(self) -> SocietyRunConfig:
        bad = [i for i in self.interview.agents if i >= self.agents]
        if bad:
            raise ValueError(f"interview.agents {bad[:5]} are not agents of this run (agents 0..{self.agents - 1})")
        if self.interview.enabled and self.shards > 1:
            raise ValueError("interviews need the whole society in one process: use shards=1 with interview.questions")
        return self

    @model_validator(mode="after")
    def _town_bounded(self) -> SocietyRunConfig:
        if self.scenario == "town":
            at_most(self.agents, MAX_TOWN_AGENTS, "agents in the town", TOWN_WHY)
        return self


def build(cfg: SocietyRunConfig) -> tuple[SocietyEnv, Rule]:
    """The env and the rule brain a config describes: the scenario's registered build function, given its
    params and (up to PERSONAS_MAX agents) personas drawn from the run's seed."""
    from societies.scenarios import scenario_spec

    n = cfg.agents
    personas = make_personas(n, cfg.seed, activity=cfg.activity) if n <= PERSONAS_MAX else None
    built: tuple[SocietyEnv, Rule] = scenario_spec(cfg.scenario).target(cfg, cfg.params_of(cfg.scenario), personas)
    return built
