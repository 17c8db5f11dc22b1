"""The built-in recommenders, by name (`feed.recommender=<name>`):

- `recency`: the newest posts by the accounts an agent follows that it has not been shown yet
  (posted since its last visit, within the scenario's window), newest first;
- `popularity`: the most liked and reposted posts of the window, in-network (followed accounts)
  and out-of-network (the window's global top) together;
- `similarity`: the posts whose vector is closest to the agent's interest vector, from its
  in-network posts plus `explore` random posts of the window (homophily);
- `random`: random posts of the window.

The last three skip posts the agent already liked or whose story it already shared.
"""

from __future__ import annotations

import numpy as np

from societies.scenarios.feed.queries import FeedQueries
from societies.scenarios.feed.ranking import dense_rows, empty_feed, fresh, pick, random_window_posts, top_k_per_row
from societies.scenarios.feed.recommender import register_recommender


@register_recommender("recency")
class Recency:
    """The chronological following feed: what followed accounts posted since the agent last looked, newest first."""

    name = "recency"

    def recommend(self, sc: FeedQueries, idx: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
        since = np.maximum(sc.last_seen[idx] + 1, sc.round - sc.window + 1)
        rows, posts = sc.in_network(idx, since=since)
        return top_k_per_row(rows, posts, posts.astype(np.float64), idx.size, k)  # newer posts have higher ids


@register_recommender("popularity")
class Popularity:
    """Most liked and reposted posts of the window, in-network plus the window's global top `pool` posts."""

    name = "popularity"

    def __init__(self, pool: int | None = None, cap: int | None = None) -> None:
        self.pool = pool  # global candidates per agent; None = 2k
        self.cap = cap  # in-network candidates per agent; None = 10k

    def recommend(self, sc: FeedQueries, idx: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
        lo, hi = sc.window_range()
        m = idx.size
        if hi == lo or m == 0:
            return empty_feed(m)
        g = min(hi - lo, self.pool or 2 * k)
        score = sc.popularity(np.arange(lo, hi))
        top = lo + np.argpartition(-score, g - 1)[:g]
        is_top = np.zeros(hi, dtype=bool)
        is_top[top] = True
        rows, posts = sc.in_network(idx)
        keep = ~is_top[posts]  # those come with the global list
        cand = np.hstack([dense_rows(rows[keep], posts[keep], m, self.cap or 10 * k), np.tile(top, (m, 1))])
        return pick(sc, idx, cand, sc.popularity(np.maximum(cand, 0)), k)


@register_recommender("similarity")
class Similarity:
    """Posts closest to the agent's interest vector, from its in-network posts and `explore` random window posts."""

    name = "similarity"

    def __init__(self, explore: int | None = None, cap: int | None = None) -> None:
        self.explore = explore  # random out-of-network candidates per agent; None = 3k
        self.cap = cap  # in-network candidates per agent; None = 10k

    def recommend(self, sc: FeedQueries, idx: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
        lo, hi = sc.window_range()
        m = idx.size
        if hi == lo or m == 0:
            return empty_feed(m)
        rows, posts = sc.in_network(idx)
        inside = dense_rows(rows, posts, m, self.cap or 10 * k)
        cand = np.hstack([inside, rng.integers(lo, hi, size=(m, self.explore or 3 * k))])
        agents = np.broadcast_to(idx[:, None], cand.shape)
        return pick(sc, idx, cand, sc.similarity(agents, np.maximum(cand, 0)), k)


@register_recommender("random")
class RandomFeed:
    """Uniformly random posts of the window (the no-recommender baseline)."""

    name = "random"

    def recommend(self, sc: FeedQueries, idx: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
        lo, hi = sc.window_range()
        m = idx.size
        if hi == lo or m == 0:
            return empty_feed(m)
        cand = fresh(sc, idx, random_window_posts(lo, hi, m, k + k // 2 + 1, rng))  # in random order already
        return cand[np.arange(m)[:, None], np.argsort(cand < 0, axis=1, kind="stable")][:, :k]
