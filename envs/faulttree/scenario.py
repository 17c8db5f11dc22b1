"""Fault scenarios: sets of basic events that make the top event true, drawn by gate logic.

A scenario is drawn top-down: an OR gate picks one child uniformly, an AND gate takes all
children, a k-of-n gate picks k children uniformly; the basic events reached are then made
minimal (the smallest subset that still triggers the top event). Because every choice is
explicit, the *exact* distribution of outcomes can be computed by the same recursion
(`scenario_distribution`); sampling draws from it, and the scripted expert uses its support as
the hypothesis space and its probabilities as the prior ("fault frequency data" in real FTA).
Scenarios with more than `max_order` root causes are excluded (renormalised away).
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

import numpy as np

from envs.faulttree.model import FaultTree, Gate

MAX_ORDER = 3


@dataclass(frozen=True)
class Hypotheses:
    """The candidate cause sets of a tree, their prior and the node states each implies."""

    sets: tuple[frozenset[str], ...]
    prior: np.ndarray  # [H], sums to 1
    states: np.ndarray  # [H, N] bool, columns in tree.ids order


def scenario_distribution(tree: FaultTree, max_order: int = MAX_ORDER) -> dict[frozenset[str], float]:
    """Exact distribution of minimal cause sets produced by the top-down draw."""
    memo: dict[str, dict[frozenset[str], float]] = {}

    def dist(nid: str) -> dict[frozenset[str], float]:
        if nid in memo:
            return memo[nid]
        node = tree.nodes[nid]
        if node.is_basic:
            out = {frozenset([nid]): 1.0}
        elif node.gate is Gate.OR:
            out = _mix([dist(c) for c in node.children])
        elif node.gate is Gate.AND:
            out = _combine([dist(c) for c in node.children], max_order)
        else:
            k = node.k or 1
            out = _mix(
                [_combine([dist(c) for c in group], max_order) for group in itertools.combinations(node.children, k)]
            )
        memo[nid] = out
        return out

    raw = dist(tree.top)
    result: dict[frozenset[str], float] = {}
    for causes, p in zip(raw, minimise_many(tree, list(raw))):
        result[p] = result.get(p, 0.0) + raw[causes]
    total = sum(result.values())
    if total <= 0:
        raise ValueError(f"tree {tree.name!r} has no scenario with at most {max_order} root causes")
    return {s: p / total for s, p in sorted(result.items(), key=lambda kv: sorted(kv[0]))}


def _mix(dists: list[dict[frozenset[str], float]]) -> dict[frozenset[str], float]:
    out: dict[frozenset[str], float] = {}
    w = 1.0 / len(dists)
    for d in dists:
        for s, p in d.items():
            out[s] = out.get(s, 0.0) + w * p
    return out


def _combine(dists: list[dict[frozenset[str], float]], max_order: int) -> dict[frozenset[str], float]:
    """Independent draws from each child, united; outcomes over `max_order` are dropped."""
    out: dict[frozenset[str], float] = {frozenset(): 1.0}
    for d in dists:
        nxt: dict[frozenset[str], float] = {}
        for s1, p1 in out.items():
            for s2, p2 in d.items():
                u = s1 | s2
                if len(u) <= max_order:
                    nxt[u] = nxt.get(u, 0.0) + p1 * p2
        out = nxt
    return out


def minimise(tree: FaultTree, causes: frozenset[str]) -> frozenset[str]:
    """The smallest subset that still triggers the top event (ties: earliest ids) - a minimal cut set."""
    return minimise_many(tree, [causes])[0]


def minimise_many(tree: FaultTree, sets: list[frozenset[str]]) -> list[frozenset[str]]:
    """`minimise` for many sets with one vectorised evaluation of all their proper subsets."""
    out = list(sets)
    subsets: list[frozenset[str]] = []
    owners: list[int] = []
    for i, s in enumerate(sets):
        if len(s) < 2:
            continue  # a single cause that triggers the top event is already minimal
        ordered = sorted(s, key=tree.index.__getitem__)
        for r in range(1, len(ordered)):
            for combo in itertools.combinations(ordered, r):  # by size, then id order
                subsets.append(frozenset(combo))
                owners.append(i)
    if subsets:
        fires = tree.state_matrix(subsets)[:, tree.index[tree.top]]
        done: set[int] = set()
        for sub, owner, fire in zip(subsets, owners, fires):
            if fire and owner not in done:
                out[owner] = sub
                done.add(owner)
    return out


def hypotheses(tree: FaultTree, max_order: int = MAX_ORDER) -> Hypotheses:
    """Hypothesis space of a tree (cached per tree object: trees are immutable after build)."""
    cached = getattr(tree, "_hypotheses", None)
    if cached is not None and cached[0] == max_order:
        return cached[1]
    dist = scenario_distribution(tree, max_order)
    sets = tuple(dist)
    hyp = Hypotheses(
        sets=sets, prior=np.array([dist[s] for s in sets], dtype=float), states=tree.state_matrix(list(sets))
    )
    tree._hypotheses = (max_order, hyp)  # type: ignore[attr-defined]
    return hyp


def sample_scenario(tree: FaultTree, rng: random.Random, max_order: int = MAX_ORDER) -> frozenset[str]:
    """Draw the root causes of one fault scenario; the top event is true under them."""
    hyp = hypotheses(tree, max_order)
    idx = rng.choices(range(len(hyp.sets)), weights=hyp.prior.tolist(), k=1)[0]
    causes = hyp.sets[idx]
    assert tree.evaluate(causes)[tree.top], "scenario does not trigger the top event"
    return causes
