"""Feed recommenders: which posts each active agent sees this round (the feed scenario, `scenario.py`).

A recommender is any object with a `name` and a vectorised `recommend(scenario, idx, k, rng)`
that returns a `(len(idx), <= k)` integer array of post ids, one row per agent in `idx`, padded
with -1. One call serves every active agent of a round, so 100k agents cost a few array
operations. The scenario checks the answer before anyone sees it (`checked_feed`): the shape, ids
that are not posts, duplicates and the agent's own posts are dropped, so a custom recommender
cannot garble a feed. The built-ins are in `recommenders.py`, the helpers for writing one in
`ranking.py`.

A custom recommender declares itself with `@register_recommender("<name>")` in any module the run
imports, or in a package's entry-point group `agentsim.recommenders`; or it is loaded by import path,
`feed.recommender=my_pkg.mod:MyRecommender` (a class, which is built without arguments, or an
instance). `load_recommender` raises a `ValueError` that says what went wrong when the path does not
import or the object is not a recommender. A recommender reads the scenario through `FeedQueries`
(`queries.py`): `window_range()`, `in_network(idx, since)`, `engaged(agents, posts)`,
`popularity(posts)`, `similarity(agents, posts)`, `post_vectors(posts)`, `interest_vectors(agents)`,
and the state (`posts`, `round`, `window`, `last_seen`, ...).
"""

from __future__ import annotations

import importlib
import inspect
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar, runtime_checkable

import numpy as np

from envs.plugins import PartSpec, Registry, closest
from societies.scenarios.feed.queries import FeedQueries
from societies.scenarios.feed.state import PostTable

log = logging.getLogger(__name__)

RECOMMENDER_GROUP = "agentsim.recommenders"


@dataclass(frozen=True)
class RecommenderSpec(PartSpec):
    """A recommender's registration: `target()` builds it."""


RECOMMENDER_REGISTRY: Registry[RecommenderSpec] = Registry(
    "recommender",
    RECOMMENDER_GROUP,
    ("societies.scenarios",),
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

    def recommend(self, sc: FeedQueries, idx: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
        """Post ids for agents `idx`: shape (len(idx), <= k), padded with -1, best first."""
        ...


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


def checked_feed(raw: object, idx: np.ndarray, k: int, posts: PostTable, recommender: object) -> np.ndarray:
    """A recommender's answer for agents `idx` made safe: shape checked; ids that are not posts, own posts and
    repeats dropped, at most `k` posts a row."""
    name = getattr(recommender, "name", type(recommender).__name__)
    m = idx.size
    f = np.asarray(raw)
    if f.ndim != 2 or f.shape[0] != m:
        raise ValueError(
            f"recommender {name!r} returned shape {f.shape} for {m} agents; "
            f"expected ({m}, <= {k}) post ids padded with -1"
        )
    if f.dtype.kind == "f":
        f = np.where(np.isfinite(f), f, -1)
        if np.any(f != np.round(f)):
            raise ValueError(f"recommender {name!r} returned non-integer post ids")
    elif f.dtype.kind not in "iu":
        raise ValueError(f"recommender {name!r} returned {f.dtype} values; expected integer post ids")
    f = f[:, :k].astype(np.int64)
    valid = (f >= 0) & (f < posts.size)
    bad = int((~valid & (f != -1)).sum())
    if bad:
        log.warning("recommender %r returned %d ids that are not posts; dropped", name, bad)
    valid &= posts.author[np.where(valid, f, 0)] != idx[:, None]  # never one's own post
    f[~valid] = -1
    multi = np.flatnonzero((f >= 0).sum(axis=1) > 1) if f.shape[1] > 1 else np.empty(0, np.int64)
    if multi.size:  # repeats need two posts in a row: only those rows are sorted
        sub = f[multi]
        order = np.argsort(sub, axis=1, kind="stable")
        s = np.take_along_axis(sub, order, axis=1)
        again = (s[:, 1:] == s[:, :-1]) & (s[:, 1:] >= 0)
        if again.any():  # a repeat within a row: the first one stays
            mark = np.zeros(sub.shape, dtype=bool)
            np.put_along_axis(mark, order[:, 1:], again, axis=1)
            sub[mark] = -1
            f[multi] = sub
    if f.shape[1] > 1 and ((f[:, 1:] >= 0) & (f[:, :-1] < 0)).any():  # gaps: posts first, in the given order
        f = np.take_along_axis(f, np.argsort(f < 0, axis=1, kind="stable"), axis=1)
    width = int((f >= 0).sum(axis=1).max()) if m else 0
    return np.ascontiguousarray(f[:, :width])
