"""Typed config of a society run (`python -m societies.run`), the project's pattern: one pydantic
model with `extra="forbid"`, the only place defaults live; Hydra composes the overrides.

Scenario parameters are nested (`opinion.threshold=0.2`, `diffusion.p=0.05`,
`cooperation.strategies=[tit_for_tat,always_defect]`), so a key meant for another scenario is
still validated. `build(cfg)` turns a config into the env and its rule brain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import Field, field_validator

from agents.config import SEED_MAX, AgentConfig, BrainConfig, LogLevel, MemoryConfig, Strict
from societies.graphs import GraphSpec, build_graph
from societies.personas import make_personas

if TYPE_CHECKING:
    from societies.env import SocietyEnv
    from societies.rules import Rule

ScenarioName = Literal["opinion", "diffusion", "cooperation"]
DEFAULT_STRATEGIES = [
    "tit_for_tat", "always_cooperate", "always_defect", "grudger", "tit_for_two_tats", "pavlov", "random",
]  # fmt: skip
RULE = "rule"  # brain name that means: every seat follows the scenario's rule (no Agent, no prompts)
PERSONAS_MAX = 10_000  # above this, agents are named by id (100k pydantic personas cost more than the run)


class OpinionParams(Strict):
    model: Literal["deffuant", "degroot"] = "deffuant"
    threshold: float = Field(default=0.2, gt=0, le=1)  # Deffuant's bounded-confidence threshold
    mu: float = Field(default=0.5, gt=0, le=1)  # how far a compromise moves


class DiffusionParams(Strict):
    p: float = Field(default=0.25, ge=0, le=1)  # independent-cascade transmission probability per edge
    seeds: int = Field(default=1, ge=1)  # agents that post at round 0


class CooperationParams(Strict):
    match_length: int = Field(default=50, ge=1)  # moves per pair
    strategies: list[str] = Field(default_factory=lambda: list(DEFAULT_STRATEGIES))  # cycled over the agents


class SocietyRunConfig(Strict):
    """`python -m societies.run scenario=diffusion agents=1000 rounds=50 seed=0 out=runs/x`."""

    scenario: ScenarioName = "opinion"
    agents: int = Field(default=100, ge=2)
    rounds: int = Field(default=50, ge=1)  # truncation (the scenario may end earlier)
    seed: int = Field(default=0, ge=0, le=SEED_MAX)
    out: str
    activity: float = Field(default=1.0, ge=0, le=1)  # each agent's chance of being active in a round
    graph: GraphSpec = Field(default_factory=GraphSpec)
    opinion: OpinionParams = Field(default_factory=OpinionParams)
    diffusion: DiffusionParams = Field(default_factory=DiffusionParams)
    cooperation: CooperationParams = Field(default_factory=CooperationParams)
    trajectory_agents: int = Field(default=200, ge=0)  # write per-agent trajectories for agents 0..k-1
    event_log: Literal["sqlite", "parquet"] = "sqlite"
    plots: bool = True
    log_level: LogLevel = "INFO"
    # -- brain agents (societies.seats): brain=rule keeps the vectorised rule for everyone
    brain: BrainConfig = Field(default_factory=lambda: BrainConfig(name=RULE))  # rule|scripted|local|openai|<plugin>
    memory: MemoryConfig = Field(default_factory=MemoryConfig)  # per brain agent; none|working|...
    agent: AgentConfig = Field(default_factory=lambda: AgentConfig(slot_fill="generate"))  # as agents.run's agent.*
    llm_fraction: float = Field(default=1.0, ge=0, le=1)  # share of seats the brain plays (the rest: the rule)
    llm_agents: int | None = Field(default=None, ge=0)  # or an exact number of brain seats (overrides the fraction)
    max_concurrency: int = Field(default=8, ge=1)  # brain calls in flight (asyncio semaphore); 1 = one at a time, sync
    brain_pool: int = Field(default=1, ge=1)  # brain instances serving the calls (local: threads split between them)
    cache: Literal["on", "off", "replay"] = "on"  # LLM call cache in out/llm_cache.sqlite; replay = never call a model
    keep_messages: bool = False  # keep each brain step's prompt in its trajectory step
    # -- resume (societies.checkpoint)
    # rounds between checkpoints; 0 = none; None = every round with brain seats, none for rule-only runs
    # (at 1M rule agents a checkpoint per round triples the run time; rerunning is cheaper than resuming)
    checkpoint_every: int | None = Field(default=None, ge=0)
    resume: bool = False  # continue a run in `out` from its last checkpoint

    @property
    def checkpoint_rounds(self) -> int:
        """Rounds between checkpoints after resolving the default (0 = none)."""
        if self.checkpoint_every is not None:
            return self.checkpoint_every
        return 1 if self.brain.name != RULE else 0

    @field_validator("agents", "rounds", "seed", "trajectory_agents", mode="before")
    @classmethod
    def _no_bool(cls, v: object) -> object:
        if isinstance(v, bool):
            raise ValueError("expected an integer")
        return v


def build(cfg: SocietyRunConfig) -> tuple[SocietyEnv, Rule]:
    """The env and the rule brain a config describes (the graph is built from the run's seed)."""
    from societies.env import SocietyEnv
    from societies.rules import Deffuant, DeGroot, IndependentCascade, IPDStrategies
    from societies.scenarios.cooperation import CooperationScenario
    from societies.scenarios.diffusion import DiffusionScenario
    from societies.scenarios.opinion import OpinionScenario

    n = cfg.agents
    personas = make_personas(n, cfg.seed, activity=cfg.activity) if n <= PERSONAS_MAX else None
    if cfg.scenario == "opinion":
        graph = build_graph(cfg.graph, n, cfg.seed, default="complete")
        o = cfg.opinion
        rule = Deffuant(o.threshold) if o.model == "deffuant" else DeGroot()
        op = OpinionScenario(graph, mu=o.mu, personas=personas if personas and len(personas) == graph.n else None)
        if op.personas is None and cfg.activity < 1:
            op.activity = np.full(op.n, cfg.activity)
        return SocietyEnv(op, cfg.rounds), rule
    if cfg.scenario == "diffusion":
        graph = build_graph(cfg.graph, n, cfg.seed, default="erdos_renyi")
        d = cfg.diffusion
        di = DiffusionScenario(
            graph,
            n_seeds=d.seeds,
            personas=personas if personas and len(personas) == graph.n else None,
            activity=cfg.activity,
        )
        return SocietyEnv(di, cfg.rounds), IndependentCascade(d.p)
    c = cfg.cooperation
    strategies = [c.strategies[i % len(c.strategies)] for i in range(n)]
    if personas is not None:
        personas = [p.model_copy(update={"traits": {"strategy": s}}) for p, s in zip(personas, strategies)]
    sc = CooperationScenario(n, match_length=c.match_length, personas=personas)
    return SocietyEnv(sc, cfg.rounds), IPDStrategies(strategies)
