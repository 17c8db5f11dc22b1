"""Scripted expert: the most informative check until one cause set is clearly most plausible.

Why expected information gain: with ~250 candidate cause sets a good check splits the
posterior mass evenly; asking about a node whose state is nearly certain wastes a turn.
Vague answers enter as soft evidence (a weaker likelihood ratio), "can't tell" as none, and a
rollback replaces every earlier answer about the node (see `belief.py`), so the expert revises
its belief instead of clinging to the retracted fact. Deterministic given the dialogue.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from envs.faulttree.belief import Belief, Evidence


@dataclass(frozen=True)
class ExpertConfig:
    confidence: float = 0.95  # diagnose once the best cause set has this posterior
    min_gain: float = 0.01  # bits; below this no check is worth a turn
    recheck_discount: float = 0.5  # a node already answered vaguely is worth less to ask again


@dataclass(frozen=True)
class Decision:
    kind: str  # "check" | "diagnose"
    node: str | None = None
    causes: tuple[str, ...] = ()


def decide(
    belief: Belief, evidence: list[Evidence], turns_left: int, config: ExpertConfig = ExpertConfig()
) -> Decision:
    post = belief.posterior(evidence)
    best = int(np.argmax(post))
    gains = check_gains(belief, post, evidence, config)
    j = int(np.argmax(gains))
    if post[best] >= config.confidence or gains[j] < config.min_gain or turns_left <= 1:
        tree = belief.tree
        return Decision("diagnose", causes=tuple(sorted(belief.hyp.sets[best], key=tree.index.__getitem__)))
    return Decision("check", node=belief.tree.ids[j])


def check_gains(
    belief: Belief, post: np.ndarray, evidence: list[Evidence], config: ExpertConfig = ExpertConfig()
) -> np.ndarray:
    """Information gain of checking each node now; 0 for nodes whose answer would just repeat."""
    gains = belief.info_gain(belief.marginals(post))
    tree = belief.tree
    gains[tree.index[tree.top]] = 0.0
    for e in evidence:
        j = tree.index[e.node]
        if e.strength in ("crisp", "corrected"):
            gains[j] = 0.0  # the user would repeat the same answer
        else:
            gains[j] *= config.recheck_discount
    return gains
