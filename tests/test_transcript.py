"""The transcript layout: each step's prompt extends the last one, compaction comes in blocks, budgets hold."""

from __future__ import annotations

import re

import gymnasium as gym
import pytest

from agents.brains.base import approx_tokens
from agents.brains.chat_templates import gemma
from agents.brains.scripted import ScriptedBrain
from agents.core import Agent, run_episode
from agents.perception import Perception, PerceptionConfig
from agents.transcript import Transcript
from tests.toy_env import ENV_ID


def _prompts(rec) -> list[str]:
    return [gemma(s.messages) for s in rec.steps]


def test_each_prompt_extends_the_last_one_by_the_action_taken():
    env = gym.make(ENV_ID, length=8)
    agent = Agent(ScriptedBrain(), Perception(PerceptionConfig(budget_tokens=4000)))
    rec = run_episode(env, agent, seed=0)
    assert rec.outcome.success and len(rec.steps) >= 4
    prompts = _prompts(rec)
    for i in range(1, len(prompts)):
        prev_reply = prompts[i - 1] + f"{rec.steps[i - 1].raw_output}<end_of_turn>\n"
        assert prompts[i].startswith(prev_reply), f"step {i} does not extend step {i - 1}"
    # the task is stated once, in the system turn, not repeated per step
    assert prompts[-1].count("Task: Find the key") == 1


def test_single_layout_rebuilds_one_turn():
    env = gym.make(ENV_ID, length=8)
    agent = Agent(ScriptedBrain(), Perception(PerceptionConfig(layout="single")))
    rec = run_episode(env, agent, seed=0)
    assert all(len(s.messages) == 2 for s in rec.steps)


def test_compaction_happens_in_blocks_and_keeps_the_budget():
    t = Transcript(approx_tokens, compact_chars=20, low_water=0.8)
    for i in range(12):
        t.add(
            f"Observation:\n{'page text ' * 40} step {i}\n\nAvailable actions:\n- a\n- b\n", f"Action: a{i}", "x" * 400
        )
    full = t.tokens
    assert t.fit(full) is False  # within budget: nothing changes
    budget = full // 2
    assert t.fit(budget) is True
    assert t.tokens <= int(budget * 0.8)  # down to the low-water mark, so the next steps append without breaking
    compacted = [turn.compacted for turn in t.turns]
    assert not compacted[0]  # the first turn (often the problem statement) is compacted last
    assert compacted[1] and not compacted[-1]
    assert compacted[1:] == sorted(compacted[1:], reverse=True)  # the oldest block after it, contiguous
    msgs = t.messages()
    assert [m["role"] for m in msgs[:2]] == ["user", "assistant"] and msgs[-1]["content"] == "Action: a11"
    assert t.fit(budget) is False  # the next step fits: the prefix is stable again


def test_dropping_marks_what_is_not_shown():
    t = Transcript(approx_tokens, compact_chars=200)
    for i in range(30):
        t.add("o" * 400, f"Action: a{i}", "o" * 400)
    t.fit(300)
    assert t.dropped > 0 and t.tokens <= 300 and len(t.turns) >= 2
    msgs = t.messages()
    assert not msgs[0]["content"].startswith("(") and t.turns[0].assistant == "Action: a0"  # the first turn stays
    assert msgs[2]["content"].startswith(f"({t.dropped} earlier steps not shown)")


def test_prompt_with_history_stays_within_budget():
    env = gym.make(ENV_ID, length=8)
    agent = Agent(ScriptedBrain(), Perception(PerceptionConfig(budget_tokens=260)))
    rec = run_episode(env, agent, seed=0)
    for s in rec.steps:
        assert sum(approx_tokens(m["content"]) for m in s.messages) <= 260 + 8 * len(s.messages)


def test_low_water_validated():
    with pytest.raises(ValueError, match="low_water"):
        Transcript(approx_tokens, low_water=0.0)


# ---------------------------------------------------------------- the `compact` turn style
def _compact(**kw) -> Perception:
    return Perception(PerceptionConfig(budget_tokens=4000, turn_style="compact", **kw))


def test_compact_turn_folds_named_actions_and_refers_to_the_task():
    task = "Find a red cotton shirt under 30 dollars, size medium."
    obs = f"Instruction: {task}\n[Back to Search]\n[B01] Red cotton shirt $25\n[B02] Blue shirt $12"
    actions = ["click[back to search]", "click[b01]", "click[b02]", "click[next >]"]
    p = _compact().build(instruction=task, observation=obs, available_actions=actions, action_templates=["search[...]"])
    turn = p.turn
    assert task not in turn and "(the task above)" in turn  # stated once, in the system turn
    assert task in p.messages[0]["content"]
    # the three actions the page names become one line; the one it does not name stays listed, as do templates
    assert "- click[<a name shown above>]" in turn and "- click[next >]" in turn and "- search[...]" in turn
    assert "click[b01]" not in turn and "click[b02]" not in turn
    full = Perception(PerceptionConfig(budget_tokens=4000)).build(
        instruction=task, observation=obs, available_actions=actions, action_templates=["search[...]"]
    )
    assert approx_tokens(turn) < approx_tokens(full.turn)


def test_compact_turn_says_unchanged_for_a_repeated_view_and_the_prompt_still_extends():
    perception = _compact()
    t = Transcript(approx_tokens)
    kw = dict(instruction="Open the door.", observation="A room. A door.", available_actions=["open[door]", "wait"])
    first = perception.build(**kw, history=t)
    assert first.view_key and "A room. A door." in first.turn
    t.add(first.turn, "Action: wait", kw["observation"], view_key=first.view_key)
    again = perception.build(**kw, history=t)
    assert again.turn.startswith("Unchanged") and again.view_key == first.view_key
    assert again.messages[:-1] == [*first.messages[:-1], *t.messages()]  # the earlier prompt is its prefix
    t.add(again.turn, "Action: wait", kw["observation"], view_key=again.view_key)
    # a changed view is shown in full again; feedback on a rejected reply is never elided
    moved = perception.build(**{**kw, "observation": "Another room."}, history=t)
    assert "Another room." in moved.turn
    fb = perception.build(**kw, history=t, feedback="not an action")
    assert "not an action" in fb.turn and not fb.turn.startswith("Unchanged")
    # the digest survives a checkpoint (long multi-agent runs restore transcripts)
    restored = Transcript(approx_tokens)
    restored.load_state(t.save_state())
    assert restored.last_view_key == t.last_view_key and perception.build(**kw, history=restored).turn == again.turn


def test_compact_episode_extends_each_prompt_and_is_never_longer():
    def run(style: str):
        env = gym.make(ENV_ID, length=8)
        agent = Agent(ScriptedBrain(), Perception(PerceptionConfig(budget_tokens=4000, turn_style=style)))
        return run_episode(env, agent, seed=0)

    full, compact = run("full"), run("compact")
    assert compact.outcome.success and [s.action for s in compact.steps] == [s.action for s in full.steps]
    prompts = _prompts(compact)
    for i in range(1, len(prompts)):
        assert prompts[i].startswith(prompts[i - 1] + f"{compact.steps[i - 1].raw_output}<end_of_turn>\n")
    assert len(prompts[-1]) <= len(_prompts(full)[-1])  # never longer (shorter where views repeat: above)


def test_compact_turn_folds_actions_named_in_an_earlier_turn_on_fault_trees():
    """The fault tree is stated once, in the first turn; later turns' check lists name its nodes."""
    import envs  # noqa: F401  (registers the envs)

    def run(style: str):
        env = gym.make("agentsim/FaultTree-v0", split="train")
        agent = Agent(ScriptedBrain(), Perception(PerceptionConfig(budget_tokens=4000, turn_style=style)))
        return run_episode(env, agent, seed=0)

    full, compact = run("full"), run("compact")
    assert [s.action for s in compact.steps] == [s.action for s in full.steps]  # the prompt changed, not the policy
    later = [s.messages[-1]["content"] for s in compact.steps[1:]]
    assert len(later) >= 2
    for turn in later:  # every node the tree names folds into one line; nothing of the tree is repeated
        assert "- check[<a name shown above>]" in turn
        assert not re.search(r"- check\[(?!<a name shown above>|\.\.\.)", turn)
    full_later = sum(approx_tokens(s.messages[-1]["content"]) for s in full.steps[1:])
    assert sum(approx_tokens(t) for t in later) * 3 < full_later


def test_turn_style_validated():
    with pytest.raises(ValueError, match="turn_style must be one of full, compact"):
        PerceptionConfig(turn_style="terse")


def test_compact_turn_puts_an_envs_fields_on_lines():
    """A field separator the env prints (WebShop's ` [SEP] `, 4 tokens) becomes one line break; what the page
    names still folds, and without the option the observation is left as it is."""
    task = "Find a red cotton shirt under 30 dollars, size medium."
    obs = f"Instruction: [SEP] {task} [SEP] Back to Search [SEP] B01 [SEP] Red cotton shirt [SEP] $25 [SEP] B02 [SEP] Blue"
    actions = ["click[back to search]", "click[b01]", "click[b02]"]
    lines = _compact(field_separator=" [SEP] ").build(instruction=task, observation=obs, available_actions=actions)
    assert "[SEP]" not in lines.turn
    assert "Instruction:\n(the task above)\nBack to Search\nB01\nRed cotton shirt\n$25\nB02\nBlue\n" in lines.turn
    assert "- click[<a name shown above>]" in lines.turn and "click[b01]" not in lines.turn
    plain = _compact().build(instruction=task, observation=obs, available_actions=actions)
    assert "Back to Search [SEP] B01 [SEP] Red cotton shirt" in plain.turn
    assert approx_tokens(lines.turn) < approx_tokens(plain.turn)
    full = Perception(PerceptionConfig(budget_tokens=4000, field_separator=" [SEP] "))  # any turn style
    assert "Back to Search\nB01\n" in full.build(instruction=task, observation=obs, available_actions=actions).turn


def test_fields_on_lines_on_webshop_change_no_action_and_every_prompt_extends_the_last():
    """The scripted expert on real WebShop goals: the same actions and rewards with fields on lines, no `[SEP]`
    left in any prompt, and each prompt still the previous one plus the reply and the new turn (KV reuse)."""
    import envs  # noqa: F401  (registers agentsim/WebShop-v0)

    def run(seed: int, **kw):
        env = gym.make("agentsim/WebShop-v0", split="test", num_products=2_000)
        agent = Agent(ScriptedBrain(), Perception(PerceptionConfig(turn_style="compact", **kw)))
        return run_episode(env, agent, seed=seed)

    for seed in range(3):
        lines, plain = run(seed, field_separator=" [SEP] "), run(seed)
        assert [s.action for s in lines.steps] == [s.action for s in plain.steps]
        assert lines.outcome.reward == plain.outcome.reward
        prompts = _prompts(lines)
        assert not any("[SEP]" in s.messages[-1]["content"] for s in lines.steps)
        for i in range(1, len(prompts)):
            assert prompts[i].startswith(prompts[i - 1] + f"{lines.steps[i - 1].raw_output}<end_of_turn>\n")
        assert sum(map(approx_tokens, prompts)) < sum(map(approx_tokens, _prompts(plain)))


def test_an_adopted_decision_becomes_the_turns_reply_as_a_decided_one_does():
    """A search's branch or a replayed step is taken without a brain call; the transcript records it as if decided."""
    env = gym.make(ENV_ID, length=8)
    obs, info = env.reset(seed=0)
    decided = Agent(ScriptedBrain(), Perception(PerceptionConfig(budget_tokens=4000)))
    adopted = Agent(ScriptedBrain(), Perception(PerceptionConfig(budget_tokens=4000)))
    for agent in (decided, adopted):
        agent.brain.bind_env(env)
        agent.reset(str(info["instruction"]), seed=0)
    d = decided.decide(obs, info)
    assert decided.pending_turn is not None and decided.pending_turn.decided == d.parsed.action
    adopted.adopt_decision(obs, info, d.output.text, d.parsed.action)
    assert adopted.pending_turn is not None and adopted.pending_turn.reply == d.output.text
    nxt, reward, _, _, info2 = env.step(d.parsed.action)
    for agent in (decided, adopted):
        agent.observe(d.parsed.action, nxt, float(reward), info2)
        assert agent.pending_turn is None
    assert gemma(adopted.transcript.messages()) == gemma(decided.transcript.messages())
    assert d.output.text in gemma(adopted.transcript.messages())
