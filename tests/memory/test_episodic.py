import sqlite3

import numpy as np
import pytest

from agents.memory import MemoryItem, MemoryStateError
from agents.memory.episodic import EpisodicMemory
from agents.memory.scoring import ScoreWeights, combined, recency, top_k
from tests.memory.conftest import count_words


class CountingEmbedder:
    """Wraps an embedder and records batch sizes, to check batching."""

    def __init__(self, inner):
        self.inner, self.name, self.dim, self.calls = inner, inner.name, inner.dim, []

    def embed(self, texts):
        self.calls.append(len(texts))
        return self.inner.embed(texts)


def test_recency_decays_from_the_newest_memory():
    clock = np.array([0.0, 90.0, 100.0])
    assert recency(clock, half_life=10).tolist() == pytest.approx([2**-10, 0.5, 1.0])
    # shifting every clock (an idle week) changes nothing
    assert recency(clock + 1e6, 10).tolist() == pytest.approx(recency(clock, 10).tolist())


def test_weights_trade_relevance_against_recency_and_importance():
    sims = np.array([0.9, 0.5, 0.5])
    clock = np.array([0.0, 100.0, 50.0])
    imp = np.array([0.0, 0.0, 1.0], dtype=np.float32)
    assert top_k(combined(sims, clock, imp, ScoreWeights(1, 0, 0, 10)), 1).tolist() == [0]
    assert top_k(combined(sims, clock, imp, ScoreWeights(1, 1, 0, 10)), 1).tolist() == [1]
    assert top_k(combined(sims, clock, imp, ScoreWeights(1, 0, 1, 10)), 3).tolist() == [2, 0, 1]


def test_retrieves_relevant_memory_among_many(hashing):
    mem = EpisodicMemory(embedder=hashing, recency_weight=0.0, importance_weight=0.0)
    mem.add_many([MemoryItem(f"filler event number {i} about the weather") for i in range(300)])
    mem.add(MemoryItem("the red key is hidden under the doormat", kind="observation", meta={"turn_id": 7}))
    mem.add_many([MemoryItem(f"another filler {i}") for i in range(100)])
    top = mem.retrieve("where is the red key hidden", k=3)
    assert top[0].meta["turn_id"] == 7 and top[0].meta["score"] >= top[1].meta["score"]


def test_recency_breaks_ties_toward_the_newer_statement(hashing):
    mem = EpisodicMemory(embedder=hashing, recency_weight=0.3, half_life=50)
    mem.add(MemoryItem("the meeting room is B12", meta={"v": "old"}))
    mem.add_many([MemoryItem(f"noise {i}") for i in range(40)])
    mem.add(MemoryItem("the meeting room is B12", meta={"v": "new"}))
    assert mem.retrieve("meeting room", k=1)[0].meta["v"] == "new"


def test_adds_are_embedded_in_batches(hashing):
    emb = CountingEmbedder(hashing)
    mem = EpisodicMemory(embedder=emb, batch_size=16)
    for i in range(40):
        mem.add(MemoryItem(f"event {i}"))
    assert emb.calls == [16, 16] and len(mem) == 40
    mem.retrieve("event", 2)  # flushes the 8 pending, then embeds the query
    assert emb.calls == [16, 16, 8, 1]


def test_survives_a_restart_from_sqlite(tmp_path, hashing):
    path = tmp_path / "mem.db"
    mem = EpisodicMemory(path=str(path), embedder=hashing)
    mem.on_episode_start("open the safe")
    mem.add(MemoryItem("the safe code is 4711", kind="observation", importance=0.9))
    mem.on_episode_end({"success": True})
    before = [i.text for i in mem.retrieve("safe code", 3)]
    mem.close()
    again = EpisodicMemory(path=str(path), embedder=hashing)
    assert len(again) == 3 and [i.text for i in again.retrieve("safe code", 3)] == before
    again.on_episode_start("next")  # episode numbering continues
    assert again.retrieve("Episode 2 started", 1)[0].meta["episode"] == 2


def test_file_state_refers_to_the_store_and_detects_truncation(tmp_path, hashing):
    path = tmp_path / "mem.db"
    mem = EpisodicMemory(path=str(path), embedder=hashing)
    mem.add_many([MemoryItem(f"m{i}") for i in range(10)])
    state = mem.save_state()
    assert "items" not in state and state["count"] == 10
    mem.close()
    with sqlite3.connect(path) as c:
        c.execute("DELETE FROM memories WHERE id > 5")
    with pytest.raises(MemoryStateError, match="holds 5 memories but the state was saved with 10"):
        EpisodicMemory(embedder=hashing).load_state(state)
    (tmp_path / "gone.db").unlink(missing_ok=True)
    state["config"]["path"] = str(tmp_path / "gone.db")
    with pytest.raises(MemoryStateError, match="does not exist"):
        EpisodicMemory(embedder=hashing).load_state(state)


def test_corrupt_store_file_and_foreign_embedder_are_clear_errors(tmp_path, hashing):
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(MemoryStateError, match="not a readable SQLite database"):
        EpisodicMemory(path=str(bad), embedder=hashing)
    good = tmp_path / "good.db"
    EpisodicMemory(path=str(good), embedder=hashing).close()
    from agents.memory.embeddings import HashingEmbedder

    with pytest.raises(MemoryStateError, match="embedder"):
        EpisodicMemory(path=str(good), embedder=HashingEmbedder(dim=64))
    mem = EpisodicMemory(path=str(good), embedder=hashing)
    mem.add(MemoryItem("x"))
    mem.close()
    with sqlite3.connect(good) as c:
        c.execute("UPDATE memories SET embedding = x'00'")
    with pytest.raises(MemoryStateError, match="row 1 has an embedding of 1 bytes"):
        EpisodicMemory(path=str(good), embedder=hashing)


def test_inline_state_rejects_mismatched_embeddings(hashing):
    mem = EpisodicMemory(embedder=hashing)
    mem.add_many([MemoryItem("a"), MemoryItem("b")])
    state = mem.save_state()
    state["embeddings_b64"] = state["embeddings_b64"][:8]
    with pytest.raises(MemoryStateError, match="embeddings_b64"):
        EpisodicMemory(embedder=hashing).load_state(state)


def test_context_is_chronological_within_budget(hashing):
    mem = EpisodicMemory(embedder=hashing, context_k=3, recency_weight=0)
    mem.add_many([MemoryItem("apple pie recipe"), MemoryItem("car repair"), MemoryItem("apple tree in garden")])
    ctx = mem.build_context("apple", 100, count_words)
    lines = ctx.splitlines()
    assert lines[0] == "Relevant memories:" and lines.index("[event #1] apple pie recipe") < lines.index(
        "[event #3] apple tree in garden"
    )
    assert count_words(mem.build_context("apple", 6, count_words)) <= 6
