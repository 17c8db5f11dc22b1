"""The quantized candidate index must return exactly the full float32 scan's top-k (rows, order, scores)."""

import numpy as np
import pytest

from agents.memory import MemoryItem
from agents.memory.episodic import EpisodicMemory
from agents.memory.scoring import ScoreWeights, combined
from agents.memory.scoring import top_k as stable_top_k
from agents.memory.vector_index import VectorMatrix

pytest.importorskip("faiss")

DIM = 64


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def clustered(n: int, seed: int, dim: int = DIM) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((50, dim))
    return unit(centers[rng.integers(0, 50, n)] + 0.7 * rng.standard_normal((n, dim)))


def pair(vecs, clock, imp, min_rows=500, **kw) -> tuple[VectorMatrix, VectorMatrix]:
    """The same rows in a quantized and an exact matrix, added in chunks (growth after the first build)."""
    fast = VectorMatrix(vecs.shape[1], index="sq8", min_rows=min_rows, **kw)
    exact = VectorMatrix(vecs.shape[1], index="exact")
    for s in range(0, len(vecs), 700):
        sl = slice(s, s + 700)
        for m in (fast, exact):
            m.add(np.arange(len(vecs))[sl] + 1000, vecs[sl], clock[sl], imp[sl])
    assert fast.quantized
    return fast, exact


def reference(vecs, clock, imp, q, k, w) -> np.ndarray:
    """Independent reference: full float32 scan, `combined`, best first, ties by row number."""
    scores = combined(vecs @ q, clock, imp, w)
    return np.lexsort((np.arange(len(scores)), -scores))[:k]


def assert_same(fast, exact, vecs, clock, imp, queries, ks, w):
    for q in queries:
        for k in ks:
            a, b = fast.search(q, k, w), exact.search(q, k, w)
            assert a.rows.tolist() == b.rows.tolist()
            assert np.array_equal(a.scores, b.scores) and np.array_equal(a.sims, b.sims)
            assert a.rows.tolist() == reference(vecs, clock, imp, q, k, w).tolist()


def test_stable_top_k_breaks_ties_by_row():
    s = np.array([0.5, 0.9, 0.5, 0.9, 0.1], dtype=np.float32)
    assert stable_top_k(s, 3).tolist() == [1, 3, 0]
    assert stable_top_k(s, 3, rows=np.array([9, 8, 7, 6, 5])).tolist() == [3, 1, 2]
    assert stable_top_k(s, 10).tolist() == [1, 3, 0, 2, 4]


@pytest.mark.parametrize("n", [997, 1000, 1013])
def test_gathered_rows_get_bitwise_the_full_scan_similarities(n):
    """The assumption exactness rests on: a row's float32 dot product does not depend on which rows share
    the (padded) mat-vec call."""
    vecs = clustered(n, seed=n)
    m = VectorMatrix(DIM, index="exact")
    m.add(np.arange(n), vecs, np.arange(n, dtype=float), np.zeros(n, np.float32))
    rng = np.random.default_rng(0)
    for _ in range(30):
        q = unit(rng.standard_normal(DIM))
        full = m.similarities(q)
        rows = np.sort(rng.choice(n, int(rng.integers(1, 200)), replace=False))
        assert np.array_equal(m._sims_rows(rows, q), full[rows])
        start = int(rng.integers(0, n))
        assert np.array_equal(m._sims_range(start, n, q), full[start:])
        clock = m.clock
        w = ScoreWeights(1.0, 0.3, 0.2, 7.0)  # recency of a subset holding the newest row equals the full one
        sub = np.union1d(rows, [int(np.argmax(clock))])
        assert np.array_equal(
            combined(full[sub], clock[sub], m.importance[sub], w), combined(full, clock, m.importance, w)[sub]
        )


@pytest.mark.parametrize(
    "w",
    [
        ScoreWeights(1.0, 0.2, 0.1, 40.0),
        ScoreWeights(1.0, 0.0, 0.3, 40.0),
        ScoreWeights(0.7, 0.5, 0.0, 25.0),
        ScoreWeights(1.0, -0.2, -0.1, 40.0),
    ],
)
def test_quantized_top_k_equals_the_exact_scan(w):
    n = 5000
    rng = np.random.default_rng(1)
    vecs, clock = clustered(n, seed=2), np.arange(1, n + 1, dtype=float)
    imp = rng.random(n).astype(np.float32)
    fast, exact = pair(vecs, clock, imp)
    queries = np.vstack(
        [unit(vecs[rng.integers(0, n, 15)] + 0.2 * rng.standard_normal((15, DIM))), unit(rng.standard_normal((5, DIM)))]
    )
    assert_same(fast, exact, vecs, clock, imp, queries, (1, 5, 10, 40), w)
    assert fast.stats.quantized > 0  # the candidate path was exercised, not only the fallback


def test_old_important_memory_with_moderate_relevance_wins():
    """Row 3 is old (no recency), only moderately relevant, but importance 1.0 puts it first; every other old
    row is at least as relevant but unimportant. A relevance-only candidate cut would miss it."""
    n, rng = 6000, np.random.default_rng(3)
    q = unit(rng.standard_normal(DIM))
    noise = rng.standard_normal((n, DIM))
    noise = unit(noise - np.outer(noise @ q, q))  # orthogonal to q, then mix in q at a chosen similarity
    target = rng.uniform(0.5, 0.58, n)
    target[-300:] = 0.2  # the recent rows (10 half-lives) carry recency up to 0.2 but little relevance
    target[3] = 0.5
    vecs = unit(target[:, None] * q + np.sqrt(1 - target[:, None] ** 2) * noise)
    imp = np.zeros(n, np.float32)
    imp[3] = 1.0
    clock = np.arange(1, n + 1, dtype=float)
    w = ScoreWeights(1.0, 0.2, 0.1, 30.0)
    fast, exact = pair(vecs, clock, imp)
    hits = fast.search(q, 5, w)
    assert hits.rows[0] == 3
    assert_same(fast, exact, vecs, clock, imp, [q], (1, 5, 20), w)
    assert fast.stats.quantized > 0


def test_importance_outside_the_trained_range_is_rescored_exactly():
    n, rng = 4000, np.random.default_rng(4)
    vecs, clock = clustered(n, seed=5), np.arange(1, n + 1, dtype=float)
    imp = np.full(n, 0.1, np.float32)
    fast, exact = pair(vecs[:3000], clock[:3000], imp[:3000])
    extra_imp = imp[3000:].copy()
    extra_imp[100] = 10.0  # far outside [0, 1]: quantized as 1.0, so only exact rescoring ranks it right
    for m in (fast, exact):
        m.add(np.arange(3000, n), vecs[3000:], clock[3000:], extra_imp)
    imp = np.concatenate([imp[:3000], extra_imp])
    assert 3100 in fast._sq.exact_rows.tolist()
    q = unit(rng.standard_normal(DIM))
    q = -q if q @ vecs[3100] > 0 else q  # irrelevant: its quantized score is far below the candidates'
    w = ScoreWeights(1.0, 0.2, 0.1, 30.0)
    assert fast.search(q, 1, w).rows.tolist() == [3100]
    assert_same(fast, exact, vecs, clock, imp, [q, unit(vecs[5])], (1, 10), w)
    assert fast.stats.quantized > 0


def test_rows_just_older_than_the_exact_tail_are_bounded_by_recency():
    """With a short exact tail (2 half-lives) a row just before it keeps recency 0.25: it must win although
    its relevance is below every candidate's."""
    n, rng = 5000, np.random.default_rng(12)
    q = unit(rng.standard_normal(DIM))
    noise = rng.standard_normal((n, DIM))
    noise = unit(noise - np.outer(noise @ q, q))
    target = rng.uniform(0.5, 0.58, n)
    target[-1000:] = 0.2
    target[n - 201] = 0.5
    vecs = unit(target[:, None] * q + np.sqrt(1 - target[:, None] ** 2) * noise)
    clock, imp = np.arange(1, n + 1, dtype=float), np.zeros(n, np.float32)
    w = ScoreWeights(1.0, 0.4, 0.1, 100.0)
    fast, exact = pair(vecs, clock, imp, tail_half_lives=2.0)
    assert fast.search(q, 1, w).rows.tolist() == [n - 201]
    assert_same(fast, exact, vecs, clock, imp, [q], (1, 10), w)


def test_dense_relevance_within_the_quantization_error_stays_exact():
    """5000 rows whose similarities lie within 0.01 of each other: the 8-bit scores reorder them, so the top
    candidates alone are wrong unless the error bound forces a wider candidate set."""
    n, rng = 5000, np.random.default_rng(13)
    queries = unit(rng.standard_normal((5, DIM)))
    q = queries[0]
    noise = rng.standard_normal((n, DIM))
    noise = unit(noise - np.outer(noise @ q, q))
    target = rng.uniform(0.5, 0.51, n)
    vecs = unit(target[:, None] * q + np.sqrt(1 - target[:, None] ** 2) * noise)
    clock, imp = np.arange(1, n + 1, dtype=float), np.zeros(n, np.float32)
    w = ScoreWeights(1.0, 0.0, 0.1, 100.0)
    fast, exact = pair(vecs, clock, imp, initial_candidates=16)
    assert_same(fast, exact, vecs, clock, imp, queries, (1, 10, 30), w)
    assert fast.stats.widened + fast.stats.fallback > 0


def test_all_equal_relevance_falls_back_and_stays_exact():
    n = 3000
    vecs = np.repeat(unit(np.ones((1, DIM))), n, axis=0)
    rng = np.random.default_rng(6)
    clock, imp = np.arange(1, n + 1, dtype=float), rng.random(n).astype(np.float32)
    q = unit(rng.standard_normal(DIM))
    w = ScoreWeights(1.0, 0.2, 0.1, 20.0)
    fast, exact = pair(vecs, clock, imp)
    assert_same(fast, exact, vecs, clock, imp, [q], (1, 10), w)
    tie = ScoreWeights(1.0, 0.0, 0.0, 20.0)  # every score equal: row order decides, in both paths
    assert fast.search(q, 5, tie).rows.tolist() == exact.search(q, 5, tie).rows.tolist() == [0, 1, 2, 3, 4]
    assert fast.stats.fallback > 0


def test_time_clock_out_of_order_and_drifting_data_stay_exact():
    """Clocks are not monotone (clock="time"); later rows come from a wider distribution than the 1400 rows
    the quantizer was trained on, which makes them exact rows until a retrain."""
    n, rng = 6000, np.random.default_rng(7)
    first = unit(clustered(2100, seed=8) * np.r_[np.ones(DIM // 2), 0.05 * np.ones(DIM // 2)])
    vecs = np.vstack([first, clustered(n - 2100, seed=9)])
    clock = np.arange(n) + rng.uniform(-30, 30, n)  # mostly increasing, locally shuffled
    imp = rng.random(n).astype(np.float32)
    fast, exact = pair(vecs, clock, imp, min_rows=1400)
    assert len(fast._sq.exact_rows) < 1024  # retrained once the drifted rows passed the limit
    w = ScoreWeights(1.0, 0.3, 0.1, 15.0)
    queries = unit(vecs[rng.integers(0, n, 10)] + 0.3 * rng.standard_normal((10, DIM)))
    assert_same(fast, exact, vecs, clock, imp, queries, (1, 10), w)
    assert fast.stats.quantized > 0


def _items(n: int, rng) -> list[MemoryItem]:
    return [MemoryItem(f"memory {i}", importance=float(rng.random())) for i in range(n)]


def test_episodic_quantized_index_survives_clear_and_reload(tmp_path, hashing):
    rng = np.random.default_rng(10)
    n, dim = 3000, hashing.dim
    vecs = clustered(n, seed=11, dim=dim)
    items = _items(n, rng)
    opts = {"embedder": hashing, "half_life": 30.0, "index_min_rows": 1000}
    fast = EpisodicMemory(path=str(tmp_path / "f.db"), index="sq8", **opts)
    exact = EpisodicMemory(path=str(tmp_path / "e.db"), index="exact", **opts)
    for m in (fast, exact):
        for s in range(0, n, 600):
            m.add_embedded(items[s : s + 600], vecs[s : s + 600])
    queries = unit(vecs[rng.integers(0, n, 8)] + 0.2 * rng.standard_normal((8, dim)))

    def same(a: EpisodicMemory, b: EpisodicMemory) -> list[list[str]]:
        got = []
        for q in queries:
            x, y = a.retrieve_vector(q, 10), b.retrieve_vector(q, 10)
            assert [i.text for i in x] == [i.text for i in y]
            assert [i.meta["score"] for i in x] == [i.meta["score"] for i in y]
            got.append([i.text for i in x])
        return got

    before = same(fast, exact)
    assert fast.index.quantized and fast.index.stats.quantized > 0
    fast.close()
    again = EpisodicMemory(path=str(tmp_path / "f.db"), index="sq8", **opts)
    assert again.index.quantized and again.index.n == n
    assert same(again, exact) == before
    again.clear()
    assert not again.index.quantized and again.index.n == 0 and again.retrieve_vector(queries[0], 3) == []
    exact.clear()
    small = _items(500, rng)
    for m in (again, exact):
        m.add_embedded(small, vecs[:500])
    assert not again.index.quantized  # below index_min_rows: plain scan
    same(again, exact)
    for m in (again, exact):
        m.add_embedded(items[500:], vecs[500:])
    assert again.index.quantized  # retrained on the rows present after the clear
    same(again, exact)
