import json

import pytest

from agents.memory import Memory, MemoryItem, MemoryStateError, make_memory, memory_names
from agents.memory.composite import CompositeMemory
from tests.memory.conftest import ScriptedBrain, count_words

ALL = ["episodic", "facts", "reflective", "summary", "working"]
OPTS = {"episodic": {"embedder": "hashing"}}


@pytest.mark.parametrize("name", ALL)
def test_every_memory_keeps_the_protocol_and_round_trips_through_json(name):
    mem = make_memory(name, **OPTS.get(name, {}))
    assert isinstance(mem, Memory) and mem.name == name
    mem.on_episode_start("find the blue mug")
    for i in range(30):
        mem.add(
            MemoryItem(
                f"Bob's favorite color is color{i}",
                kind="observation",
                time=i + 1,
                meta={"speaker": "Bob", "turn_id": i},
            )
        )
    mem.on_episode_end({"success": True, "reward": 1.0})
    mem.build_context("what is Bob's favorite color?", 200, count_words)
    state = json.loads(json.dumps(mem.save_state()))  # JSON-able
    fresh = make_memory(name, **OPTS.get(name, {}))
    fresh.load_state(state)
    assert fresh.save_state() == mem.save_state()
    assert [i.text for i in fresh.retrieve("Bob favorite color", 3)] == [
        i.text for i in mem.retrieve("Bob favorite color", 3)
    ]


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("bad", [None, [], {"kind": "other", "version": 1}, "garbage"])
def test_corrupt_state_is_a_clear_error(name, bad):
    mem = make_memory(name, **OPTS.get(name, {}))
    with pytest.raises(MemoryStateError, match=name):
        mem.load_state(bad)


@pytest.mark.parametrize("name", ALL)
def test_truncated_state_is_a_clear_error(name):
    mem = make_memory(name, **OPTS.get(name, {}))
    mem.add(MemoryItem("Alice's city is Paris", meta={"speaker": "Alice"}))
    mem.on_episode_end({"success": False})
    state = mem.save_state()
    for key in [k for k in state if k not in ("kind", "version")]:
        broken = dict(state)
        broken[key] = 12345 if isinstance(state[key], str) else "garbage"  # wrong type for every field
        with pytest.raises(MemoryStateError):
            make_memory(name, **OPTS.get(name, {})).load_state(broken)


def test_build_context_respects_budget_and_records_injection():
    for name in ALL:
        mem = make_memory(name, **OPTS.get(name, {}))
        mem.on_episode_start("task")
        for i in range(50):
            mem.add(MemoryItem(f"turn {i}: Carol's pet is a cat number {i}", meta={"speaker": "Carol"}))
        mem.on_episode_end({"success": False, "reason": "timeout"})
        mem.on_episode_start("task")
        text = mem.build_context("Carol's pet", 40, count_words)
        assert count_words(text) <= 40, name
        assert mem.last_injected == text


def test_unknown_names_and_options_fail_with_choices():
    with pytest.raises(ValueError, match="valid: episodic, facts, reflective, summary, working"):
        make_memory("vector")
    with pytest.raises(ValueError, match="invalid options for episodic"):
        make_memory("episodic", embedder="hashing", half_life=-1)
    with pytest.raises(ValueError, match="nested under a part name"):
        make_memory("working+facts", max_items=3)
    assert memory_names() == ALL


def test_composite_fans_out_and_splits_budget():
    brain = ScriptedBrain(["- Check the fuse before the relay."])
    mem = make_memory("working+reflective+facts", brain=brain, working={"max_items": 10}, weights={"working": 2.0})
    assert isinstance(mem, CompositeMemory) and mem.name == "working+reflective+facts"
    mem.on_episode_start("diagnose the lamp")
    mem.add(MemoryItem("Dana's lamp is broken", kind="observation", meta={"speaker": "Dana"}))
    mem.add(MemoryItem("check fuse", kind="action"))
    mem.on_episode_end({"success": True})
    mem.on_episode_start("diagnose the lamp again")
    mem.add(MemoryItem("the lamp flickers", kind="observation"))
    ctx = mem.build_context("lamp", 200, count_words)
    assert "Check the fuse before the relay." in ctx  # reflective lesson
    assert "Dana lamp: broken" in ctx  # fact
    assert "the lamp flickers" in ctx  # working window
    assert count_words(ctx) <= 200
    state = json.loads(json.dumps(mem.save_state()))
    other = make_memory("working+reflective+facts", brain=brain)
    other.load_state(state)
    assert other.part("facts").history("Dana", "lamp")[-1].value == "broken"
    with pytest.raises(MemoryStateError, match="do not match"):
        make_memory("working+facts").load_state(state)


def test_registry_passes_the_brain_only_to_memories_that_take_one():
    from agents.memory.registry import MEMORY_REGISTRY
    from agents.memory.summary import BrainSummarizer

    brain = ScriptedBrain(["a summary"])
    assert type(make_memory("summary", brain=brain).summarizer) is BrainSummarizer
    assert make_memory("working", brain=brain).name == "working"  # WorkingMemory has no brain parameter
    assert make_memory("episodic", brain=brain, embedder="hashing").name == "episodic"
    assert MEMORY_REGISTRY.names()[:5] == ALL and "working" in MEMORY_REGISTRY


def test_memory_registered_in_code_is_built_by_name_and_listed():
    from agents.memory.registry import MEMORY_REGISTRY
    from agents.memory.working import WorkingMemory

    def tiny(max_items: int = 2) -> WorkingMemory:
        mem = WorkingMemory(max_items=max_items)
        mem.name = "tiny"
        return mem

    MEMORY_REGISTRY.register("tiny", tiny)
    try:
        mem = make_memory("working+tiny", weights={"tiny": 0.5}, tiny={"max_items": 3})
        assert isinstance(mem, CompositeMemory) and mem.part("tiny").max_items == 3
        assert memory_names() == ALL + ["tiny"]
    finally:
        MEMORY_REGISTRY.unregister("tiny")
    with pytest.raises(ValueError, match="unknown memory 'tiny'"):
        make_memory("tiny")
