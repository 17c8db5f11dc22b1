"""The feed: posts, reposts, likes and follows, each feed chosen by a pluggable recommender.

The scenario (`scenario.py`), its rule (`rule.py`) and its parameters (`params.py`); the build function
below registers it as `scenario=feed` (`feed.<key>=` sets its parameters).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from societies.env import SocietyEnv
from societies.graphs import build_graph
from societies.personas import Persona
from societies.scenarios import register_scenario
from societies.scenarios.feed.params import FeedParams
from societies.scenarios.feed.queries import FeedQueries
from societies.scenarios.feed.recommender import (
    RECOMMENDERS,
    Recommender,
    check_recommender,
    load_recommender,
    register_recommender,
)
from societies.scenarios.feed.rule import FeedRule
from societies.scenarios.feed.scenario import FeedScenario
from societies.scenarios.feed.text import FOLLOW, LIKE, NOTHING, POST, POST_CHARS, REPOST, topic_table

if TYPE_CHECKING:
    from societies.config import SocietyRunConfig
    from societies.rules import Rule


__all__ = [
    "FOLLOW",
    "FeedParams",
    "FeedQueries",
    "FeedRule",
    "FeedScenario",
    "LIKE",
    "NOTHING",
    "POST",
    "POST_CHARS",
    "RECOMMENDERS",
    "REPOST",
    "Recommender",
    "build_feed",
    "check_recommender",
    "load_recommender",
    "register_recommender",
    "topic_table",
]


@register_scenario("feed", params=FeedParams)
def build_feed(cfg: SocietyRunConfig, params: FeedParams, personas: list[Persona] | None) -> tuple[SocietyEnv, Rule]:
    """The feed: follows start as the social graph; interests are a seeded draw, kept in the personas' traits."""
    f = params
    graph = build_graph(cfg.graph, cfg.agents, cfg.seed, default="erdos_renyi")
    interest = np.random.default_rng([cfg.seed, 0xFE]).integers(0, f.topics, size=graph.n)
    if personas is not None and len(personas) == graph.n:
        names = [name for name, _ in topic_table(f.topics)]
        personas = [
            p.model_copy(update={"traits": {**p.traits, "interest": names[t]}})
            for p, t in zip(personas, interest.tolist())
        ]
    else:
        personas = None
    sc = FeedScenario(
        graph,
        recommender=f.recommender,
        feed_size=f.feed_size,
        window=f.window,
        topics=f.topics,
        n_seeds=min(f.seeds, graph.n),
        interest=interest,
        personas=personas,
        activity=cfg.activity,
        embedder=f.embedder,
    )
    return SocietyEnv(sc, cfg.rounds), FeedRule(f.p_repost, f.p_like, f.p_follow, f.p_post, f.off_topic)
