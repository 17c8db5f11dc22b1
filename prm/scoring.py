"""Score (partial) trajectories with a trained PRM: batched, length-sorted, cached by exact token ids.

Search scores many siblings that share long prefixes and revisits the same states across
budgets and seeds; the cache key is the window's token ids, so a hit is always exact.

Shared prefixes (`share_prefix=True`, the default on the torch backend): windows of one call that
differ only in their last step (a beam's children of one parent, reranked actions at one state)
run their common prefix once. Attention is block-causal, so the prefix's hidden states, its
markers' scores and its keys/values at every layer do not depend on the last step; the last steps
then run alone, attending to the prefix's cached keys/values. Same scores as running every window
whole (float rounding aside; checked against a whole window on first use, and switched off with
a warning if the backbone does not take a key/value cache that way). bench/prm_scoring_speed.py
measures it against the raw batched forward pass.

`backend="onnx"` runs whole windows on onnxruntime instead (`prm.onnx_scoring`; exported once per
model content and cached).
"""

from __future__ import annotations

import inspect
import logging
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch

from prm.data import Batch, Window, collate
from prm.episodes import Trajectory
from prm.model import PRMModel

log = logging.getLogger(__name__)
Item = tuple[str, Sequence[str], Sequence[str]]  # (instruction, observations s_0..s_t, actions a_0..a_t)
Backend = Literal["torch", "onnx"]
Key = tuple[int, ...]
CHECK_TOLERANCE = 1e-4  # first shared-prefix run vs the same window run whole (measured ~1e-6)
MIN_SAVED_TOKENS = 512  # share prefixes only when a call skips this many tokens (a forward pass has a fixed cost)


@dataclass
class ScorerStats:
    """What scoring has cost so far: model windows, cache hits, step scores, seconds."""

    windows: int = 0  # windows run through the model
    cache_hits: int = 0
    markers: int = 0  # step scores produced by the model
    seconds: float = 0.0
    tokens: int = 0  # real (non-pad) tokens the model computed
    shared_windows: int = 0  # windows whose prefix was run once for several of them


@dataclass
class _Group:
    """Windows of one call that differ only in their last step."""

    ids: Key  # the shared prefix's token ids
    blocks: Key  # and their block ids
    members: list[Key]  # the windows (their token ids)


class PRMScorer:
    """Scores the steps of (partial) trajectories with a trained PRM, batching windows and caching their scores."""

    def __init__(
        self,
        model: PRMModel,
        batch_size: int = 16,
        cache_size: int = 100_000,
        *,
        backend: Backend = "torch",
        share_prefix: bool = True,
        threads: int | None = None,
    ) -> None:
        self.model = model.eval()
        self.batch_size = batch_size
        self.cache_size = cache_size
        self._cache: OrderedDict[Key, np.ndarray] = OrderedDict()
        self.stats = ScorerStats()
        self.backend = backend
        self._ort: Any = None
        if backend == "onnx":
            from prm.onnx_scoring import OrtPRM

            self._ort = OrtPRM.for_model(model, threads=threads)
        elif backend != "torch":
            raise ValueError(f"backend must be 'torch' or 'onnx', got {backend!r}")
        self.share_prefix = share_prefix and backend == "torch"
        self._sharing_checked = False

    def clear(self) -> None:
        """Forget cached scores (call after the model's weights change)."""
        self._cache.clear()
        if self._ort is not None:
            self._ort.refresh(self.model)  # re-exported if the weights changed

    def run_windows(self, windows: list[Window]) -> list[np.ndarray]:
        """Marker scores of each window (cached); the model sees the uncached ones, longest first, in batches."""
        out: list[np.ndarray | None] = [None] * len(windows)
        todo: dict[Key, list[int]] = {}
        for i, w in enumerate(windows):
            key = tuple(w.ids)
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                out[i] = hit
                self.stats.cache_hits += 1
            else:
                todo.setdefault(key, []).append(i)
        if todo:
            t0 = time.perf_counter()
            first = {k: windows[ix[0]] for k, ix in todo.items()}
            with torch.no_grad():  # (not inference_mode: a backbone may cache tensors it later trains with)
                scored = self._score_unique(first)
            for k, s in scored.items():
                self._remember(k, s)
                for i in todo[k]:
                    out[i] = s
            self.stats.seconds += time.perf_counter() - t0
        return out  # type: ignore[return-value]

    # ------------------------------------------------------------------ model passes
    def _score_unique(self, windows: dict[Key, Window]) -> dict[Key, np.ndarray]:
        """Scores of distinct windows: shared prefixes once where several windows have one, the rest whole."""
        groups = self._prefix_groups(windows) if self.share_prefix else []
        shared = {k for g in groups for k in g.members}
        scored = self._run_whole({k: w for k, w in windows.items() if k not in shared})
        if groups:
            try:
                scored.update(self._run_shared(groups, windows))
            except Exception as e:  # a backbone that does not take a key/value cache this way
                log.warning("shared-prefix scoring disabled (%s: %s); scoring whole windows", type(e).__name__, e)
                self.share_prefix = False
                scored.update(self._run_whole({k: windows[k] for k in shared}))
        return scored

    def _run_whole(self, windows: dict[Key, Window]) -> dict[Key, np.ndarray]:
        """Whole windows, longest first, `batch_size` at a time.

        (Cutting the length-sorted list into more, smaller batches would cut padding from ~11% to ~3% of the tokens
        on WebShop windows, but every forward pass has a fixed cost, large on a busy machine, so it was slower;
        re-cutting into the same number of batches saved nothing. bench/prm_scoring_speed.py.)
        """
        keys = sorted(windows, key=len, reverse=True)
        scored: dict[Key, np.ndarray] = {}
        for a in range(0, len(keys), self.batch_size):
            b = a + self.batch_size
            chunk = [windows[k] for k in keys[a:b]]
            flat = self._forward(chunk)
            pos = 0
            for k, w in zip(keys[a:b], chunk):
                scored[k] = flat[pos : pos + len(w.markers)].copy()
                pos += len(w.markers)
            self.stats.windows += len(chunk)
            self.stats.markers += len(flat)
            self.stats.tokens += sum(len(k) for k in keys[a:b])
        return scored

    def _forward(self, chunk: list[Window]) -> np.ndarray:
        """Flat marker scores of whole windows, in (window, step) order."""
        if self._ort is not None:
            return self._ort(chunk)
        batch = collate(chunk, self.model.steps.pad_id)
        dev = self.model.device
        if dev.type != "cpu":
            batch = Batch(batch.input_ids.to(dev), batch.attention_mask.to(dev), batch.marker_mask.to(dev), chunk)
        return self.model(batch).float().cpu().numpy()

    @staticmethod
    def _prefix_groups(windows: dict[Key, Window]) -> list[_Group]:
        """Windows that share everything but their last step, grouped by that prefix; none when sharing would skip
        fewer than `MIN_SAVED_TOKENS` tokens in all (it costs a second forward pass)."""
        by_prefix: dict[tuple[Key, Key], list[Key]] = {}
        for k, w in windows.items():
            start = w.blocks.index(w.blocks[-1])  # where the last step's block begins
            by_prefix.setdefault((k[:start], tuple(w.blocks[:start])), []).append(k)
        groups = [_Group(ids, blocks, ks) for (ids, blocks), ks in by_prefix.items() if len(ks) > 1]
        saved = sum((len(g.members) - 1) * len(g.ids) for g in groups)
        return groups if saved >= MIN_SAVED_TOKENS else []

    def _run_shared(self, groups: list[_Group], windows: dict[Key, Window]) -> dict[Key, np.ndarray]:
        """Each group's prefix once, then its windows' last steps, packed side by side, attending to its cache."""
        cache_arg = _cache_argument(self.model.backbone)
        order = sorted(groups, key=lambda g: len(g.ids), reverse=True)
        scored: dict[Key, np.ndarray] = {}
        for b in range(0, len(order), self.batch_size):
            scored.update(self._run_group_batch(order[b : b + self.batch_size], windows, cache_arg))
        self.stats.windows += len(scored)
        self.stats.shared_windows += len(scored)
        self.stats.markers += sum(len(s) for s in scored.values())
        if not self._sharing_checked:
            self._check_shared(groups[0].members[0], windows, scored)
        return scored

    def _run_group_batch(self, part: list[_Group], windows: dict[Key, Window], cache_arg: str) -> dict[Key, np.ndarray]:
        """Up to `batch_size` prefixes in one pass, then their windows' last steps; every window's marker scores."""
        model, dev, pad = self.model, self.model.device, self.model.steps.pad_id
        # 1. the prefixes (block-causal, padded to `length`): marker scores, and every layer's keys/values in `cache`
        length = max(len(g.ids) for g in part)
        ids = np.full((len(part), length), pad, dtype=np.int64)
        blocks = np.full((len(part), length), -1, dtype=np.int64)
        for i, g in enumerate(part):
            ids[i, : len(g.ids)], blocks[i, : len(g.ids)] = g.ids, g.blocks
        cache = _new_cache()
        hidden = model.backbone(
            input_ids=torch.from_numpy(ids).to(dev),
            attention_mask=torch.from_numpy(_block_causal(blocks)).to(dev),
            **{cache_arg: cache},
        ).last_hidden_state
        keys, values = _cached_kv(cache)
        rows = [(i, m) for i, g in enumerate(part) for m in windows[g.members[0]].markers[:-1]]
        flat = _head_at(model, hidden, rows)
        prefix_scores, pos = [], 0
        for g in part:
            n = len(windows[g.members[0]].markers) - 1
            prefix_scores.append(flat[pos : pos + n])
            pos += n
        self.stats.tokens += sum(len(g.ids) for g in part)
        # 2. the last steps: one row per prefix (more if together they exceed 2 * max_length tokens), each step
        #    attending to its prefix and itself only, at the positions it has in its own window
        budget = 2 * self.model.cfg.text.max_length
        packs: list[tuple[int, list[Key]]] = []
        for r, g in enumerate(part):
            members: list[Key] = []
            used = 0
            for k in g.members:
                if members and used + len(k) - len(g.ids) > budget:
                    packs.append((r, members))
                    members, used = [], 0
                members.append(k)
                used += len(k) - len(g.ids)
            packs.append((r, members))
        out: dict[Key, np.ndarray] = {}
        for b in range(0, len(packs), self.batch_size):
            chunk = packs[b : b + self.batch_size]
            rows_of = [r for r, _ in chunk]
            if rows_of == list(range(len(part))):
                step_cache = cache  # the prefix batch's own cache, row for row (the usual case: no copy)
            else:
                sel = torch.tensor(rows_of, device=dev)
                step_cache = _new_cache()
                for layer, (kt, vt) in enumerate(zip(keys, values)):
                    step_cache.update(kt.index_select(0, sel), vt.index_select(0, sel), layer)
            last = self._run_packed([(part[r], members) for r, members in chunk], length, step_cache, cache_arg)
            for (r, members), scores in zip(chunk, last):
                for k, s in zip(members, scores):
                    out[k] = np.append(prefix_scores[r], s).astype(np.float32)
        return out

    def _run_packed(
        self, chunk: list[tuple[_Group, list[Key]]], cached: int, cache: Any, cache_arg: str
    ) -> list[np.ndarray]:
        """Last steps packed per row after a cache of `cached` positions (its prefix, padded); their scores per row."""
        model, dev = self.model, self.model.device
        sizes = [sum(len(k) - len(g.ids) for k in members) for g, members in chunk]
        width = max(sizes)
        ids = np.full((len(chunk), width), model.steps.pad_id, dtype=np.int64)
        pos = np.zeros((len(chunk), width), dtype=np.int64)
        mask = np.zeros((len(chunk), 1, width, cached + width), dtype=bool)
        ends: list[tuple[int, int]] = []
        for i, (g, members) in enumerate(chunk):
            p, at = len(g.ids), 0
            for k in members:
                n = len(k) - p
                ids[i, at : at + n] = k[p:]
                pos[i, at : at + n] = np.arange(p, p + n)  # where it sits in its own window
                mask[i, 0, at : at + n, :p] = True  # it sees its prefix ...
                mask[i, 0, at : at + n, cached + at : cached + at + n] = True  # ... and itself
                at += n
                ends.append((i, at - 1))  # its marker
            mask[i, 0, at:, 0] = True  # padding rows attend the first token (no empty attention row)
        hidden = model.backbone(
            input_ids=torch.from_numpy(ids).to(dev),
            attention_mask=torch.from_numpy(mask).to(dev),
            position_ids=torch.from_numpy(pos).to(dev),
            **{cache_arg: cache},
        ).last_hidden_state
        flat = _head_at(model, hidden, ends)
        self.stats.tokens += sum(sizes)
        out, at = [], 0
        for _, members in chunk:
            out.append(flat[at : at + len(members)])
            at += len(members)
        return out

    def _check_shared(self, key: Key, windows: dict[Key, Window], scored: dict[Key, np.ndarray]) -> None:
        """Once per scorer: a shared-prefix result against the same window run whole."""
        self._sharing_checked = True
        whole = self._forward([windows[key]])
        diff = float(np.abs(whole - scored[key]).max())
        scale = max(1.0, float(np.abs(whole).max()))
        if not diff <= CHECK_TOLERANCE * scale:
            raise RuntimeError(f"shared-prefix scores differ from whole windows by {diff:.2e}")

    def _remember(self, key: Key, scores: np.ndarray) -> None:
        self._cache[key] = scores
        if len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)

    # ------------------------------------------------------------------ items
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


# ---------------------------------------------------------------------- key/value cache plumbing
def _cache_argument(backbone: torch.nn.Module) -> str:
    """The name the backbone's forward takes a key/value cache under (`cache` in newer transformers)."""
    params = inspect.signature(backbone.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def _new_cache() -> Any:
    from transformers import DynamicCache

    return DynamicCache()


def _cached_kv(cache: Any) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Keys and values per layer, (batch, heads, length, head_dim) each, from a filled `DynamicCache`."""
    if hasattr(cache, "layers"):
        layers = [layer for layer in cache.layers if getattr(layer, "keys", None) is not None]
        keys, values = [layer.keys for layer in layers], [layer.values for layer in layers]
    else:  # older transformers
        keys, values = list(cache.key_cache), list(cache.value_cache)
    if not keys:
        raise RuntimeError("the backbone filled no key/value cache")
    return keys, values


def _block_causal(blocks: np.ndarray) -> np.ndarray:
    """`prm.data.block_causal_mask` in numpy: (B, L) block ids (-1 = padding) -> (B, 1, L, L) bool."""
    q = np.maximum(blocks, 0)[:, :, None]
    k = blocks[:, None, :]
    return ((k >= 0) & (k <= q))[:, None]


def _head_at(model: PRMModel, hidden: torch.Tensor, at: list[tuple[int, int]]) -> np.ndarray:
    """The head's scores at (row, position) pairs of `hidden`, flat."""
    if not at:
        return np.zeros(0, dtype=np.float32)
    r, c = zip(*at)
    return model.head(hidden[list(r), list(c)]).squeeze(-1).float().cpu().numpy()
