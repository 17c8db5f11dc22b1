"""MiniLM on onnxruntime gives the same embeddings as eager torch, and the export is cached per weights."""

import logging
import sys

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("onnxruntime")

from agents.memory.embeddings import MiniLMEmbedder  # noqa: E402

TEXTS = [
    "Hi.",
    "My sister adopted a kitten named Miso last spring, and it already rules the house.",
    "Where did Alice leave the coffee near the harbor?",
    "stock prices fell",
    " ".join(["a very long memory that gets truncated"] * 40),
]


@pytest.fixture(scope="module")
def backends():
    return MiniLMEmbedder(backend="onnx", cache_size=0), MiniLMEmbedder(backend="torch", cache_size=0)


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def test_onnx_and_torch_agree_on_single_queries_and_padded_batches(backends):
    ort, torch_ = backends
    assert ort.backend_used is None or ort.backend_used == "onnx"
    for t in TEXTS:  # one at a time: no padding
        assert cosines(ort.embed([t]), torch_.embed([t]))[0] > 0.9999
    for bs in (2, 3, 64):  # batches mixing lengths, so most rows are padded (and one is truncated)
        ort.batch_size = torch_.batch_size = bs
        a, b = ort.embed(TEXTS * 3), torch_.embed(TEXTS * 3)
        assert a.shape == b.shape == (15, 384)
        assert cosines(a, b).min() > 0.9999
        assert abs(float((a * a).sum(1).max()) - 1.0) < 1e-5
    assert ort.backend_used == "onnx" and torch_.backend_used == "torch"
    # semantic, not just equal: a paraphrase beats an unrelated sentence
    v = ort.embed(["My dog is called Rex.", "What is the name of my pet?", "Stock prices fell on Tuesday."])
    assert v[0] @ v[1] > v[1] @ v[2] + 0.2


def test_export_is_cached_by_weights_and_reused(tmp_path, monkeypatch):
    from agents.memory import minilm_onnx
    from agents.memory.minilm_files import model_dir

    src = model_dir()  # the unpacked weights in the normal cache; the export goes to a fresh one
    monkeypatch.setenv("AGENTSIM_CACHE", str(tmp_path))
    path = minilm_onnx.ensure_onnx(src)
    assert path.is_file() and path.parent == tmp_path / "onnx"
    assert minilm_onnx.weights_digest(src)[:20] in path.name
    assert not [p for p in path.parent.iterdir() if p.suffix == ".onnx" and p != path]  # no temp file left
    mtime = path.stat().st_mtime_ns
    assert minilm_onnx.ensure_onnx(src) == path and path.stat().st_mtime_ns == mtime  # not exported again
    emb = MiniLMEmbedder(model_dir=src, backend="onnx")
    ref = MiniLMEmbedder(model_dir=src, backend="torch")
    assert cosines(emb.embed(TEXTS[:3]), ref.embed(TEXTS[:3])).min() > 0.9999


def test_auto_falls_back_to_torch_without_onnxruntime(monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # makes `import onnxruntime` raise ImportError
    with caplog.at_level(logging.INFO, logger="agents.memory.embeddings"):
        emb = MiniLMEmbedder(backend="auto")
        v = emb.embed(["hello there"])
    assert emb.backend_used == "torch" and v.shape == (1, 384)
    assert "onnxruntime not installed" in caplog.text
    with pytest.raises(RuntimeError, match="onnxruntime"):
        MiniLMEmbedder(backend="onnx").embed(["hello"])


def test_backend_is_validated_and_read_from_the_environment(monkeypatch):
    with pytest.raises(ValueError, match="backend"):
        MiniLMEmbedder(backend="tensorflow")
    monkeypatch.setenv("AGENTSIM_MINILM_BACKEND", "torch")
    assert MiniLMEmbedder().backend == "torch"
