import pytest

from agents.memory import MemoryItem, MemoryStateError
from agents.memory.fact_extract import RuleExtractor, Triple
from agents.memory.facts import FactsMemory
from tests.memory.conftest import count_words


def test_new_contradicting_fact_supersedes_and_old_is_history():
    mem = FactsMemory()
    assert mem.assert_fact("Alice", "lives in", "Berlin", time=10).status == "new"
    r = mem.assert_fact("Alice", "lives in", "Paris", time=20)
    assert r.status == "superseded" and r.previous.value == "Berlin"
    top = mem.retrieve("where does Alice live?", k=1)[0]
    assert top.meta["value"] == "Paris" and top.meta["history"] == [
        {"value": "Berlin", "time": 10.0, "until": 20.0, "source": None}
    ]
    assert [(f.value, f.time, f.until) for f in mem.history("alice", "Lives In")] == [
        ("Berlin", 10.0, 20.0),
        ("Paris", 20.0, None),
    ]
    ctx = mem.build_context("Alice", 50, count_words)
    assert "Alice lives in: Paris (since t=20); earlier: Berlin (until t=20)" in ctx
    assert "Berlin" not in [i.meta["value"] for i in mem.retrieve("Alice lives", 5)]


def test_repeat_confirms_late_fact_goes_to_history_multi_valued_accumulates():
    mem = FactsMemory(multi_valued=["likes"])
    mem.assert_fact("Bob", "job", "nurse", time=5)
    assert mem.assert_fact("bob", "job", "Nurse", time=6).status == "confirmed"
    assert mem.assert_fact("Bob", "job", "pilot", time=1).status == "historical"  # told late, older
    assert mem.retrieve("Bob job", 1)[0].meta["value"] == "nurse"
    mem.assert_fact("Bob", "likes", "tea", time=7)
    assert mem.assert_fact("Bob", "likes", "jazz", time=8).status == "added"
    assert {i.meta["value"] for i in mem.retrieve("what does Bob like", 5) if i.meta["relation"] == "likes"} == {
        "tea",
        "jazz",
    }


def test_rule_extractor_reads_common_statement_shapes():
    ex = RuleExtractor()
    assert ex.extract("Alice's favourite colour is green, she said.") == [Triple("Alice", "favorite color", "green")]
    assert ex.extract("Actually my dog's name is now Rex and he is 3.", speaker="Bo") == [
        Triple("Bo", "dog's name", "Rex")
    ]
    assert ex.extract("I just moved to Oslo!", speaker="Cy") == [Triple("Cy", "lives in", "Oslo")]
    assert ex.extract("Dana works as a nurse since May.") == [Triple("Dana", "works as", "nurse")]
    assert ex.extract("nice weather today", speaker="Bo") == []


def test_add_reads_text_or_explicit_triples_and_keeps_source():
    mem = FactsMemory()
    mem.add(MemoryItem("My car is red", time=3, meta={"speaker": "Eve", "turn_id": "s1t4"}))
    mem.add(
        MemoryItem(
            "(structured)",
            time=9,
            meta={"facts": [{"subject": "Eve", "relation": "car", "value": "blue"}], "turn_id": "s9t1"},
        )
    )
    top = mem.retrieve("what color is Eve's car", 1)[0]
    assert (top.meta["value"], top.meta["turn_id"]) == ("blue", "s9t1")
    assert top.meta["history"][0]["source"] == "s1t4"


def test_current_fact_marked_superseded_in_state_is_rejected():
    mem = FactsMemory()
    mem.assert_fact("A", "b", "c")
    state = mem.save_state()
    state["current"][0]["until"] = 5.0
    with pytest.raises(MemoryStateError, match="current fact cannot be superseded"):
        FactsMemory().load_state(state)
    state["current"][0] = {"subject": "A"}
    with pytest.raises(MemoryStateError, match="current.0.relation"):
        FactsMemory().load_state(state)


def test_the_extractor_can_be_chosen_by_name_through_make_memory():
    from agents.memory import make_memory

    none = make_memory("facts", extractor="none")
    assert none.extractor is None and none.config.extractor == "none"
    none.add(MemoryItem("Alice lives in Paris.", kind="observation"))
    assert none.retrieve("where does Alice live", 3) == []  # nothing extracted from text
    rule = make_memory("working+facts", facts={"extractor": "rule"}).parts[1]
    assert isinstance(rule.extractor, RuleExtractor)
    rule.add(MemoryItem("Alice lives in Paris.", kind="observation"))
    assert "Paris" in rule.retrieve("where does Alice live", 3)[0].text
