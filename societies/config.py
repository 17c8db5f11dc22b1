"""Typed config of a society run (`python -m societies.run`), the project's pattern: one pydantic
model with `extra="forbid"`, the only place defaults live; Hydra composes the overrides.

Scenario parameters are nested (`opinion.threshold=0.2`, `diffusion.p=0.05`,
`cooperation.strategies=[tit_for_tat,always_defect]`), so a key meant for another scenario is
still validated. `build(cfg)` turns a config into the env and its rule brain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, ModelWrapValidatorHandler, PrivateAttr, field_validator, model_validator

from agents.config import SEED_MAX, AgentConfig, BrainConfig, LogLevel, MemoryConfig, Strict, at_most
from societies.graphs import GraphSpec
from societies.interviews import InterviewConfig
from societies.personas import make_personas

if TYPE_CHECKING:
    from societies.env import SocietyEnv
    from societies.rules import Rule

DEFAULT_STRATEGIES = [
    "tit_for_tat", "always_cooperate", "always_defect", "grudger", "tit_for_two_tats", "pavlov", "random",
]  # fmt: skip
DEFAULT_PG_STRATEGIES = [
    "conditional", "reputation_conditional", "conditional", "reputation_conditional", "free_rider",
]  # fmt: skip
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


class OpinionParams(Strict):
    model: Literal["deffuant", "degroot"] = "deffuant"
    threshold: float = Field(default=0.2, gt=0, le=1)  # Deffuant's bounded-confidence threshold
    mu: float = Field(default=0.5, gt=0, le=1)  # how far a compromise moves


class DiffusionParams(Strict):
    p: float = Field(default=0.25, ge=0, le=1)  # independent-cascade transmission probability per edge
    seeds: int = Field(default=1, ge=1)  # agents that post at round 0


class PublicGoodsParams(Strict):
    """A linear public-goods game in groups (`societies/scenarios/public_goods.py`); defaults as Fehr & Gächter 2000."""

    group_size: int = Field(default=4, ge=2)  # G, members per group
    r: float = Field(default=1.6, gt=1)  # pot multiplier; 1 < r < G makes it a social dilemma
    endowment: float = Field(default=20.0, gt=0)  # tokens each member gets per round
    reputation: bool = False  # public image scores shown, and groups formed by them (assortative matching)
    recency: float = Field(default=0.5, gt=0, le=1)  # weight of the latest round in the image and remembered means
    strategies: list[str] = Field(default_factory=lambda: list(DEFAULT_PG_STRATEGIES))  # cycled over the agents
    bias: float = Field(default=0.9, ge=0, le=1)  # conditional cooperators give bias x what they saw (self-serving < 1)
    start: float = Field(default=0.6, ge=0, le=1)  # conditional cooperators' first-round share of the endowment
    spread: float = Field(default=0.2, ge=0, le=1)  # ... drawn uniformly from start +- spread

    @model_validator(mode="after")
    def _dilemma(self) -> PublicGoodsParams:
        if self.r >= self.group_size:
            raise ValueError(
                f"r must be below group_size for a social dilemma (r={self.r:g}, group_size={self.group_size})"
            )
        return self

    @field_validator("strategies")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        from societies.rules import PG_STRATEGIES

        unknown = sorted(set(v) - set(PG_STRATEGIES))
        if unknown or not v:
            raise ValueError(f"unknown public goods strategies {unknown}; known: {', '.join(PG_STRATEGIES)}")
        return v


class CooperationParams(Strict):
    match_length: int = Field(default=50, ge=1)  # moves per pair
    strategies: list[str] = Field(default_factory=lambda: list(DEFAULT_STRATEGIES))  # cycled over the agents


class FeedParams(Strict):
    """The feed scenario (`societies.scenarios.feed`) and its rule (`societies.rules.FeedRule`)."""

    recommender: str = "recency"  # recency|popularity|similarity|random, or an import path package.module:Name
    feed_size: int = Field(default=10, ge=1, le=50)  # posts per feed (at most 50: a feed fits one observation)
    window: int = Field(default=3, ge=1)  # rounds a post stays a candidate for feeds
    p_repost: float = Field(default=0.02, ge=0, le=1)  # repost probability per exposure (a post in the feed)
    p_like: float = Field(default=0.05, ge=0, le=1)  # like probability per exposure
    p_follow: float = Field(default=0.2, ge=0, le=1)  # follow the author of the last liked post
    p_post: float = Field(default=0.02, ge=0, le=1)  # write a post on one's interest
    off_topic: float = Field(default=0.25, ge=0, le=1)  # repost/like factor for posts off one's interest (0 = never)
    topics: int = Field(default=5, ge=1, le=64)  # interest groups
    seeds: int = Field(default=10, ge=0)  # original posts at round 0
    embedder: Literal["topics", "hashing", "minilm"] = "topics"  # what embeds post[<text>] (topics: no text model)

    @field_validator("recommender")
    @classmethod
    def _loadable(cls, v: str) -> str:
        from societies.recommenders import load_recommender

        load_recommender(v)  # a bad name or import path is a config error, before anything runs
        return v


class TownParams(Strict):
    """The small-town day (`societies/scenarios/town.py`) and its rule (`societies.rules.TownRoutine`)."""

    start_hour: int = Field(default=7, ge=0, le=23)  # the day's first round
    end_hour: int = Field(default=23, ge=1, le=24)  # the day ends (the scenario terminates) at this hour
    step_minutes: Literal[15, 20, 30, 60] = 60  # clock time per round
    news: str = "{host} is hosting a Valentine's Day party at the {place} at {time}."  # {host} {place} {time} filled
    news_keywords: list[str] = Field(default_factory=lambda: ["party"])  # an utterance with one of these informs
    informed: int = Field(default=1, ge=0)  # agents 0..k-1 know the news at the start (agent 0 is the host)
    party_location: str = "cafe"
    party_hour: float = Field(default=17.0, ge=0, lt=24)
    party_hours: float = Field(default=2.0, gt=0)  # how long the party lasts (attendance is counted over it)
    max_conversation_turns: int = Field(default=3, ge=1)  # rounds a conversation can last
    max_say_chars: int = Field(default=200, ge=10, le=900)  # longest say[...]
    talk_cooldown: int = Field(default=3, ge=0)  # rule agents: rounds before talking with the same person again

    @model_validator(mode="after")
    def _day(self) -> TownParams:
        if self.end_hour <= self.start_hour:
            raise ValueError(f"end_hour ({self.end_hour}) must be after start_hour ({self.start_hour})")
        if not self.start_hour <= self.party_hour < self.end_hour:
            raise ValueError(
                f"party_hour ({self.party_hour:g}) must fall within the day ({self.start_hour}-{self.end_hour})"
            )
        return self


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
