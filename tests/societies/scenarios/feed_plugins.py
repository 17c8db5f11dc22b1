"""Custom feed recommenders for the tests, loaded by import path (`feed.recommender=tests.societies.scenarios.feed_plugins:Latest`)."""

from __future__ import annotations

import numpy as np

from societies.scenarios.feed.ranking import empty_feed


class Latest:
    """Everyone sees the k newest posts of the window (a global 'latest' timeline)."""

    name = "latest"

    def recommend(self, sc, idx: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
        lo, hi = sc.window_range()
        if hi == lo:
            return empty_feed(idx.size)
        newest = np.arange(hi - 1, max(lo, hi - k - 1) - 1, -1)  # one extra: an agent's own post is dropped
        return np.tile(newest, (idx.size, 1))


class Garbage:
    """Returns ids that are not posts, repeats and too many columns: the scenario must clean them up."""

    name = "garbage"

    def recommend(self, sc, idx: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
        row = np.array([10**9, -5, 0, 0, 1, 2, 3, 2, 1, 0] * 10)
        return np.tile(row, (idx.size, 1))


class WrongShape:
    name = "wrong_shape"

    def recommend(self, sc, idx: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
        return np.zeros(k, dtype=np.int64)


class NoRecommend:
    """Not a recommender: it has no recommend method."""

    name = "nothing_here"


class TakesNoRng:
    name = "no_rng"

    def recommend(self, sc, idx):
        return empty_feed(len(idx))
