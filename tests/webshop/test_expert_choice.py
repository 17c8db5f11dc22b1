"""The expert among a ranked-choice agent's own candidates (`HasCandidateExpert`): demonstrations and DAgger labels
a student can actually take."""

from __future__ import annotations

import gymnasium as gym

from agents.brains.scripted import ScriptedBrain
from agents.core import Agent, run_episode
from agents.slots import expand_templates
from envs.capabilities import HasCandidateExpert
from envs.contract import SLOT
from envs.webshop.env import WebShopEnv


def _search_candidates(env: WebShopEnv, info: dict) -> list[str]:
    return [
        c
        for c in expand_templates(info["action_templates"], info["instruction"], stopwords=info["slot_stopwords"])
        if SLOT not in c
    ]


def _best_first_page_buy(env: WebShopEnv, query: str) -> float:
    """Exhaustively: open every first-page result of `query`, choose the expert's options, buy; the best reward."""
    snap = env.snapshot()
    _, _, _, _, info = env.step(query)
    items = [a for a in info["available_actions"] if a.startswith("click[b0")]
    best = 0.0
    for item in items:
        env.restore(snap)
        env.step(query)
        env.step(item)
        for _ in range(8):
            action = env.expert_action()
            if action == "click[buy now]" or not action.startswith("click[") or action == "click[< prev]":
                break
            env.step(action)
        _, reward, *_ = env.step("click[buy now]")
        best = max(best, reward)
    env.restore(snap)
    return best


def test_on_the_search_page_the_expert_picks_the_offered_query_with_the_best_first_page(env):
    assert isinstance(env, HasCandidateExpert)
    picked_full = 0
    for goal_index in range(10):
        _, info = env.reset(options={"goal_index": goal_index})
        offered = _search_candidates(env, info)
        choice = env.expert_choice(offered)
        assert choice in offered
        if env.expert_action() in offered:  # the expert's own query (the goal's hidden keywords) happens to be offered
            assert choice == env.expert_action()
            continue
        picked_full += choice == offered[0]
        chosen = _best_first_page_buy(env, choice)
        assert all(_best_first_page_buy(env, q) <= chosen + 1e-9 for q in offered)
    assert picked_full >= 3  # most often the whole instruction's words


def test_after_search_the_choice_is_the_experts_own_action(env):
    env.reset(options={"goal_index": 3})
    _, _, _, _, info = env.step(env.expert_action())
    offered = info["available_actions"]
    assert env.expert_choice(offered) == env.expert_action() in offered


def test_a_scripted_brain_within_candidates_only_takes_offered_actions_and_still_succeeds(small_kwargs):
    env = gym.make("agentsim/WebShop-v0", split="train", **small_kwargs)
    agent = Agent(ScriptedBrain(within_candidates=True))
    wins = 0
    for seed in range(10):
        rec = run_episode(env, agent, seed=seed, max_steps=15)
        for step in rec.steps:
            assert step.action in {c.text for c in step.candidates or []}
        wins += rec.outcome.success
    env.close()
    assert wins >= 8


def test_task_verbs_are_not_search_words(env):
    _, info = env.reset(options={"goal_index": 0})
    for word in ("search", "help", "show"):
        assert word in info["slot_stopwords"]
    spans = expand_templates(
        ["search[...]"], "search for help to show me a red kettle", stopwords=info["slot_stopwords"]
    )
    assert "search[search]" not in spans and all("help" not in s for s in spans)


def test_a_settling_teacher_keeps_to_a_good_enough_item_instead_of_leaving_for_the_best(env):
    """Where the expert leaves an opened item for the single best product (chosen by attributes the agent cannot
    see), a settling teacher finishes the open item when its best buy clears the bar, and leaves it when not."""
    settled = 0
    for goal_index in range(30):
        _, info = env.reset(options={"goal_index": goal_index})
        _, _, _, _, info = env.step(env.expert_action())
        items = [a for a in info["available_actions"] if a.startswith("click[b0")]
        target = env.expert_action()
        for item in items:
            if item == target:
                continue
            snap = env.snapshot()
            _, _, _, _, info = env.step(item)
            offered = info["available_actions"]
            assert env.expert_action() == "click[< prev]"  # the expert leaves for its best product
            strict, lax = env.expert_choice(offered, settle=1.01), env.expert_choice(offered, settle=0.0)
            assert strict == "click[< prev]"  # nothing clears a bar above the best reward
            assert lax != "click[< prev]" and lax in offered  # anything clears 0: choose an option or buy
            settled += 1
            env.restore(snap)
            break
    assert settled >= 10
