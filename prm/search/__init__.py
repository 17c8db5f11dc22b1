"""PRM-guided test-time search over an env with snapshot/restore.

- `best_of_n`: N whole trajectories from the policy; keep the one whose last step the PRM
  promises most (without a PRM: a uniformly random one, the unguided baseline). Both choose among
  the trajectories that really ended when there are any: a cut by the step limit is a known failure.
- `beam_search` @N x M: keep N partial trajectories; expand each with M sampled actions (same
  action sampled twice is stepped once); score every child's last step; keep the best N live ones.
  A finished child that ranks above the N-th live one is set aside as a candidate (it takes no live
  slot, so one early finish does not narrow the beam); the search ends when N candidates have
  finished or no live beam is left. Answer: the candidate with the highest promise, so finished
  trajectories are only ever compared with finished ones; a candidate cut by the step limit is a
  known failure (the benchmark scores it so), so it is the answer only when nothing really ended.
- `rerank`: per-step reranking of M sampled actions = beam search with N = 1.
- `prior` (beam, rerank): rank children by promise + prior * log(share of the parent's M draws that chose the
  action). Deduplicating the draws throws away how often the policy proposed an action; with many samples
  nearly every listed action becomes a candidate and the PRM's errors decide (over-optimisation). The prior
  is the KL-regularised choice argmax Q + beta log pi with pi estimated from the draws themselves, so it needs
  nothing from the env. With no PRM (`scorer=None`) it is the unguided per-step majority vote, the baseline
  the prior has to beat for the PRM to be adding anything.

Budget accounting is explicit: policy samples drawn, env steps, PRM windows scored.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from prm.policy import ActionSampler, Node, Sample, apply, rollout, sample_at, start
from prm.scoring import PRMScorer


@dataclass
class SearchResult:
    """The trajectory a search chose, the finished ones it chose among, and the budget it spent."""

    best: Node
    finished: list[Node]
    samples: int = 0  # policy samples drawn
    env_steps: int = 0
    scored: int = 0  # nodes whose last step the PRM scored
    meta: dict[str, Any] = field(default_factory=dict)


def _seed(*parts: int) -> int:
    s = 0
    for p in parts:
        s = (s * 1_000_003 + int(p)) % (2**31 - 1)
    return s


def ended(nodes: list[Node]) -> list[Node]:
    """The candidates an answer is chosen from: those that really ended, else all (each was cut by the limit)."""
    return [n for n in nodes if n.terminated] or list(nodes)


def score_nodes(scorer: PRMScorer, nodes: list[Node]) -> None:
    """Set each node's `score` to the PRM promise of its last step (one batched call)."""
    if not nodes:
        return
    scores = scorer.score_last([n.prm_item() for n in nodes])
    for n, s in zip(nodes, scores):
        n.score = float(s)


def _score(node: Node) -> float:
    """The node's PRM score, for ranking nodes that `score_nodes` has scored."""
    assert node.score is not None, "ranking a node the PRM has not scored"
    return node.score


def best_of_n(
    env: gym.Env,
    sampler: ActionSampler,
    scorer: PRMScorer | None,
    *,
    n: int,
    seed: int,
    max_steps: int,
    options: dict[str, Any] | None = None,
    reset_seed: int | None = None,
) -> SearchResult:
    """Roll out N whole trajectories and keep the one the PRM promises most (without a PRM: a random one)."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    root = start(env, seed=reset_seed, options=options)
    finals, steps = [], 0
    for i in range(n):
        end, k = rollout(env, sampler, root, seed=_seed(seed, i), max_steps=max_steps)
        finals.append(end)
        steps += k
    pool = ended(finals)
    if scorer is not None:
        score_nodes(scorer, finals)
        best = max(pool, key=_score)  # first of the ties
    else:
        best = random.Random(seed).choice(pool)
    return SearchResult(
        best, finals, samples=steps, env_steps=steps, scored=n if scorer else 0, meta={"strategy": "best_of_n", "n": n}
    )


def beam_search(
    env: gym.Env,
    sampler: ActionSampler,
    scorer: PRMScorer | None,
    *,
    n: int,
    m: int,
    seed: int,
    max_steps: int,
    options: dict[str, Any] | None = None,
    reset_seed: int | None = None,
    prior: float = 0.0,
) -> SearchResult:
    """Step-level beam search @N x M guided by the PRM's promise of each child's last step (plus `prior` times
    the log share of the draws that proposed it; `scorer=None` ranks by that share alone)."""
    if n < 1 or m < 1:
        raise ValueError(f"beam search needs n >= 1 and m >= 1, got n={n}, m={m}")
    if prior < 0.0 or (scorer is None and prior <= 0.0):
        raise ValueError(f"prior must be >= 0, and > 0 without a PRM (it is then the only ranking); got {prior}")
    beams = [start(env, seed=reset_seed, options=options)]
    finished: list[Node] = []
    samples = env_steps = scored = depth = 0
    key_of: dict[int, float] = {}  # id(child) -> the key it was ranked by
    while beams and len(finished) < n:
        children: list[Node] = []
        log_share: list[float] = []  # per child: log of the share of its parent's draws that proposed it
        for b, node in enumerate(beams):
            drawn = sample_at(env, sampler, node, m, _seed(seed, depth, b))
            samples += len(drawn)
            same: dict[Any, list[Sample]] = {}  # the draws by action (unparsed outputs by text), in draw order
            for s in drawn:
                same.setdefault(s.action if s.action is not None else ("unparsed", s.raw_output), []).append(s)
            for group in same.values():  # one child per distinct draw
                children.append(apply(env, node, group[0], max_steps, sampler))
                log_share.append(float(np.log(len(group) / len(drawn))))
                env_steps += group[0].action is not None
        if scorer is not None:
            score_nodes(scorer, children)
            scored += len(children)
        else:
            for c in children:
                c.score = 0.0
        rank_key = [_score(c) + prior * ls for c, ls in zip(children, log_share)]
        key_of.update((id(c), k) for c, k in zip(children, rank_key))
        order = np.argsort([-k for k in rank_key], kind="stable")
        beams = []
        for i in order:  # best first, until N live beams
            if len(beams) == n:
                break
            (finished if children[i].done else beams).append(children[i])
        depth += 1
    best = max(ended(finished), key=lambda c: key_of[id(c)])  # the search's own ranking, prior included
    return SearchResult(
        best,
        finished,
        samples=samples,
        env_steps=env_steps,
        scored=scored,
        meta={"strategy": "beam", "n": n, "m": m} | ({"prior": prior} if prior else {}),
    )


def rerank(
    env: gym.Env,
    sampler: ActionSampler,
    scorer: PRMScorer | None,
    *,
    m: int,
    seed: int,
    max_steps: int,
    options: dict[str, Any] | None = None,
    reset_seed: int | None = None,
    prior: float = 0.0,
) -> SearchResult:
    """At every step draw M actions and take the one the PRM promises most (`scorer=None, prior=1`: the most drawn)."""
    res = beam_search(
        env,
        sampler,
        scorer,
        n=1,
        m=m,
        seed=seed,
        max_steps=max_steps,
        options=options,
        reset_seed=reset_seed,
        prior=prior,
    )
    res.meta = {"strategy": "rerank", "m": m} | ({"prior": prior} if prior else {})
    return res
