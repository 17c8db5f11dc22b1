"""The embedded llama.cpp brain, with the real Gemma 3 270M GGUF."""

import gymnasium as gym
import numpy as np
import pytest

from agents.brains.base import AsyncChoosingBrain, CheckableBrain, EnvBoundBrain, ForkableBrain, writes_text
from agents.core import Agent, run_episode
from tests.shopping_prompt import CANDS, MSGS
from tests.toy_env import ENV_ID


def test_choose_returns_a_candidate_with_scores(local_brain):
    out = local_brain.choose(MSGS, CANDS, prefix="Action: ")
    assert out.text.removeprefix("Action: ") in CANDS
    assert len(out.candidates) == 4 and all(c.n_tokens > 0 and c.logprob < 0 for c in out.candidates)
    best = max(out.candidates, key=lambda c: c.score)
    assert out.text == "Action: " + best.text
    assert out.tokens_in > 0 and out.latency_s > 0


def test_scores_do_not_depend_on_kv_cache_state(local_brain):
    """Reusing the prompt's KV cache must give the same numbers as a cold evaluation.

    Up to float noise: which KV cells a sequence lands in changes the attention's summation order
    (about 1% here); a wrong position or a lost prompt token would be off by nats.
    """
    warm1 = [c.logprob for c in local_brain.choose(MSGS, CANDS, prefix="Action: ").candidates]
    local_brain.llm.reset()
    local_brain.forget_cache()  # no cached prompt in any KV sequence, no remembered ranking
    cold = [c.logprob for c in local_brain.choose(MSGS, CANDS, prefix="Action: ").candidates]
    other = local_brain.choose([{"role": "user", "content": "something else entirely"}], CANDS, prefix="Action: ")
    local_brain.ranker.rankings.clear()
    warm2 = [c.logprob for c in local_brain.choose(MSGS, CANDS, prefix="Action: ").candidates]
    np.testing.assert_allclose(warm1, cold, rtol=0.03, atol=0.15)
    np.testing.assert_allclose(warm2, cold, rtol=0.03, atol=0.15)
    assert np.argsort(warm1).tolist() == np.argsort(cold).tolist() == np.argsort(warm2).tolist()
    assert [c.logprob for c in other.candidates] != warm2


def test_sum_scores_match_token_by_token_generation_logprobs(local_brain):
    """The candidate logprob is the sum of per-token logprobs (checked against a one-token-at-a-time evaluation)."""
    out = local_brain.choose(MSGS, ["click[B01]"], prefix="Action: ")
    head = local_brain.prompt_text(MSGS) + "Action:"
    base, full = local_brain.tokenize(head), local_brain.tokenize(head + " click[B01]")
    k = next(i for i, (a, b) in enumerate(zip(base + [-1], full)) if a != b)
    llm = local_brain.llm
    llm.reset()
    total = 0.0
    for i in range(k, len(full)):
        llm.n_tokens = 0
        llm.eval(full[:i])
        logits = local_brain.runtime.last_logits().astype(np.float64)
        total += logits[full[i]] - logits.max() - np.log(np.exp(logits - logits.max()).sum())
    local_brain.scorer.last_logits = None
    assert (
        abs(out.candidates[0].logprob - total) < 0.05
    )  # batched vs one-token kernels differ slightly; an off-by-one differs by nats


def test_sampling_gives_distinct_candidates_and_is_seeded(local_brain):
    picks = {local_brain.choose(MSGS, CANDS, prefix="Action: ", temperature=5.0, seed=s).text for s in range(12)}
    assert len(picks) >= 2
    a = local_brain.choose(MSGS, CANDS, prefix="Action: ", temperature=1.0, seed=7).text
    b = local_brain.choose(MSGS, CANDS, prefix="Action: ", temperature=1.0, seed=7).text
    assert a == b


def test_samples_at_one_state_cost_one_ranking(local_brain):
    """Search draws N actions at a state: the ranking is remembered, so only the first draw evaluates tokens."""
    msgs = [{"role": "user", "content": "A state seen for the first time by this test."}]
    rt = local_brain.runtime
    first = local_brain.choose(msgs, CANDS, prefix="Action: ", temperature=1.0, seed=1)
    before = rt.prompt_tokens_evaluated
    again = [local_brain.choose(msgs, CANDS, prefix="Action: ", temperature=1.0, seed=s) for s in range(2, 10)]
    assert rt.prompt_tokens_evaluated == before
    assert all([c.logprob for c in a.candidates] == [c.logprob for c in first.candidates] for a in again)
    assert len({a.text for a in again}) >= 2  # still sampled, per seed
    other = local_brain.choose(msgs, CANDS[:3], prefix="Action: ", temperature=1.0, seed=1)  # other candidates
    assert len(other.candidates) == 3 and (msgs[0]["content"] in str(list(local_brain.ranker.rankings)[-1]))


def test_template_slot_is_generated(local_brain):
    out = local_brain.choose(MSGS, ["search[...]"], prefix="Action: ")
    assert out.text.startswith("Action: search[") and out.text.endswith("]") and "..." not in out.text


def test_free_generation(local_brain):
    out = local_brain.complete(MSGS, max_tokens=12)
    assert isinstance(out.text, str) and 0 < out.tokens_out <= 12 and out.tokens_in > 20


def test_count_tokens_uses_the_model_tokenizer(local_brain):
    assert local_brain.count_tokens("hello world") == 2
    assert local_brain.count_tokens("") == 0


def test_embedded_brain_runs_an_episode_with_only_valid_actions(local_brain):
    env = gym.make(ENV_ID)
    rec = run_episode(env, Agent(local_brain), seed=0, max_steps=8)
    assert rec.stats.parse_failures == 0
    acted = [s for s in rec.steps if s.action]
    assert acted and all(s.candidates for s in acted)
    assert rec.stats.tokens_in > 0


def test_batched_multi_sequence_scoring_matches_one_by_one(local_brain):
    """All candidates in one decode (one KV sequence each, sharing the prompt) = one decode per candidate."""
    from agents.brains.local import LocalBrain

    assert local_brain.n_seq > 1
    single = LocalBrain(model="gemma3-270m", n_ctx=2048, n_seq=1)
    many = CANDS + [f"click[b0{i}xq{i}]" for i in range(20)]  # more than one group of sequences
    a = [c.logprob for c in local_brain.choose(MSGS, many, prefix="Action: ").candidates]
    b = [c.logprob for c in single.choose(MSGS, many, prefix="Action: ").candidates]
    np.testing.assert_allclose(a, b, rtol=0.05, atol=0.3)  # float noise from batched kernels and KV layout
    assert int(np.argmax(a)) == int(np.argmax(b))


def test_candidates_that_start_alike_share_their_common_tokens(local_brain):
    """The prefix tree: tokens several candidates begin with are decoded once, and the scores stay those of decoding
    each candidate on its own (within the kernels' batch-shape noise, see `_close`), on both scoring paths."""
    from agents.brains.local import LocalBrain

    many = CANDS + [f"click[b0{i}xq{i}]" for i in range(20)]  # 24 candidates: more than one group of sequences
    rt = local_brain.runtime
    ranked = {}
    for share in (False, True):
        local_brain.share_prefixes = share
        local_brain.ranker.rankings.clear()
        before = rt.candidate_tokens_decoded
        ranked[share] = (local_brain.choose(MSGS, many, prefix="Action: "), rt.candidate_tokens_decoded - before)
    local_brain.share_prefixes = True
    (alone, n_alone), (shared, n_shared) = ranked[False], ranked[True]
    _close([shared], [alone])
    assert [c.n_tokens for c in shared.candidates] == [c.n_tokens for c in alone.candidates]
    assert n_shared < 0.8 * n_alone, (n_shared, n_alone)  # `click[b0` and the like are decoded once, not 24 times
    # the KV-slot path (agents taking turns) shares the same way
    slots = LocalBrain(model="gemma3-270m", n_ctx=2048, n_seq=8, kv_slots=2, share_prefixes=True)
    _close([slots.choose(MSGS, many, prefix="Action: ")], [alone])


@pytest.fixture(scope="module")
def slot_brain():
    """A brain keeping 7 prompts in KV slots (its own state: the shared fixture's cache is used by other tests)."""
    from agents.brains.local import LocalBrain

    return LocalBrain(model="gemma3-270m", n_ctx=4096, seed=0, kv_slots=7)


# llama.cpp's CPU kernels change with the number of rows in a decode (from 8 tokens up another path runs): the same
# candidate scored alone or beside others differs by up to ~0.7 nats (a few percent of an unlikely candidate's
# logprob) on these prompts, in float32 KV and without flash attention as well. It is not a leak between
# sequences (`test_sequences_in_one_decode_do_not_see_each_other`): paths that decode in different batch shapes
# are compared within this noise; a lost or misplaced context cell moves the likely candidates by nats.
def _close(xs, ys) -> None:
    """Candidate logprobs of two rankings of the same prompts agree up to the kernels' batch-shape noise."""
    x = np.array([c.logprob for o in xs for c in o.candidates])
    y = np.array([c.logprob for o in ys for c in o.candidates])
    np.testing.assert_allclose(x, y, rtol=0.05, atol=0.5)
    assert np.abs(x - y).mean() < 0.25, (x.round(2), y.round(2))


def test_sequences_in_one_decode_do_not_see_each_other(slot_brain):
    """A candidate decoded beside another sequence gives bit-identical logprobs whatever the other one holds."""
    from agents.brains.local import scoring_texts

    rt = slot_brain.runtime
    prompt = slot_brain.prompt_text(_turns(3, 2))
    head, _ = scoring_texts(prompt, "Action: ", "")
    base = slot_brain.tokenize(head)
    own = slot_brain.tokenize(scoring_texts(prompt, "Action: ", CANDS[2])[1])[len(base) :]
    other = slot_brain.tokenize(scoring_texts(prompt, "Action: ", CANDS[0])[1])[len(base) :]
    junk = slot_brain.tokenize(" the weather is nice today, and tomorrow it will rain again")[: len(other)]

    def beside(companion: list[int]) -> np.ndarray:
        slot_brain.forget_cache()
        slot_brain.scorer.eval_context(base)
        first = slot_brain.scorer.scratch[0]
        items = [(0, len(base), own), (0, len(base), companion)]
        scores = rt.score_shared(items, first_seq=first, share=False)[0]
        for q in (first, first + 1):
            rt.drop_sequence(q)
        return scores

    same, different, garbage = beside(own), beside(other), beside(junk)
    assert np.array_equal(same, different) and np.array_equal(same, garbage), (same, different, garbage)
    slot_brain.scorer.last_logits = None


def _turns(agent: int, n: int) -> list[dict]:
    """An agent's transcript after n turns: a growing prompt, as the Agent's default layout writes it."""
    msgs = [{"role": "system", "content": f"You are agent {agent} in a village. Reply with one action."}]
    for t in range(n):
        msgs.append(
            {"role": "user", "content": f"Round {t}: agent {agent} sees {['rain', 'sun', 'fog'][(agent + t) % 3]}."}
        )
        msgs.append({"role": "assistant", "content": "Action: " + CANDS[(agent + t) % len(CANDS)]})
    msgs.append({"role": "user", "content": f"Round {n}: what now?"})
    return msgs


def test_choose_many_gives_the_answers_of_one_call_each(slot_brain):
    """Several agents' prompts ranked together (one decode for the prompts, shared decodes for candidates)."""
    calls = [dict(messages=_turns(a, 2), candidates=CANDS, prefix="Action: ") for a in range(5)]
    together = slot_brain.choose_many(calls)
    slot_brain.forget_cache()
    alone = [slot_brain.choose(**c) for c in calls]
    _close(together, alone)
    for x, y in zip(together, alone):
        top = sorted((c.score for c in y.candidates), reverse=True)
        if top[0] - top[1] > 0.5:  # near-ties may flip with the kernels' batch-shape noise
            assert x.text == y.text and x.output_token_ids == y.output_token_ids
    assert slot_brain.choose_many([]) == []


def test_agents_taking_turns_each_reuse_their_own_cached_transcript(slot_brain):
    """Agent A's next prompt extends its last one: with KV slots only the new turn is evaluated, even though
    other agents' prompts were evaluated in between (one shared cache would have been overwritten)."""
    rt = slot_brain.runtime
    slot_brain.forget_cache()
    for a in range(3):  # round 1: every agent's transcript is cached in its own slot
        slot_brain.choose(_turns(a, 3), CANDS, prefix="Action: ")
    before = rt.prompt_tokens_evaluated
    nxt = slot_brain.choose(_turns(0, 4), CANDS, prefix="Action: ")  # agent 0's next turn
    evaluated = rt.prompt_tokens_evaluated - before
    full = len(slot_brain.tokenize(slot_brain.prompt_text(_turns(0, 4)) + "Action:"))
    assert 0 < evaluated < 0.4 * full, (evaluated, full)
    slot_brain.forget_cache()
    cold = slot_brain.choose(_turns(0, 4), CANDS, prefix="Action: ")
    _close([nxt], [cold])


def test_generation_between_rankings_does_not_corrupt_cached_prompts(slot_brain):
    """Sequence 0's evaluation drops later cells of every sequence; the slots must be forgotten, not trusted."""
    first = slot_brain.choose(_turns(7, 2), CANDS, prefix="Action: ")
    slot_brain.complete(MSGS, max_tokens=6)
    slot_brain.ranker.rankings.clear()
    again = slot_brain.choose(_turns(7, 2), CANDS, prefix="Action: ")
    _close([first], [again])


def test_concurrent_achoose_calls_are_batched(slot_brain):
    import asyncio

    calls = [dict(messages=_turns(10 + a, 1), candidates=CANDS, prefix="Action: ") for a in range(4)]

    async def together():
        return await asyncio.gather(*(slot_brain.achoose(**c) for c in calls))

    slot_brain.batches.clear()
    outs = asyncio.run(together())
    assert slot_brain.batches and max(slot_brain.batches) >= 2, slot_brain.batches
    slot_brain.ranker.rankings.clear()
    alone = [slot_brain.choose(**c) for c in calls]
    _close(outs, alone)

    async def with_a_bad_call():
        bad = slot_brain.achoose(MSGS, [], prefix="Action: ")
        return await asyncio.gather(slot_brain.achoose(**calls[0]), bad, return_exceptions=True)

    good, err = asyncio.run(with_a_bad_call())
    assert good.candidates and isinstance(err, ValueError) and "at least one candidate" in str(err)


def test_local_brain_declares_its_capabilities(local_brain):
    assert isinstance(local_brain, AsyncChoosingBrain) and writes_text(local_brain)
    assert not isinstance(local_brain, (EnvBoundBrain, ForkableBrain, CheckableBrain))


def test_generation_evicts_cached_prompts_rather_than_overflow_the_kv_cache():
    """Slots hold most of a small context; a long generation in sequence 0 then needs their cells."""
    from agents.brains.local import LocalBrain

    brain = LocalBrain(model="gemma3-270m", n_ctx=1024, seed=0, kv_slots=4)
    for a in range(4):
        brain.choose(_turns(a, 8), CANDS, prefix="Action: ")
    held = sum(brain.runtime.seq_length(s) for s in brain.slots.table.slots)
    long = [{"role": "user", "content": "Tell a long story about a village. " * 70}]
    n_prompt = len(brain.tokenize(brain.prompt_text(long)))
    assert held + n_prompt + 96 > 1024, (held, n_prompt)  # without eviction the cache would overflow
    out = brain.complete(long, max_tokens=96, temperature=0.0)
    assert out.tokens_in == n_prompt and out.tokens_out > 0
    held_after = sum(brain.runtime.seq_length(s) for s in brain.slots.table.slots)
    assert held_after + n_prompt + out.tokens_out <= 1024
    again = brain.choose(_turns(0, 8), CANDS, prefix="Action: ")  # slots refill and rank as before
    assert again.text.removeprefix("Action: ") in CANDS


def test_a_batch_evaluates_a_system_text_its_prompts_share_once(slot_brain):
    """First round of a society: no slot holds anything yet, and every seat's prompt opens with the same rules.
    The rules' tokens are evaluated for one prompt; the others copy those cells a decode later."""
    from agents.brains.local import scoring_texts

    rules = "The village holds a market every day. Everyone trades fairly and speaks plainly. " * 6

    def seat(a: int) -> list[dict]:
        return [{"role": "system", "content": rules}, {"role": "user", "content": f"You are agent {a}. What now?"}]

    calls = [dict(messages=seat(a), candidates=CANDS, prefix="Action: ") for a in range(4)]
    slot_brain.forget_cache()
    rt = slot_brain.runtime
    before = rt.prompt_tokens_evaluated
    together = slot_brain.choose_many(calls)
    evaluated = rt.prompt_tokens_evaluated - before
    full = [
        len(slot_brain.tokenize(scoring_texts(slot_brain.prompt_text(c["messages"]), "Action: ", "")[0])) for c in calls
    ]
    shared = len(slot_brain.tokenize(slot_brain.prompt_text(seat(0)).split("You are agent")[0]))
    assert shared > 80 and evaluated <= sum(full) - 3 * (shared - 8), (evaluated, full, shared)
    slot_brain.forget_cache()
    _close(together, [slot_brain.choose(**c) for c in calls])


def test_a_slot_fill_starts_from_the_agents_cached_prompt(slot_brain, local_brain, monkeypatch):
    """The winning template's text is generated in sequence 0: it takes the agent's prompt from its KV slot (shared
    cells) instead of evaluating it again, and writes what a brain without slots writes."""
    rt = slot_brain.runtime
    adopted: list[int] = []
    real = rt.adopt_prefix
    monkeypatch.setattr(rt, "adopt_prefix", lambda src, toks: (adopted.append(len(toks)), real(src, toks)))
    msgs = _turns(21, 5)
    slot_brain.choose(msgs, CANDS, prefix="Action: ")  # the agent's prompt now sits in a slot
    filled = slot_brain.choose(msgs, ["say[...]"], prefix="Action: ")
    prompt = len(slot_brain.tokenize(slot_brain.prompt_text(msgs)))
    assert adopted and adopted[-1] >= prompt - 4, (adopted, prompt)
    assert filled.text == local_brain.choose(msgs, ["say[...]"], prefix="Action: ").text


def test_a_batch_without_slots_fills_each_template_before_ranking_the_next_prompt(local_brain, monkeypatch):
    """Without KV slots a batch's prompts take turns in sequence 0: each winning template is written while its own
    prompt is still cached there, so no prompt is evaluated twice (once to rank, again to generate)."""
    evaluated: list[int] = []
    real = local_brain.llm.eval
    monkeypatch.setattr(local_brain.llm, "eval", lambda toks: (evaluated.append(len(toks)), real(toks))[1])
    calls = [dict(messages=_turns(30 + a, 4), candidates=["say[...]"], prefix="Action: ") for a in range(3)]
    outs = local_brain.choose_many(calls)
    assert all(o.text.startswith("Action: say[") for o in outs)
    prompts = [len(local_brain.tokenize(local_brain.prompt_text(c["messages"]))) for c in calls]
    # each prompt once, plus the few tokens generated and re-scored per fill; a second evaluation would add ~a prompt
    assert sum(evaluated) < sum(prompts) + min(prompts) // 2, (evaluated, prompts)
