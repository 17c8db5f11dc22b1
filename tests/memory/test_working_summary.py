import pytest

from agents.memory import MemoryItem
from agents.memory.summary import SummaryMemory
from agents.memory.working import WorkingMemory
from tests.memory.conftest import EchoSummaryBrain, ScriptedBrain, count_words


def test_working_window_keeps_newest_contiguous_lines():
    mem = WorkingMemory(max_items=5)
    for i in range(8):
        mem.add(MemoryItem(f"step {i}"))
    assert [i.text for i in mem.retrieve("x", 10)] == [f"step {i}" for i in range(3, 8)]
    ctx = mem.build_context("x", 9, count_words)  # each line costs 3 words + 1
    assert ctx.splitlines() == ["[event] step 6", "[event] step 7"]


def test_summary_folds_overflow_through_the_brain():
    brain = EchoSummaryBrain()
    mem = SummaryMemory(brain=brain, window_items=4, fold_items=2)
    for i in range(7):
        mem.add(MemoryItem(f"fact{i}", meta={"turn_id": i}))
    # 7 adds into a window of 4 folding 2 at a time: two folds (at the 5th and 7th add)
    assert len(brain.prompts) == 2 and mem.folded == 4
    assert mem.summary == "fact0 fact1 fact2 fact3"
    assert [i.text for i in mem.window] == ["fact4", "fact5", "fact6"]
    assert mem.summary_sources == [0, 1, 2, 3]
    assert "Current summary:\nfact0 fact1" in brain.prompts[1][-1]["content"]
    ctx = mem.build_context("q", 100, count_words)
    assert ctx.startswith("Summary of earlier events:\nfact0 fact1 fact2 fact3")
    assert ctx.endswith("[event] fact4\n[event] fact5\n[event] fact6")
    assert [i.kind for i in mem.retrieve("q", 3)] == ["summary", "event", "event"]


def test_summary_without_brain_is_extractive_and_bounded():
    mem = SummaryMemory(window_items=2, fold_items=1, summary_max_tokens=16)  # 64 chars
    for i in range(30):
        mem.add(MemoryItem(f"line number {i:02d}"))
    assert len(mem.summary) <= 64 and mem.summary.endswith("line number 27")
    assert "line number 00" not in mem.summary


def test_summary_empty_brain_reply_keeps_events():
    mem = SummaryMemory(brain=ScriptedBrain([""]), window_items=1, fold_items=1)
    mem.add(MemoryItem("keep me"))
    mem.add(MemoryItem("next"))
    assert "keep me" in mem.summary


def test_summary_budget_cuts_an_overlong_summary():
    mem = SummaryMemory(brain=EchoSummaryBrain(), window_items=1, fold_items=1)
    for i in range(60):
        mem.add(MemoryItem(f"w{i}"))
    assert count_words(mem.build_context("q", 20, count_words)) <= 20


def test_summary_config_is_validated():
    with pytest.raises(ValueError, match="fold_items"):
        SummaryMemory(window_items=2, fold_items=3)
