"""Generative-Agents style retrieval score: weighted recency + importance + relevance.

Recency decays from the *newest* memory (age = newest_clock - clock), so a memory store that sat idle
for a week does not make every memory look equally stale, and scores do not depend on when we query.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ScoreWeights:
    relevance: float = 1.0
    recency: float = 0.2
    importance: float = 0.1
    half_life: float = 500.0  # clock units after which recency halves

    def __post_init__(self) -> None:
        if self.half_life <= 0:
            raise ValueError(f"half_life must be > 0, got {self.half_life}")


def recency(clock: np.ndarray, half_life: float) -> np.ndarray:
    if clock.size == 0:
        return clock.astype(np.float32)
    return np.exp2(-(clock.max() - clock) / half_life).astype(np.float32)


def combined(sims: np.ndarray, clock: np.ndarray, importance: np.ndarray, w: ScoreWeights) -> np.ndarray:
    score = w.relevance * sims
    if w.recency:
        score = score + w.recency * recency(clock, w.half_life)
    if w.importance:
        score = score + w.importance * importance
    return score


def top_k(scores: np.ndarray, k: int, rows: np.ndarray | None = None) -> np.ndarray:
    """Positions of the k highest scores, best first; equal scores ordered by `rows` (default: position),
    so the exact scan and the quantized search agree to the last tie."""
    n = scores.size
    if k <= 0 or n == 0:
        return np.empty(0, dtype=np.int64)
    keys = np.arange(n) if rows is None else rows
    if k >= n:
        return np.lexsort((keys, -scores))
    kth = np.partition(scores, n - k)[n - k]
    pos = np.flatnonzero(scores >= kth)  # every tie of the k-th value, so the tie-break decides
    return pos[np.lexsort((keys[pos], -scores[pos]))][:k]
