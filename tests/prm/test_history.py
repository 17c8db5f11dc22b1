"""Search samples from the policy as it acts in `agents.run`: each draw reads the transcript of the path's turns.

The policy is the real embedded Gemma 270M ranking WebShop's actions; its `choose` is wrapped to record the
prompts it was given (the brain itself still ranks)."""

from __future__ import annotations

import pytest

from envs.webshop.env import WebShopEnv
from prm.policy import BrainSampler, Node, apply, sample_at, start
from prm.search import beam_search
from tests.prm.conftest import MAX_STEPS
from tests.prm.test_search import FakeScorer, assert_replays

GOAL = 7
AGENT = {"mode": "choose"}


@pytest.fixture
def prompts(local_brain, monkeypatch):
    """The messages of every ranking the local brain is asked for, in order."""
    seen: list[list[dict]] = []
    choose = local_brain.choose

    def recording(messages, *args, **kwargs):
        seen.append([dict(m) for m in messages])
        return choose(messages, *args, **kwargs)

    monkeypatch.setattr(local_brain, "choose", recording)
    return seen


def _depth_two(env, sampler: BrainSampler, prompts: list) -> tuple[str, list[list[dict]]]:
    """The action taken at the root, and the prompts of the draws at its child."""
    root = start(env, options={"goal_index": GOAL})
    first = sample_at(env, sampler, root, 2, seed=0)[0]
    assert first.action is not None
    child = apply(env, root, first, MAX_STEPS, sampler)
    prompts.clear()
    drawn = sample_at(env, sampler, child, 3, seed=1)
    assert len(drawn) == 3 and len(prompts) == 3
    return first.action, list(prompts)


@pytest.mark.slow
def test_at_depth_two_the_prompt_holds_the_earlier_turn_only_with_history(webshop, local_brain, prompts):
    taken, seen = _depth_two(webshop, BrainSampler(local_brain, 0.7, AGENT, history=True), prompts)
    assert all(p == seen[0] for p in seen)  # every draw at a node reads one prompt
    replies = [m["content"] for m in seen[0] if m["role"] == "assistant"]
    assert replies == [f"Action: {taken}"]  # the root's turn, as the reply that was acted on
    assert seen[0][-1]["role"] == "user"

    taken, seen = _depth_two(webshop, BrainSampler(local_brain, 0.7, AGENT, history=False), prompts)
    assert all(p == seen[0] for p in seen)
    assert not [m for m in seen[0] if m["role"] == "assistant"]
    assert not any(f"Action: {taken}" in m["content"] for m in seen[0])


def _search(env, brain, seed: int):
    sampler = BrainSampler(brain, 0.7, AGENT, history=True)
    scorer = FakeScorer(lambda instr, obs, acts: float(len(set(acts))) - 0.1 * (len(acts[-1]) % 5))
    return beam_search(env, sampler, scorer, n=2, m=2, seed=seed, max_steps=4, options={"goal_index": GOAL})


def _transcript_replies(node: Node) -> list[str]:
    assert node.agent_state is not None
    return [t["assistant"] for t in node.agent_state["transcript"]["turns"]]


@pytest.mark.slow
def test_a_beam_search_with_history_is_deterministic_and_its_path_consistent(webshop, local_brain):
    a, b = _search(webshop, local_brain, 3), _search(webshop, local_brain, 3)
    assert a.best.actions == b.best.actions and a.samples == b.samples
    assert [s.raw_output for s in a.best.steps] == [s.raw_output for s in b.best.steps]
    assert a.best.agent_state == b.best.agent_state
    best = a.best
    assert [s.index for s in best.steps] == list(range(len(best.steps)))
    assert [s.action for s in best.steps] == best.actions
    assert len(best.observations) == len(best.steps)
    # the transcript the last draw read: one turn per step, each replying with the action the path took
    assert _transcript_replies(best) == [f"Action: {act}" for act in best.actions]
    assert best.agent_state["step"] == len(best.steps)
    assert_replays(WebShopEnv(split="test", num_products=webshop.config.num_products), best, GOAL)


@pytest.mark.slow
def test_the_searched_path_replayed_through_a_run_agent_builds_the_same_transcript(webshop, local_brain):
    """`agents.run`'s agent (same config) deciding at each state of the chosen path and then acting on the path's
    action (a search picked it) holds exactly the transcript the search's node carries."""
    from agents.core.factory import build_agent
    from agents.resolve import resolve_agent

    best = _search(webshop, local_brain, 5).best
    agent = build_agent(local_brain, resolve_agent(AGENT | {"temperature": 0.7}), None)
    fresh = WebShopEnv(split="test", num_products=webshop.config.num_products)
    obs, info = fresh.reset(options={"goal_index": GOAL})
    agent.reset(info["instruction"], seed=11)
    for step in best.steps:
        agent.decide(obs, info)
        obs, reward, _, _, info = fresh.step(step.action)
        agent.observe(step.action, obs, float(reward), info)
    assert best.agent_state is not None
    assert agent.transcript.save_state() == best.agent_state["transcript"]


def test_a_sampler_without_history_leaves_the_nodes_memoryless(webshop):
    """The scripted sampler at history=False (the default, as before) gives no agent state to any node."""
    from tests.prm.conftest import scripted_sampler

    res = beam_search(
        webshop,
        scripted_sampler(0.3),
        FakeScorer(lambda i, o, a: -len(a)),
        n=2,
        m=2,
        seed=0,
        max_steps=MAX_STEPS,
        options={"goal_index": 2},
    )
    assert res.best.agent_state is None and all(n.agent_state is None for n in res.finished)


def test_prm_search_records_whether_it_sampled_with_history(tmp_path):
    from agents.trajectories.store import TRAJECTORIES, TrajectoryStore
    from prm.run_search import run_search

    for history in (True, False):
        cfg = {
            "strategy": "vote",
            "m": 3,
            "episodes": 1,
            "history": history,
            "out": str(tmp_path / str(history)),
            "env": {"name": "webshop", "id": "agentsim/WebShop-v0", "max_steps": 15, "kwargs": {"split": "test"}},
            "brain": {"name": "scripted", "epsilon": 0.5},
        }
        [res] = run_search(cfg)
        [ep] = TrajectoryStore(tmp_path / str(history) / TRAJECTORIES).read(strict=True)
        assert ep.meta["search"]["history"] is history
        assert (res.best.agent_state is not None) is history
