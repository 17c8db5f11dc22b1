"""Token-in/token-out: brains report the exact token ids and logprobs, steps and exports carry them.

A trainer that re-tokenizes text can split it differently than the model did (rLLM #816, TRL #5224);
these tests check that the recorded ids are the text as scored and that their logprobs are the
model's, with the real embedded model and llama.cpp's real OpenAI-compatible server.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from openai.types.chat import ChatCompletion

from agents.brains.base import BrainOutput
from agents.brains.local import LocalBrain
from agents.brains.openai_brain import OpenAIBrain, response_token_ids
from agents.brains.scripted import ScriptedBrain
from agents.core import Agent, arun_episode, run_episode
from agents.trajectories import EpisodeRecord, TrajectoryStore
from agents.trajectories.export import (
    TOKEN_FIELDS,
    from_hf_dataset,
    read_agentgym,
    read_parquet,
    step_rows,
    to_hf_dataset,
    write_agentgym,
    write_parquet,
)
from tests.shopping_prompt import CANDS, MSGS
from tests.toy_env import ENV_ID


def rescore(brain: LocalBrain, ids: list[int], start: int) -> list[float]:
    """log p(ids[i] | ids[:i]) for i >= start, by a cold evaluation one token at a time (as generation does).

    Independent of the brain's scoring path (batched multi-sequence decodes on a reused cache).
    """
    llm = brain.llm
    llm.reset()
    llm.eval(ids[:start])
    out = []
    for i in range(start, len(ids)):
        logits = brain.runtime.last_logits().astype(np.float64)
        m = logits.max()
        out.append(float(logits[ids[i]] - m - np.log(np.exp(logits - m).sum())))
        if i + 1 < len(ids):
            llm.eval([ids[i]])
    brain.scorer.last_logits = None  # the cache moved under the brain
    return out


def check_invariant(brain: LocalBrain, out: BrainOutput, text: str) -> None:
    """prompt ids + output ids detokenize to `text`, and re-scoring them gives the recorded logprobs."""
    p, o, lps = out.prompt_token_ids, out.output_token_ids, out.output_logprobs
    assert p is not None and o is not None and lps is not None
    assert o and len(lps) == len(o) and all(lp <= 0 for lp in lps)
    assert brain.detokenize(p + o) == text
    # float noise only: batched vs one-token kernels and KV layout (usually ~1-2%; llama.cpp quantizes activations
    # on its batched Q4 path, which moved one first-token logprob by 0.26 nats in CI); a wrong id or position is
    # off by nats
    np.testing.assert_allclose(lps, rescore(brain, p + o, len(p)), rtol=0.05, atol=0.3)


# ---------------------------------------------------------------- the embedded brain


def test_choose_records_the_chosen_candidates_ids_and_logprobs(local_brain):
    out = local_brain.choose(MSGS, CANDS, prefix="Action: ")
    check_invariant(local_brain, out, local_brain.prompt_text(MSGS) + out.text)
    chosen = next(c for c in out.candidates if out.text == "Action: " + c.text)
    assert len(out.output_token_ids) == chosen.n_tokens
    assert sum(out.output_logprobs) == pytest.approx(chosen.logprob, abs=1e-9)  # the very numbers it ranked with
    # the prompt ids are a head of the prompt's own tokenization (chat prompt + "Action:"), as the KV cache held it
    head = local_brain.tokenize(local_brain.prompt_text(MSGS) + "Action:")
    assert head[: len(out.prompt_token_ids)] == out.prompt_token_ids


def test_choose_one_by_one_scoring_records_the_same(local_brain):
    single = LocalBrain(model="gemma3-270m", n_ctx=2048, n_seq=1)
    a = local_brain.choose(MSGS, CANDS, prefix="Action: ")
    b = single.choose(MSGS, CANDS, prefix="Action: ")
    assert (a.prompt_token_ids, a.output_token_ids) == (b.prompt_token_ids, b.output_token_ids)
    np.testing.assert_allclose(a.output_logprobs, b.output_logprobs, rtol=0.03, atol=0.05)
    check_invariant(single, b, single.prompt_text(MSGS) + b.text)


def test_slot_fill_records_the_generated_part(local_brain):
    out = local_brain.choose(MSGS, ["search[...]"], prefix="Action: ")
    assert out.text.startswith("Action: search[") and out.text.endswith("]") and len(out.text) > len("Action: search[]")
    check_invariant(local_brain, out, local_brain.prompt_text(MSGS) + out.text)
    assert local_brain.detokenize(out.output_token_ids).strip() == out.text.removeprefix("Action: ")


def test_complete_records_prompt_and_generated_ids(local_brain):
    out = local_brain.complete(MSGS, max_tokens=12)
    assert out.prompt_token_ids == local_brain.tokenize(local_brain.prompt_text(MSGS))
    generated = local_brain.detokenize(out.output_token_ids)
    assert generated.strip() == out.text  # the ids are the text as generated, before the brain strips it
    check_invariant(local_brain, out, local_brain.prompt_text(MSGS) + generated)


# ---------------------------------------------------------------- steps, store, exports


@pytest.fixture(scope="module")
def local_episodes(local_brain) -> list[EpisodeRecord]:
    """Two short real episodes of the embedded brain on the corridor (one sync, one async)."""
    a = run_episode(gym.make(ENV_ID), Agent(local_brain), seed=0, max_steps=3, episode_id="corridor-0")
    b = asyncio.run(arun_episode(gym.make(ENV_ID), Agent(local_brain), seed=1, max_steps=3, episode_id="corridor-1"))
    return [a, b]


def test_steps_record_the_brains_ids_and_they_are_the_prompt_as_sent(local_brain, local_episodes):
    for ep in local_episodes:
        for s in ep.steps:
            assert s.prompt_token_ids and s.output_token_ids and s.output_logprobs and s.messages
            assert len(s.output_logprobs) == len(s.output_token_ids)
            # the stored messages and raw output are exactly what the stored ids spell
            assert local_brain.detokenize(s.prompt_token_ids + s.output_token_ids) == (
                local_brain.prompt_text(s.messages) + s.raw_output
            )
    s = local_episodes[0].steps[-1]
    np.testing.assert_allclose(
        s.output_logprobs, rescore(local_brain, s.prompt_token_ids + s.output_token_ids, len(s.prompt_token_ids)),
        rtol=0.03, atol=0.05,
    )  # fmt: skip


def _tokens(ep: EpisodeRecord) -> list[dict[str, Any]]:
    return [{k: getattr(s, k) for k in TOKEN_FIELDS} for s in ep.steps]


def test_ids_round_trip_through_the_store_and_every_export(tmp_path, local_episodes):
    eps = local_episodes
    store = TrajectoryStore(tmp_path / "t.jsonl")
    for e in eps:
        store.append(e)
    back = list(TrajectoryStore(tmp_path / "t.jsonl").read(strict=True))
    assert back == eps and [_tokens(e) for e in back] == [_tokens(e) for e in eps]

    write_agentgym(eps, tmp_path / "ag.json")
    for ep, item in zip(eps, read_agentgym(tmp_path / "ag.json")):
        gpt = [c for c in item["conversations"] if c["from"] == "gpt"]
        assert [{k: c[k] for k in TOKEN_FIELDS} for c in gpt] == _tokens(ep)

    write_parquet(eps, tmp_path / "e.parquet")
    assert [_tokens(e) for e in read_parquet(tmp_path / "e.parquet")] == [_tokens(e) for e in eps]
    assert [_tokens(e) for e in from_hf_dataset(to_hf_dataset(eps))] == [_tokens(e) for e in eps]
    hf_conv = json.loads(to_hf_dataset(eps)["conversations"][0])
    assert [c["output_token_ids"] for c in hf_conv if c["from"] == "gpt"] == [s.output_token_ids for s in eps[0].steps]

    rows = step_rows(eps)
    assert [{k: r[k] for k in TOKEN_FIELDS} for r in rows] == [t for e in eps for t in _tokens(e)]


def test_keep_token_ids_false_stores_none(local_brain):
    rec = run_episode(gym.make(ENV_ID), Agent(local_brain), seed=0, max_steps=1, keep_token_ids=False)
    assert rec.steps and all(getattr(s, k) is None for s in rec.steps for k in TOKEN_FIELDS)


def test_records_without_token_fields_still_load_and_export(tmp_path):
    """Files written before the fields existed (schema 1.0 without them) load, with the fields None."""
    eps = [run_episode(gym.make(ENV_ID), Agent(ScriptedBrain(epsilon=0.3)), seed=s) for s in range(2)]
    path = tmp_path / "old.jsonl"
    with open(path, "w") as f:
        for e in eps:
            d = e.model_dump(mode="json")
            for s in d["steps"]:
                for k in TOKEN_FIELDS:
                    del s[k]
            assert d["schema_version"] == "1.0"
            f.write(json.dumps(d) + "\n")
    old = list(TrajectoryStore(path).read(strict=True))
    assert old == eps and all(getattr(s, k) is None for e in old for s in e.steps for k in TOKEN_FIELDS)
    write_agentgym(old, tmp_path / "ag.json")
    gpt = [c for c in read_agentgym(tmp_path / "ag.json")[0]["conversations"] if c["from"] == "gpt"]
    assert gpt and all(set(c) == {"from", "loss", "value"} for c in gpt)  # no empty token keys on old data
    write_parquet(old, tmp_path / "e.parquet")
    assert read_parquet(tmp_path / "e.parquet") == eps
    assert all(r["output_token_ids"] is None for r in step_rows(old))


# ---------------------------------------------------------------- the OpenAI-compatible brain


def test_real_server_logprobs_recorded_and_token_id_extras_harmless(llama_server):
    """llama-cpp-python's server: per-token logprobs, no ids (it returns none); asking for ids breaks nothing."""
    brain = OpenAIBrain(base_url=llama_server, model="gemma-chat", max_tokens=8, logprobs=True, return_token_ids=True)
    for out in (brain.complete(MSGS), asyncio.run(brain.acomplete(MSGS))):
        assert out.tokens_out > 0 and out.logprobs is not None and len(out.logprobs) == out.tokens_out
        assert out.output_logprobs == out.logprobs
        assert out.prompt_token_ids is None and out.output_token_ids is None  # not in this server's answer
    plain = OpenAIBrain(base_url=llama_server, model="gemma-chat", max_tokens=8).complete(MSGS)
    assert plain.logprobs is None and plain.output_logprobs is None and plain.output_token_ids is None
    assert "extra_body" not in OpenAIBrain(base_url=llama_server, model="m")._request(MSGS, None, None, None, None)


_BASE = {"id": "x", "object": "chat.completion", "created": 0, "model": "m"}
_MSG = {"role": "assistant", "content": "hi"}


def _lp(token: str, logprob: float, **extra: Any) -> dict[str, Any]:
    return {"token": token, "logprob": logprob, "bytes": None, "top_logprobs": [], **extra}


@pytest.mark.parametrize(
    "body, want",
    [
        (  # vLLM >= 0.10.2, return_token_ids + return_tokens_as_token_ids
            {
                "prompt_token_ids": [2, 105, 2364],
                "choices": [
                    {
                        "index": 0, "message": _MSG, "finish_reason": "stop", "token_ids": [7, 8],
                        "logprobs": {"content": [_lp("token_id:7", -0.1), _lp("token_id:8", -0.2)]},
                    }
                ],
            },
            ([2, 105, 2364], [7, 8]),
        ),
        (  # older vLLM: only return_tokens_as_token_ids
            {"choices": [{"index": 0, "message": _MSG, "finish_reason": "stop",
                          "logprobs": {"content": [_lp("token_id:7", -0.1), _lp("token_id:8", -0.2)]}}]},
            (None, [7, 8]),
        ),
        (  # llama.cpp's C++ llama-server: an id on every logprobs entry
            {"choices": [{"index": 0, "message": _MSG, "finish_reason": "stop",
                          "logprobs": {"content": [_lp("h", -0.1, id=7), _lp("i", -0.2, id=8)]}}]},
            (None, [7, 8]),
        ),
        (  # OpenAI, llama-cpp-python: token strings only
            {"choices": [{"index": 0, "message": _MSG, "finish_reason": "stop",
                          "logprobs": {"content": [_lp("h", -0.1), _lp("i", -0.2)]}}]},
            (None, None),
        ),
    ],
)  # fmt: skip
def test_token_ids_are_read_wherever_servers_put_them(body, want):
    """Response shapes of servers this machine cannot run (vLLM, llama-server), parsed by the SDK's own models."""
    assert response_token_ids(ChatCompletion.model_validate({**_BASE, **body})) == want
