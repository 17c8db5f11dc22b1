import asyncio

import gymnasium as gym

from agents.brains.base import BrainOutput, approx_tokens
from agents.brains.scripted import ScriptedBrain
from agents.core import Agent, arun_episode, run_episode, run_many
from agents.memory.working import WorkingMemory
from tests.toy_env import ENV_ID


class ReplayBrain:
    """Replays fixed model outputs: a stand-in for a model that writes malformed text on purpose."""

    name, model = "replay", "replay"

    def __init__(self, outputs):
        self.outputs = list(outputs)
        self.seen = []

    def count_tokens(self, text):
        return approx_tokens(text)

    def complete(self, messages, **kw):
        self.seen.append(messages)
        return BrainOutput(text=self.outputs.pop(0) if self.outputs else "nothing", tokens_in=10, tokens_out=3)

    async def acomplete(self, messages, **kw):
        return self.complete(messages, **kw)


def make():
    return gym.make(ENV_ID)


def test_scripted_expert_solves_corridor():
    for seed in range(5):
        rec = run_episode(make(), Agent(ScriptedBrain(), memory=WorkingMemory()), seed=seed)
        assert rec.outcome.success and rec.outcome.terminated and not rec.outcome.truncated
        assert rec.steps[-1].reward == 1.0 and rec.stats.invalid_actions == 0
        assert "Task: Find the key" in rec.steps[0].messages[0]["content"]  # the task sits in the system turn


def test_same_seed_same_trajectory():
    a = run_episode(make(), Agent(ScriptedBrain(epsilon=0.5)), seed=3)
    b = run_episode(make(), Agent(ScriptedBrain(epsilon=0.5)), seed=3)
    assert [s.action for s in a.steps] == [s.action for s in b.steps]
    c = run_episode(make(), Agent(ScriptedBrain(epsilon=0.5)), seed=4)
    assert (a.seed, c.seed) == (3, 4)
    assert [s.action for s in a.steps] != [s.action for s in c.steps]  # the seed, not chance, decides the path


def test_parse_failure_is_fed_back_and_counted():
    brain = ReplayBrain(["I am not sure.", "Thought: go\nAction: move[up]"])
    rec = run_episode(make(), Agent(brain, mode="generate"), seed=0, max_steps=3)
    first, second = rec.steps[0], rec.steps[1]
    assert first.action is None and "no line starting with 'Action:'" in first.parse_error
    assert "Feedback on your last reply" in brain.seen[1][-1]["content"]  # the model is told what was wrong
    assert second.action == "move[up]" and "not possible" in second.env_error  # env rejected it, said so
    assert rec.stats.parse_failures == 2 and rec.stats.invalid_actions == 1  # 3rd reply "nothing" fails too
    assert rec.outcome.truncated and rec.outcome.truncation_reason == "max_steps"


def test_k_consecutive_invalid_outputs_truncate_with_reason():
    brain = ReplayBrain(["gibberish"] * 10)
    rec = run_episode(make(), Agent(brain, mode="generate"), seed=0, max_steps=50, max_invalid=3)
    assert len(rec.steps) == 3 and rec.outcome.truncated and not rec.outcome.terminated
    assert rec.outcome.truncation_reason.startswith("invalid_outputs: 3 invalid outputs in a row")
    assert rec.steps[-1].truncated


def test_env_truncation_is_not_termination():
    env = gym.make(ENV_ID, max_steps=2)
    rec = run_episode(env, Agent(ReplayBrain(["Action: say[hi]"] * 5), mode="generate"), seed=0, max_steps=10)
    assert rec.outcome.truncated and not rec.outcome.terminated and rec.outcome.truncation_reason == "env"
    assert rec.stats.env_steps == 2


def test_async_many_with_bounded_concurrency():
    in_flight, peak = [0], [0]

    async def one(seed):
        in_flight[0] += 1
        peak[0] = max(peak[0], in_flight[0])
        await asyncio.sleep(0.01)
        rec = await arun_episode(make(), Agent(ScriptedBrain()), seed=seed)
        in_flight[0] -= 1
        return rec

    recs = asyncio.run(run_many(range(12), one, concurrency=3))
    assert len(recs) == 12 and all(r.outcome.success for r in recs) and peak[0] == 3


def test_run_many_survives_a_failing_episode():
    failed = []

    async def one(seed):
        if seed == 2:
            raise RuntimeError("boom")
        return await arun_episode(make(), Agent(ScriptedBrain()), seed=seed)

    recs = asyncio.run(run_many(range(4), one, concurrency=2, on_error=lambda j, e: failed.append(j)))
    assert len(recs) == 3 and failed == [2]


def test_memory_context_recorded():
    rec = run_episode(make(), Agent(ScriptedBrain(), memory=WorkingMemory()), seed=1)
    later = [s for s in rec.steps if s.memory_context]
    assert later and "[action]" in later[-1].memory_context
