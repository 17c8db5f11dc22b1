"""Reward for a diagnosis, and whether it rested on a fact the user had retracted.

- Exactly the true set of root causes: 1.0 (success).
- Overlapping but not equal: 0.5 x Jaccard(diagnosed, true). Naming one of two true causes
  alone scores 0.25; the true cause plus one wrong extra scores 0.25; two of three 0.33.
  Half weight keeps any partial answer well below a correct one, so guessing broadly is
  never better than finding the cause.
- No overlap, or no diagnosis before the turn limit (truncated): 0.
"""

from __future__ import annotations

from collections.abc import Iterable

from envs.faulttree.model import FaultTree

PARTIAL_WEIGHT = 0.5


def diagnosis_reward(diagnosed: Iterable[str], truth: Iterable[str]) -> float:
    d, t = set(diagnosed), set(truth)
    if not d or not t:
        return 0.0
    if d == t:
        return 1.0
    return PARTIAL_WEIGHT * len(d & t) / len(d | t)


def used_retracted_fact(tree: FaultTree, diagnosed: Iterable[str], retracted: Iterable[tuple[str, bool, int]]) -> bool:
    """True if the diagnosis agrees with an answer the user later took back and not with the correction.

    For each retracted answer (node, wrong value), the diagnosis "used" it when the node's
    state implied by the diagnosed causes equals the retracted (wrong) value.
    """
    diagnosed = set(diagnosed)
    if not diagnosed:
        return False
    implied = tree.evaluate(diagnosed)
    return any(implied[node] == wrong for node, wrong, _turn in retracted)
