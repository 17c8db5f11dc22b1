"""Score (partial) trajectories with a trained PRM: batched, length-sorted, cached by exact token ids.

Search scores many siblings that share long prefixes and revisits the same states across
budgets and seeds; the cache key is the window's token ids, so a hit is always exact.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from prm.data import Window, collate
from prm.episodes import Trajectory
from prm.model import PRMModel

Item = tuple[str, Sequence[str], Sequence[str]]  # (instruction, observations s_0..s_t, actions a_0..a_t)


@dataclass
class ScorerStats:
    """What scoring has cost so far: model windows, cache hits, step scores, seconds."""

    windows: int = 0  # windows run through the model
    cache_hits: int = 0
    markers: int = 0  # step scores produced by the model
    seconds: float = 0.0


class PRMScorer:
    """Scores the steps of (partial) trajectories with a trained PRM, batching windows and caching their scores."""

    def __init__(self, model: PRMModel, batch_size: int = 16, cache_size: int = 100_000) -> None:
        self.model = model.eval()
        self.batch_size = batch_size
        self.cache_size = cache_size
        self._cache: OrderedDict[tuple[int, ...], np.ndarray] = OrderedDict()
        self.stats = ScorerStats()

    def clear(self) -> None:
        """Forget cached scores (call after the model's weights change)."""
        self._cache.clear()

    @torch.no_grad()
    def run_windows(self, windows: list[Window]) -> list[np.ndarray]:
        """Marker scores of each window (cached); the model sees the uncached ones, longest first, in batches."""
        out: list[np.ndarray | None] = [None] * len(windows)
        todo: dict[tuple[int, ...], list[int]] = {}
        for i, w in enumerate(windows):
            key = tuple(w.ids)
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                out[i] = hit
                self.stats.cache_hits += 1
            else:
                todo.setdefault(key, []).append(i)
        keys = sorted(todo, key=len, reverse=True)
        t0 = time.perf_counter()
        pad = self.model.steps.pad_id
        for b in range(0, len(keys), self.batch_size):
            chunk = [windows[todo[k][0]] for k in keys[b : b + self.batch_size]]
            scores = self.model(collate(chunk, pad)).float().cpu().numpy()
            pos = 0
            for k, w in zip(keys[b : b + self.batch_size], chunk):
                s = scores[pos : pos + len(w.markers)].copy()
                pos += len(w.markers)
                self._remember(k, s)
                for i in todo[k]:
                    out[i] = s
            self.stats.windows += len(chunk)
            self.stats.markers += len(scores)
        self.stats.seconds += time.perf_counter() - t0
        return out  # type: ignore[return-value]

    def _remember(self, key: tuple[int, ...], scores: np.ndarray) -> None:
        self._cache[key] = scores
        if len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)

    def score_many(self, items: Sequence[Item]) -> list[np.ndarray]:
        """Every step's promise for each item."""
        windows: list[Window] = []
        for i, (instr, obs, acts) in enumerate(items):
            windows.extend(self.model.steps.windows(instr, list(obs), list(acts), traj=i))
        scores = self.run_windows(windows)
        out = [np.zeros(len(acts)) for _, _, acts in items]
        for w, s in zip(windows, scores):
            out[w.traj][w.steps] = s
        return out

    def score_last(self, items: Sequence[Item]) -> np.ndarray:
        """The promise of each item's last step (one window each: the instruction and the latest steps)."""
        windows = [
            self.model.steps.windows(instr, list(obs), list(acts), traj=i, last_only=True)[0]
            for i, (instr, obs, acts) in enumerate(items)
        ]
        return np.array([s[-1] for s in self.run_windows(windows)])

    def score_trajectories(self, trajs: Sequence[Trajectory]) -> list[np.ndarray]:
        """Every step's promise for each trajectory."""
        return self.score_many([(t.instruction, t.observations, t.actions) for t in trajs])
