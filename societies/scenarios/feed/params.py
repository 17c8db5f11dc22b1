"""The feed scenario's parameters (`feed.<key>=`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from agents.config import Strict
from societies.scenarios.feed.recommender import load_recommender


class FeedParams(Strict):
    """The feed scenario (`scenario.py` here) and its rule (`rule.py`, `FeedRule`)."""

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
        load_recommender(v)  # a bad name or import path is a config error, before anything runs
        return v
