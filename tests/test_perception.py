import pytest

from agents.brains.base import approx_tokens
from agents.perception import Perception, PerceptionConfig, perception_from_config


@pytest.mark.parametrize("layout", ["transcript", "single"])
def test_prompt_contains_all_parts(layout):
    p = Perception(PerceptionConfig(layout=layout)).build(
        instruction="buy socks",
        observation="results page",
        available_actions=["click[a]"],
        action_templates=["search[...]"],
        memory_context="[action] search[socks]",
        feedback="bad action",
        format_instructions="FORMAT",
    )
    sys, user = p.messages
    assert sys["role"] == "system" and "FORMAT" in sys["content"]
    if layout == "transcript":  # the task is stable, so it sits in the system turn
        assert "Task: buy socks" in sys["content"] and "buy socks" not in user["content"]
    else:
        assert "buy socks" in user["content"]
    assert p.turn == user["content"]
    for part in ("results page", "- click[a]", "- search[...]", "[action] search[socks]", "bad action"):
        assert part in user["content"]
    assert not p.cut


def test_budget_is_respected_and_cuts_marked():
    obs = "word " * 20000
    actions = [f"click[item {i}]" for i in range(500)]
    mem = "memory line\n" * 3000
    per = Perception(PerceptionConfig(budget_tokens=1000, max_actions_listed=500))
    p = per.build(instruction="task", observation=obs, available_actions=actions, memory_context=mem)
    assert p.tokens <= 1000
    assert set(p.cut) == {"observation", "actions", "memory"}
    assert "[...]" in p.messages[1]["content"]
    assert "click[item 0]" in p.messages[1]["content"]  # the head of the action list survives


def test_templates_overridable_and_unknown_option_rejected():
    per = perception_from_config(
        {
            "layout": "single",
            "user_template": "T={instruction} O={observation}{memory_block}{feedback_block}{actions_block}",
        },
        approx_tokens,
    )
    assert per.build(instruction="x", observation="y").messages[1]["content"] == "T=x O=y"
    with pytest.raises(ValueError, match="unknown perception option"):
        perception_from_config({"budget": 3}, approx_tokens)
    with pytest.raises(ValueError, match="layout must be one of transcript, single"):
        perception_from_config({"layout": "chat"}, approx_tokens)


def test_counts_with_model_tokenizer(local_brain):
    per = Perception(PerceptionConfig(budget_tokens=300), count_tokens=local_brain.count_tokens)
    p = per.build(instruction="task", observation="lorem ipsum dolor " * 500)
    real = sum(local_brain.count_tokens(m["content"]) for m in p.messages)
    assert real <= 300
