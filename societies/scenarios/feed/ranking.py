"""Helpers for writing a recommender: pick the k best posts per agent from candidates, vectorised.

`top_k_per_row` for candidate pairs, `dense_rows` and `top_k_dense` or `pick` for a candidate matrix,
`dedupe_rows`, `fresh`, `random_window_posts`.
"""

from __future__ import annotations

import numpy as np

from societies.scenarios.feed.queries import FeedQueries


def empty_feed(m: int) -> np.ndarray:
    """No posts for any of m agents."""
    return np.full((m, 0), -1, dtype=np.int64)


def top_k_per_row(rows: np.ndarray, posts: np.ndarray, score: np.ndarray, m: int, k: int) -> np.ndarray:
    """The k best-scored posts of each row from candidate pairs (row, post), as an (m, <= k) array padded with -1.

    Higher scores come first, and ties go to the newer post (the higher id). A pair that occurs
    twice with the same score is kept once. One sort over all pairs: no Python loop over agents."""
    rows = np.asarray(rows, dtype=np.int64)
    posts = np.asarray(posts, dtype=np.int64)
    if rows.size == 0 or m == 0:
        return empty_feed(m)
    order = np.lexsort((-posts, -np.asarray(score, dtype=np.float64), rows))
    r, p = rows[order], posts[order]
    dup = np.zeros(r.size, dtype=bool)
    dup[1:] = (r[1:] == r[:-1]) & (p[1:] == p[:-1])
    r, p = r[~dup], p[~dup]
    counts = np.bincount(r, minlength=m)
    starts = np.cumsum(counts) - counts
    rank = np.arange(r.size) - starts[r]
    keep = rank < k
    out = np.full((m, int(min(k, counts.max()))), -1, dtype=np.int64)
    out[r[keep], rank[keep]] = p[keep]
    return out


def dense_rows(rows: np.ndarray, posts: np.ndarray, m: int, cap: int) -> np.ndarray:
    """Candidate pairs (row, post) as an (m, <= cap) matrix padded with -1, each row in the pairs' order.

    A row with more than `cap` candidates keeps its first `cap`. Dense candidates let a recommender
    score and pick per row with `top_k_dense`, which is much cheaper than sorting all pairs."""
    rows = np.asarray(rows, dtype=np.int64)
    posts = np.asarray(posts, dtype=np.int64)
    if rows.size and np.any(rows[1:] < rows[:-1]):
        order = np.argsort(rows, kind="stable")
        rows, posts = rows[order], posts[order]
    counts = np.bincount(rows, minlength=m)
    rank = np.arange(rows.size) - (np.cumsum(counts) - counts)[rows]
    keep = rank < cap
    out = np.full((m, int(min(cap, counts.max())) if m and rows.size else 0), -1, np.int64)
    out[rows[keep], rank[keep]] = posts[keep]
    return out


def top_k_dense(cand: np.ndarray, score: np.ndarray, k: int) -> np.ndarray:
    """The k best-scored candidates of each row of an (m, c) matrix (-1 = none), best first, padded with -1.

    Repeats within a row must have been removed. Among equal scores the newer post comes first,
    except at the cut, where equal scores are picked in no set order (but the same every run)."""
    m = cand.shape[0]
    score = np.where(cand >= 0, np.asarray(score, dtype=np.float64), -np.inf)
    if cand.shape[1] > k:
        part = np.argpartition(-score, k - 1, axis=1)[:, :k]
        cand, score = np.take_along_axis(cand, part, axis=1), np.take_along_axis(score, part, axis=1)
    order = np.lexsort((-cand, -score), axis=1)
    cand = np.take_along_axis(cand, order, axis=1)
    width = int((cand >= 0).sum(axis=1).max()) if m and cand.size else 0
    return np.ascontiguousarray(cand[:, :width])


def fresh(sc: FeedQueries, idx: np.ndarray, cand: np.ndarray) -> np.ndarray:
    """`cand` (rows = agents idx) without the agents' own posts and posts they already liked or shared (-1 there)."""
    post = np.maximum(cand, 0)
    agents = idx[:, None]
    drop = (sc.posts.author[post] == agents) | sc.engaged(agents, post)
    return np.where(drop, -1, cand)


def dedupe_rows(cand: np.ndarray) -> np.ndarray:
    """`cand` with each repeat within a row set to -1 (the first one stays)."""
    if cand.shape[1] < 2:
        return cand
    order = np.argsort(cand, axis=1, kind="stable")
    s = np.take_along_axis(cand, order, axis=1)
    again = np.zeros(cand.shape, dtype=bool)
    np.put_along_axis(again, order[:, 1:], (s[:, 1:] == s[:, :-1]) & (s[:, 1:] >= 0), axis=1)
    return np.where(again, -1, cand)


def pick(sc: FeedQueries, idx: np.ndarray, cand: np.ndarray, score: np.ndarray, k: int) -> np.ndarray:
    """The k best fresh candidates per row: the 2k best by score first, then repeats and `fresh` filtered, then k.

    Filtering only the front runners keeps the membership checks at 2k per agent whatever the
    number of candidates; a row whose front runners are mostly stale gets a shorter feed."""
    score = np.where(cand >= 0, np.asarray(score, dtype=np.float64), -np.inf)
    if cand.shape[1] > 2 * k:
        part = np.argpartition(-score, 2 * k - 1, axis=1)[:, : 2 * k]
        cand, score = np.take_along_axis(cand, part, axis=1), np.take_along_axis(score, part, axis=1)
    cand = fresh(sc, idx, dedupe_rows(cand))
    return top_k_dense(cand, score, k)


def random_window_posts(lo: int, hi: int, m: int, e: int, rng: np.random.Generator) -> np.ndarray:
    """e random posts of the window [lo, hi) per row, (m, e), repeats within a row set to -1."""
    return dedupe_rows(rng.integers(lo, hi, size=(m, e)))
