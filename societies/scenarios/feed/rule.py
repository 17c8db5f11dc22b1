"""The feed scenario's rule: a feed user who reposts, follows, likes or posts with set probabilities."""

from __future__ import annotations

import numpy as np

from societies.env import Moves, Scenario
from societies.scenarios.feed.scenario import FeedScenario
from societies.scenarios.feed.text import FOLLOW, LIKE, NOTHING, POST, REPOST


class FeedRule:
    """A feed user, vectorised: repost, follow, like or post, each with its own probability, else nothing.

    Per post in its feed (an exposure), an agent reposts with probability `p_repost` and likes with
    `p_like`, both times `off_topic` when the post is not on its interest (0 = only on-topic posts,
    1 = topic-blind). A story it has posted or shared already, or a post it has liked, is skipped.
    With no repost, it follows the author of the last post it liked with `p_follow` (if it does not
    yet); otherwise it likes the first liked exposure; otherwise it posts with `p_post`. One move a
    round, in that order. Repost-only agents (`p_like = p_follow = p_post = 0`) share a story they
    were shown k times in a round with 1 - (1 - p)^k: the independent cascade."""

    name = "feed"

    def __init__(
        self, p_repost: float, p_like: float = 0.0, p_follow: float = 0.0, p_post: float = 0.0, off_topic: float = 1.0
    ) -> None:
        for label, v in (("p_repost", p_repost), ("p_like", p_like), ("p_follow", p_follow), ("p_post", p_post),
                         ("off_topic", off_topic)):  # fmt: skip
            if not 0 <= v <= 1:
                raise ValueError(f"{label} must be in [0, 1], got {v}")
        self.p_repost, self.p_like, self.p_follow, self.p_post = p_repost, p_like, p_follow, p_post
        self.off_topic = off_topic

    def decide(self, sc: Scenario, idx: np.ndarray, rng: np.random.Generator) -> Moves:
        assert isinstance(sc, FeedScenario)
        idx = np.asarray(idx, dtype=np.int64)
        m = idx.size
        pos, post = sc.exposures_of(idx)  # flat, each agent's feed in order: a round costs its exposures
        agent = idx[pos]
        weight = np.where(sc.posts.topic[post] == sc.interest[agent], 1.0, self.off_topic)
        code = np.full(m, NOTHING, np.int8)
        value = np.full(m, np.nan)
        # draws only for probabilities > 0, always in this order: the same state gives the same moves
        if self.p_post > 0:
            chosen = rng.random(m) < self.p_post
            code[chosen] = POST
        if self.p_like > 0 and post.size:
            hit = rng.random(post.size) < self.p_like * weight
            hit[hit] = ~sc.liked.contains(agent[hit], post[hit])
            _choose(code, value, pos, post, hit, LIKE)
        if self.p_follow > 0:
            cand = np.flatnonzero(sc.last_liked[idx] >= 0)
            go = cand[rng.random(cand.size) < self.p_follow]
            target = sc.posts.author[sc.last_liked[idx[go]]]
            ok = sc.can_follow(idx[go], target)
            code[go[ok]] = FOLLOW
            value[go[ok]] = target[ok]
        if self.p_repost > 0 and post.size:
            hit = rng.random(post.size) < self.p_repost * weight
            hit[hit] = ~sc.joined.contains(agent[hit], sc.posts.root[post[hit]])
            _choose(code, value, pos, post, hit, REPOST)
        return Moves(idx, code, value)


def _choose(code: np.ndarray, value: np.ndarray, pos: np.ndarray, post: np.ndarray, hit: np.ndarray, c: int) -> None:
    """Set move `c` on the first hit exposure of each agent (`pos` is sorted: exposures come row by row)."""
    p, x = pos[hit], post[hit]
    first = np.ones(p.size, dtype=bool)
    first[1:] = p[1:] != p[:-1]
    code[p[first]] = c
    value[p[first]] = x[first]
