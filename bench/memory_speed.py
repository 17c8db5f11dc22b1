"""Speed of the episodic memory at 10k and 100k memories, and the vector index comparison behind its choice.

Retrieval paths are compared side by side in one run (`Variant`): the old one (torch MiniLM + full float32
scan) and the default one (onnxruntime MiniLM + 8-bit candidates with exact rescoring). Bulk memories get
synthetic clustered 384-d vectors (embedding 100k texts with MiniLM would take minutes and measure the model,
which is reported separately as sentences/s per backend); queries are real MiniLM embeddings.
"""

from __future__ import annotations

import logging
import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from agents.memory import MemoryItem
from agents.memory.embeddings import Embedder
from agents.memory.episodic import EpisodicMemory
from agents.memory.scoring import ScoreWeights
from agents.memory.sq_candidates import faiss_module
from agents.memory.vector_index import VectorMatrix

log = logging.getLogger(__name__)
WORDS = (
    "alice bob market river garden engine coffee ticket doctor window signal letter silver storm piano "
    "harbor lemon castle rocket candle forest tunnel bridge violin orange planet"
).split()


def clustered(n: int, dim: int, seed: int, centers: int = 1000) -> np.ndarray:
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((centers, dim)).astype(np.float32)
    x = c[rng.integers(0, centers, n)] + 0.6 * rng.standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def texts(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, 8)) + f" #{i}" for i in range(n)]


def pct(xs: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs) * 1000, p))


@dataclass
class Variant:
    """One retrieval path: an embedder and an index mode (EpisodicConfig.index)."""

    label: str
    embedder: Embedder
    index: str


@dataclass
class SpeedRow:
    path: str  # Variant.label
    n: int
    bulk_add_per_s: float  # store + index, precomputed vectors
    add_ms_with_embedding: float  # per item, adds through add() in batches of 64 (MiniLM)
    retrieve_p50_ms: float  # end to end: MiniLM query embedding + scoring all rows + SQLite fetch
    retrieve_p95_ms: float
    search_p50_ms: float  # query already embedded
    search_p95_ms: float
    reopen_s: float  # restart: reload rows + embeddings from SQLite (and re-quantize)
    store_mb: float
    searches: dict  # VectorMatrix.stats: exact / quantized / widened / fallback counts and fallback_rate
    exact_mismatches: int  # queries whose top-10 differs from the full float32 scan (must be 0)


def _build(v: Variant, path: Path, n: int, real: list[str]) -> tuple[EpisodicMemory, float, float]:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    mem = EpisodicMemory(path=str(path), embedder=v.embedder, index=v.index)
    vecs, txt = clustered(n, v.embedder.dim, seed=n), texts(n, seed=n)
    t0 = time.perf_counter()
    for s in range(0, n, 5000):
        mem.add_embedded(
            [MemoryItem(t, kind="observation", importance=0.1) for t in txt[s : s + 5000]], vecs[s : s + 5000]
        )
    bulk = n / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    for t in real:
        mem.add(MemoryItem(t))
    mem.flush()
    return mem, bulk, (time.perf_counter() - t0) / len(real) * 1000


def run_speed(
    variants: list[Variant], workdir: Path, sizes: tuple[int, ...] = (10_000, 100_000), queries: int = 100
) -> list[SpeedRow]:
    """Per size, every variant gets its own store with the same rows; queries alternate between variants so
    load from other work on the machine hits them alike."""
    rows = []
    qtexts = [
        f"where did {a} leave the {b} near the {c}?"
        for a, b, c in zip(
            np.random.default_rng(1).choice(WORDS, queries),
            np.random.default_rng(2).choice(WORDS, queries),
            np.random.default_rng(3).choice(WORDS, queries),
        )
    ]
    qtexts = [f"{t} ({i})" for i, t in enumerate(qtexts)]  # distinct: no cache hits
    real = texts(256, 99)
    for n in sizes:
        built = [(v, *_build(v, workdir / f"speed_{n}_{i}.db", n, real)) for i, v in enumerate(variants)]
        timing = {v.label: ([], []) for v in variants}
        qvecs = {v.label: v.embedder.embed(qtexts) for v in variants}
        for _v, mem, *_ in built:
            mem.retrieve("warm up", 5)
            mem.index.stats = type(mem.index.stats)()  # count the measured queries only
        for i, t in enumerate(qtexts):
            for v, mem, *_ in built:
                e2e, search = timing[v.label]
                t0 = time.perf_counter()
                mem.retrieve(f"{t} [n={n}]", 10)  # a text never embedded before: no query-cache hit
                e2e.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                mem.retrieve_vector(qvecs[v.label][i], 10)
                search.append(time.perf_counter() - t0)
        for v, mem, bulk, add_ms in built:
            stats = mem.index.stats.as_dict()
            mismatches = sum(
                mem.index.search(q, 10, mem.weights).rows.tolist()
                != mem.index._search_exact(q, 10, mem.weights).rows.tolist()
                for q in qvecs[v.label]
            )
            path = Path(mem.config.path)
            mem.store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            mem.close()
            size = sum(os.path.getsize(f"{path}{s}") for s in ("", "-wal") if os.path.exists(f"{path}{s}"))
            t0 = time.perf_counter()
            again = EpisodicMemory(path=str(path), embedder=v.embedder, index=v.index)
            reopen = time.perf_counter() - t0
            assert len(again) == n + len(real), "restart lost memories"
            again.close()
            e2e, search = timing[v.label]
            rows.append(
                SpeedRow(
                    v.label,
                    n,
                    bulk,
                    add_ms,
                    pct(e2e, 50),
                    pct(e2e, 95),
                    pct(search, 50),
                    pct(search, 95),
                    reopen,
                    size / 2**20,
                    stats,
                    mismatches,
                )
            )
        log.info("speed: n=%d done", n)
    return rows


def embed_throughput(embedder: Embedder, sentences: list[str]) -> float:
    """Sentences/s for one batched embed() call (batches of the embedder's batch_size, sorted by length)."""
    embedder.embed(sentences[:64])
    t0 = time.perf_counter()
    embedder.embed(sentences)
    return len(sentences) / (time.perf_counter() - t0)


def query_latency(embedder: Embedder, queries: int = 100) -> dict[str, float]:
    """Single-query embedding latency (distinct texts, so the LRU cache never answers)."""
    ts = []
    embedder.embed(["warm up query"])
    for i in range(queries):
        t0 = time.perf_counter()
        embedder.embed([f"where did the doctor leave the silver ticket? ({i}) {time.perf_counter_ns()}"])
        ts.append(time.perf_counter() - t0)
    return {"p50_ms": pct(ts, 50), "p95_ms": pct(ts, 95)}


@dataclass
class IndexRow:
    backend: str
    n: int
    build_s: float
    p50_ms: float
    p95_ms: float
    recall_at_10: float
    note: str = ""


def _time(fn, qs: np.ndarray) -> tuple[list[np.ndarray], list[float]]:
    res, ts = [], []
    for q in qs:
        t0 = time.perf_counter()
        res.append(fn(q))
        ts.append(time.perf_counter() - t0)
    return res, ts


def run_index_comparison(
    sizes: tuple[int, ...] = (10_000, 100_000), dim: int = 384, queries: int = 100, k: int = 10
) -> list[IndexRow]:
    rows: list[IndexRow] = []
    for n in sizes:
        x = clustered(n, dim, seed=7)
        rng = np.random.default_rng(8)
        qs = x[rng.integers(0, n, queries)] + 0.3 * rng.standard_normal((queries, dim)).astype(np.float32)
        qs /= np.linalg.norm(qs, axis=1, keepdims=True)

        from agents.memory.vector_index import _single_thread

        def exact(q: np.ndarray) -> np.ndarray:
            with _single_thread():  # as VectorMatrix does
                s = x @ q
            p = np.argpartition(-s, k)[:k]
            return p[np.argsort(-s[p])]

        truth, ts = _time(exact, qs)
        rows.append(IndexRow("numpy exact (chosen below 20k)", n, 0.0, pct(ts, 50), pct(ts, 95), 1.0))

        def recall(res: list[np.ndarray]) -> float:
            return float(np.mean([len(set(map(int, r)) & set(map(int, t))) / k for r, t in zip(res, truth)]))

        if faiss_module() is not None:
            vm = VectorMatrix(dim, index="sq8", min_rows=0)
            t0 = time.perf_counter()
            vm.add(np.arange(n), x, np.arange(n, dtype=float), np.zeros(n, np.float32))
            b = time.perf_counter() - t0
            w = ScoreWeights(1.0, 0.0, 0.0)
            res, ts = _time(lambda q: vm.search(q, k, w).rows, qs)
            rows.append(
                IndexRow(
                    "faiss SQ8 candidates + exact rescoring (chosen)",
                    n,
                    b,
                    pct(ts, 50),
                    pct(ts, 95),
                    recall(res),
                    f"exact by construction; full-scan fallbacks {vm.stats.fallback}/{len(qs)}",
                )
            )

        try:
            import faiss

            t0 = time.perf_counter()
            flat = faiss.IndexFlatIP(dim)
            flat.add(x)
            b = time.perf_counter() - t0
            res, ts = _time(lambda q: flat.search(q[None], k)[1][0], qs)
            rows.append(IndexRow("faiss IndexFlatIP", n, b, pct(ts, 50), pct(ts, 95), recall(res)))
            t0 = time.perf_counter()
            hnsw = faiss.IndexHNSWFlat(dim, 32, faiss.METRIC_INNER_PRODUCT)
            hnsw.hnsw.efConstruction = 80
            hnsw.add(x)
            hnsw.hnsw.efSearch = 64
            b = time.perf_counter() - t0
            res, ts = _time(lambda q: hnsw.search(q[None], k)[1][0], qs)
            rows.append(
                IndexRow(
                    "faiss HNSW32 ef64",
                    n,
                    b,
                    pct(ts, 50),
                    pct(ts, 95),
                    recall(res),
                    "approximate; recency/importance rescoring needs a candidate cut-off",
                )
            )
        except ImportError:
            rows.append(
                IndexRow("faiss", n, float("nan"), float("nan"), float("nan"), float("nan"), "faiss-cpu not installed")
            )
        rows.append(_sqlite_vec(x, qs, k, recall))
    return rows


def _sqlite_vec(x: np.ndarray, qs: np.ndarray, k: int, recall) -> IndexRow:
    n, dim = x.shape
    try:
        import sqlite_vec
    except ImportError:
        return IndexRow("sqlite-vec", n, float("nan"), float("nan"), float("nan"), float("nan"), "not installed")
    import sqlite3

    conn = sqlite3.connect(":memory:")
    note = ""
    if not hasattr(conn, "enable_load_extension"):
        try:
            import apsw  # this Python's sqlite3 was built without loadable extensions
        except ImportError:
            return IndexRow(
                "sqlite-vec",
                n,
                float("nan"),
                float("nan"),
                float("nan"),
                float("nan"),
                "this Python's sqlite3 cannot load extensions (and apsw is not installed)",
            )
        conn = apsw.Connection(":memory:")
        note = "via apsw: this Python's sqlite3 cannot load extensions"
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    conn.execute(f"CREATE VIRTUAL TABLE v USING vec0(embedding float[{dim}] distance_metric=cosine)")
    t0 = time.perf_counter()
    conn.execute("BEGIN")
    for i in range(n):
        conn.execute("INSERT INTO v(rowid, embedding) VALUES (?, ?)", (i, x[i].tobytes()))
    conn.execute("COMMIT")
    b = time.perf_counter() - t0
    q_sql = "SELECT rowid FROM v WHERE embedding MATCH ? AND k = ? ORDER BY distance"
    res, ts = _time(lambda q: np.asarray([r[0] for r in conn.execute(q_sql, (q.tobytes(), k))]), qs)
    return IndexRow("sqlite-vec vec0", n, b, pct(ts, 50), pct(ts, 95), recall(res), note)


def stats_ms(xs: list[float]) -> dict[str, float]:
    return {"p50": statistics.median(xs) * 1000, "max": max(xs) * 1000}
