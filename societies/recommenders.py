"""Feed recommenders: which posts each active agent sees this round (`societies.scenarios.feed`).

A recommender is any object with a `name` and a vectorised `recommend(scenario, idx, k, rng)`
that returns a `(len(idx), <= k)` integer array of post ids, one row per agent in `idx`, padded
with -1. One call serves every active agent of a round, so 100k agents cost a few array
operations. The scenario checks the answer before anyone sees it: the shape, ids that are not
posts, duplicates and the agent's own posts are dropped, so a custom recommender cannot garble a
feed. The built-ins, by name (`feed.recommender=<name>`):

- `recency`: the newest posts by the accounts an agent follows that it has not been shown yet
  (posted since its last visit, within the scenario's window), newest first;
- `popularity`: the most liked and reposted posts of the window, in-network (followed accounts)
  and out-of-network (the window's global top) together;
- `similarity`: the posts whose vector is closest to the agent's interest vector, from its
  in-network posts plus `explore` random posts of the window (homophily);
- `random`: random posts of the window.

The last three skip posts the agent already liked or whose story it already shared. A custom
recommender declares itself with `@register_recommender("<name>")` in any module the run imports, or
in a package's entry-point group `agentsim.recommenders`; or it is loaded by import path,
`feed.recommender=my_pkg.mod:MyRecommender` (a class, which is built without arguments, or an instance). `load_recommender` raises a `ValueError` that says
what went wrong when the path does not import or the object is not a recommender.

Helpers for writing one (below): `top_k_per_row` for candidate pairs, `dense_rows` and
`top_k_dense` or `pick` for a candidate matrix, `dedupe_rows`, `fresh`, `random_window_posts`; and, on the scenario, `window_range()`,
`in_network(idx, since)`, `engaged(agents, posts)`, `popularity(posts)`, `similarity(agents, posts)`,
`post_vectors(posts)` and `interest_vectors(agents)`.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

import numpy as np

from envs.plugins import PartSpec, Registry, closest

if TYPE_CHECKING:
    from societies.scenarios.feed import FeedScenario

RECOMMENDER_GROUP = "agentsim.recommenders"


@dataclass(frozen=True)
class RecommenderSpec(PartSpec):
    """A recommender's registration: `target()` builds it."""


RECOMMENDER_REGISTRY: Registry[RecommenderSpec] = Registry(
    "recommender",
    RECOMMENDER_GROUP,
    ("societies",),
    "@register_recommender(",
    lambda name, target: RecommenderSpec(name=name, target=target),
)
R = TypeVar("R")


def register_recommender(name: str) -> Callable[[R], R]:
    """Declare a recommender class (built without arguments) under `name` (`feed.recommender=<name>`)."""

    def deco(cls: R) -> R:
        RECOMMENDER_REGISTRY.add(RecommenderSpec(name=name, target=cls))
        return cls

    return deco


@runtime_checkable
class Recommender(Protocol):
    """Chooses the feeds of a round's active agents in one vectorised call."""

    name: str

    def recommend(self, sc: FeedScenario, idx: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
        """Post ids for agents `idx`: shape (len(idx), <= k), padded with -1, best first."""
        ...


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


def fresh(sc: FeedScenario, idx: np.ndarray, cand: np.ndarray) -> np.ndarray:
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


def pick(sc: FeedScenario, idx: np.ndarray, cand: np.ndarray, score: np.ndarray, k: int) -> np.ndarray:
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


@register_recommender("recency")
class Recency:
    """The chronological following feed: what followed accounts posted since the agent last looked, newest first."""

    name = "recency"

    def recommend(self, sc: FeedScenario, idx: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
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

    def recommend(self, sc: FeedScenario, idx: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
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

    def recommend(self, sc: FeedScenario, idx: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
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

    def recommend(self, sc: FeedScenario, idx: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
        lo, hi = sc.window_range()
        m = idx.size
        if hi == lo or m == 0:
            return empty_feed(m)
        cand = fresh(sc, idx, random_window_posts(lo, hi, m, k + k // 2 + 1, rng))  # in random order already
        return cand[np.arange(m)[:, None], np.argsort(cand < 0, axis=1, kind="stable")][:, :k]


class _Recommenders(Mapping[str, Callable[[], Recommender]]):
    """`RECOMMENDERS`: name -> class, read from the recommender registry (a view)."""

    def __getitem__(self, name: str) -> Callable[[], Recommender]:
        return RECOMMENDER_REGISTRY.get(name).target  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator[str]:
        return iter(RECOMMENDER_REGISTRY.names())

    def __len__(self) -> int:
        return len(RECOMMENDER_REGISTRY.names())


RECOMMENDERS: Mapping[str, Callable[[], Recommender]] = _Recommenders()


def check_recommender(obj: object, where: str = "the recommender") -> Recommender:
    """`obj` if it keeps the Recommender protocol, else a ValueError that says what it lacks."""
    fn = getattr(obj, "recommend", None)
    need = "an object with a `name` and recommend(scenario, idx, k, rng) -> (len(idx), <= k) int array"
    if not callable(fn):
        raise ValueError(f"{where} ({type(obj).__name__}) has no recommend method; a recommender is {need}")
    try:
        inspect.signature(fn).bind(None, np.empty(0, np.int64), 1, np.random.default_rng(0))
    except TypeError as e:
        raise ValueError(f"{where}: recommend{inspect.signature(fn)} does not take (scenario, idx, k, rng): {e}") from e
    except ValueError:  # no signature to inspect (a builtin): trust it
        pass
    if not isinstance(getattr(obj, "name", None), str):
        raise ValueError(f"{where} ({type(obj).__name__}) has no `name` string; a recommender is {need}")
    return obj  # type: ignore[return-value]


def load_recommender(spec: str) -> Recommender:
    """A built-in recommender by name, or a custom one by import path `package.module:Name`.

    `Name` is a class (built without arguments) or an instance. Every failure is a ValueError
    that names the path and the cause, so the runner reports it as a config error."""
    if spec in RECOMMENDER_REGISTRY:
        return check_recommender(RECOMMENDER_REGISTRY.get(spec).target(), f"recommender {spec!r}")  # a ValueError
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        names = RECOMMENDER_REGISTRY.names()
        raise ValueError(
            f"unknown recommender {spec!r}{closest(spec, names)}; use one of {', '.join(names)} "
            "or an import path 'package.module:Name'"
        )
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # any import failure (missing module, error inside it) is the user's to fix
        raise ValueError(f"recommender {spec!r}: cannot import {module_name!r} ({type(e).__name__}: {e})") from e
    obj: object = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"recommender {spec!r}: {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if isinstance(obj, type):
        try:
            obj = obj()
        except Exception as e:
            raise ValueError(f"recommender {spec!r}: {attr}() failed ({type(e).__name__}: {e})") from e
    return check_recommender(obj, f"recommender {spec!r}")
