from agents.memory import MemoryItem
from agents.memory.reflective import ReflectiveMemory
from agents.memory.reflectors import RuleReflector, parse_lessons
from tests.memory.conftest import ScriptedBrain, count_words


def run_episode(mem, instruction, events, outcome):
    mem.on_episode_start(instruction)
    for e in events:
        mem.add(e)
    mem.on_episode_end(outcome)


def test_brain_lessons_are_injected_at_the_next_relevant_episode():
    brain = ScriptedBrain(
        [
            "- Ask which fuse blew before replacing parts.\n- Confirm the power supply first.",
            "1. Compare prices before buying shoes.",
        ]
    )
    mem = ReflectiveMemory(brain=brain)
    run_episode(
        mem,
        "diagnose why the kitchen lamp is dark",
        [MemoryItem("replace bulb", kind="action")],
        {"success": False, "reward": 0},
    )
    run_episode(mem, "buy running shoes under 50 dollars", [], {"success": True})
    assert "Task: diagnose why the kitchen lamp is dark" in brain.prompts[0][-1]["content"]
    assert "FAILED" in brain.prompts[0][-1]["content"]
    mem.on_episode_start("diagnose why the bedroom lamp is dark")
    ctx = mem.build_context("", 100, count_words)
    assert ctx.splitlines()[1] == "- Ask which fuse blew before replacing parts."
    assert ctx.index("fuse") < ctx.index("shoes") if "shoes" in ctx else True
    assert mem.last_injected == ctx


def test_rule_lessons_name_errors_and_the_working_path():
    r = RuleReflector()
    failed = r.reflect(
        "buy a red mug",
        [
            MemoryItem("click[blue mug]", kind="action"),
            MemoryItem(
                "Invalid action: no such button", kind="observation", meta={"error": "no such button 'blue mug'"}
            ),
        ],
        {"success": False, "truncated": True},
    )
    assert failed[0] == "Avoid the invalid action 'click[blue mug]' — it failed with: no such button 'blue mug'"
    assert "ran out of steps" in failed[1]
    ok = r.reflect(
        "buy a red mug",
        [MemoryItem("search[red mug]", kind="action"), MemoryItem("click[buy now]", kind="action")],
        {"reward": 1.0},
    )
    assert ok == ["For a task like 'buy a red mug', this worked in 2 steps: search[red mug] -> click[buy now]"]


def test_a_failure_that_really_ended_keeps_the_envs_final_feedback():
    r = RuleReflector()
    events = [
        MemoryItem("check[fuse]", kind="action"),
        MemoryItem("The fuse is fine.", kind="observation"),
        MemoryItem("diagnose[fuse]", kind="action"),
        MemoryItem("You diagnosed: fuse. The actual root cause(s): dead battery. Score 0.00.", kind="observation"),
    ]
    failed = r.reflect("the lamp is dark", events, {"success": False, "terminated": True, "truncated": False})
    assert failed[-1] == (
        "On the task 'the lamp is dark' the final feedback was: You diagnosed: fuse. "
        "The actual root cause(s): dead battery. Score 0.00."
    )
    cut = r.reflect("the lamp is dark", events[:2], {"success": False, "terminated": False, "truncated": True})
    assert not any("final feedback" in l for l in cut)  # a cut is not the env's verdict
    ok = r.reflect("the lamp is dark", events, {"success": True, "terminated": True})
    assert not any("final feedback" in l for l in ok)


def test_the_reflector_can_be_chosen_by_name_through_make_memory():
    from agents.memory import make_memory
    from agents.memory.reflectors import BrainReflector

    brain = ScriptedBrain(["- Check the fuse first."])
    rule = make_memory("working+reflective", brain=brain, reflective={"reflector": "rule"})
    part = rule.parts[1]
    assert isinstance(part.reflector, RuleReflector) and part.config.reflector == "rule"
    run_episode(part, "the lamp is dark", [MemoryItem("check[fuse]", kind="action")], {"success": False})
    assert part.lessons and brain.prompts == []  # the rule, not the brain, wrote the lesson
    auto = make_memory("reflective", brain=brain, reflector="auto")
    assert isinstance(auto.reflector, BrainReflector)


def test_repeated_lessons_are_counted_not_duplicated_and_capped():
    mem = ReflectiveMemory(max_lessons=3)
    for _ in range(3):
        run_episode(mem, "task A", [MemoryItem("go", kind="action")], {"success": True})
    assert len(mem.lessons) == 1 and mem.lessons[0].count == 3
    for i in range(5):
        run_episode(mem, f"task {i}", [MemoryItem(f"act{i}", kind="action")], {"success": True})
    assert len(mem.lessons) == 3 and mem.lessons[0].count == 3  # the confirmed lesson survives


def test_parse_lessons_accepts_bullets_numbers_or_a_sentence():
    assert parse_lessons("Sure!\n- one lesson here\n2) another lesson") == ["one lesson here", "another lesson"]
    assert parse_lessons("Always read the manual first.") == ["Always read the manual first."]
    assert parse_lessons("") == []


def test_unusable_brain_reflection_falls_back_to_rules():
    mem = ReflectiveMemory(brain=ScriptedBrain(["ok"]))
    run_episode(mem, "open the door", [MemoryItem("push door", kind="action")], {"success": True})
    assert mem.lessons[0].text.startswith("For a task like 'open the door', this worked")


def test_a_lesson_that_echoes_the_prompt_is_dropped():
    from agents.memory.reflectors import SYSTEM

    mem = ReflectiveMemory(brain=ScriptedBrain([SYSTEM]))
    run_episode(mem, "open the door", [MemoryItem("push door", kind="action")], {"success": False})
    assert len(mem.lessons) == 1 and "did not succeed" in mem.lessons[0].text
