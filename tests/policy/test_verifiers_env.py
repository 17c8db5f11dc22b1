"""The verifiers adapter (`agents.policy.verifiers_env`) with the real verifiers package (0.3.x, classic stack).

Loaded by name through `vf.load_environment`, as prime-rl loads an env; driven through verifiers' own
MultiTurnEnv methods by the env's scripted expert (the rubric's reward is then the episode's return); and rolled
out by verifiers' `evaluate` against llama.cpp's real OpenAI-compatible server and the embedded Gemma 3 270M.
"""

from __future__ import annotations

import asyncio
import json

import gymnasium as gym
import httpx
import pytest
import verifiers as vf
from openai import AsyncOpenAI
from verifiers.clients import OpenAIChatCompletionsClient

import tests.toy_env  # noqa: F401  (registers the corridor, a user's env)
from agents.policy.llama_cpp_chat_client import LlamaCppChatClient
from agents.policy.verifiers_env import STATE_KEY, TextEnvironment
from tests.toy_env import ENV_ID as CORRIDOR

MODULE = "agents.policy.verifiers_env"


def offline_client() -> OpenAIChatCompletionsClient:
    """A client that is never called (the expert plays): verifiers' state wants one."""
    return OpenAIChatCompletionsClient(AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="unused"))


async def play_expert(env: TextEnvironment, gym_id: str, row: dict, kwargs: dict) -> vf.State:
    """One rollout through verifiers' MultiTurnEnv hooks, the assistant turns written by the env's expert."""
    state = await env.init_state(row, offline_client(), "expert")
    state = await env.setup_state(state)
    twin = gym.make(gym_id, **kwargs)  # the same seed in-process: its expert says what to do
    twin.reset(seed=row["info"]["seed"])
    messages = list(state["prompt"])
    for _ in range(200):
        messages.append(
            {"role": "assistant", "content": f"Thought: the expert's move.\nAction: {twin.unwrapped.expert_action()}"}
        )
        twin.step(twin.unwrapped.expert_action())
        messages.extend(vf.utils.message_utils.normalize_messages(await env.env_response(messages, state)))
        if state.get("final_env_response") is not None:
            break
    state["trajectory"] = []
    state["completion"] = messages[len(state["prompt"]) :]
    await env.rubric.score_rollout(state)
    await env.close_env(state)
    twin.close()
    return state


@pytest.mark.parametrize(
    ("name", "gym_id", "kwargs"),
    [("textcraft", "agentsim/TextCraft-v0", {}), ("babyai", "agentsim/BabyAI-v0", {}), (CORRIDOR, CORRIDOR, {})],
)
def test_loaded_by_name_and_the_expert_earns_the_rubric_reward(name: str, gym_id: str, kwargs: dict) -> None:
    env = vf.load_environment(MODULE, env=name, num_examples=2, seed=5)
    assert isinstance(env, vf.MultiTurnEnv) and isinstance(env.rubric, vf.Rubric)
    rows = env.get_dataset()
    assert len(rows) == 2 and [r["info"]["seed"] for r in rows] == [5, 6]
    first_obs, _ = gym.make(gym_id).reset(seed=5)
    assert str(first_obs) in rows[0]["prompt"][-1]["content"]  # the prompt is that seed's first observation
    state = asyncio.run(play_expert(env, gym_id, dict(rows[0]), kwargs))
    book = state[STATE_KEY]
    assert book["terminated"] and book["return"] > 0 and state["reward"] == pytest.approx(book["return"])
    assert state["metrics"]["success"] == 1.0 and state["metrics"]["env_steps"] == book["steps"] > 0
    assert not env._live  # the rollout's env was closed


def test_a_reply_without_an_action_is_told_the_form_and_does_not_step() -> None:
    env = vf.load_environment(MODULE, env=CORRIDOR, num_examples=1)

    async def go() -> tuple[list, vf.State]:
        state = await env.setup_state(await env.init_state(dict(env.get_dataset()[0]), offline_client(), "m"))
        said = await env.env_response([{"role": "assistant", "content": "I am not sure what to do."}], state)
        refused = await env.env_response([{"role": "assistant", "content": "Action: fly[away]"}], state)
        await env.close_env(state)
        return said + refused, state

    (said, refused), state = asyncio.run(go())
    assert "Could not find an action" in said["content"] and "Action:" in said["content"]
    assert "Your action was refused" in refused["content"] and "Allowed actions" in refused["content"]
    assert state[STATE_KEY]["steps"] == 1 and state[STATE_KEY]["return"] == 0
    assert state.get("final_env_response") is None


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ({"env": "nosuchenv"}, "not a registered env; registered:"),
        ({"num_examples": 0}, "1 to 1,000,000"),
        ({"seed": -1}, "non-negative"),
    ],
)
def test_bad_arguments_are_refused_naming_what_is_allowed(args: dict, says: str) -> None:
    with pytest.raises(Exception, match=says):
        vf.load_environment(MODULE, **args)


def test_verifiers_rolls_out_against_a_real_local_model_server(llama_server) -> None:
    """verifiers' own `evaluate` against llama.cpp's server, through the client that server needs.

    Every request is recorded off the wire: the length goes as `max_tokens` (the server drops verifiers'
    `max_completion_tokens` and then generates to the end of its context) and no message field is null (the
    server refuses an assistant turn's `"tool_calls": null` with a 500), so the second turn is answered too.
    """
    env = vf.load_environment(MODULE, env=CORRIDOR, num_examples=1, max_turns=2)
    sent: list[dict] = []
    answered: list[dict] = []

    async def record_request(request: httpx.Request) -> None:
        sent.append(json.loads(request.content))

    async def record_answer(response: httpx.Response) -> None:
        await response.aread()
        answered.append({"status": response.status_code, "body": response.json()})

    http = httpx.AsyncClient(timeout=120, event_hooks={"request": [record_request], "response": [record_answer]})
    openai = AsyncOpenAI(base_url=llama_server, api_key="local", max_retries=0, timeout=120, http_client=http)
    results = env.evaluate_sync(
        LlamaCppChatClient(openai),
        "gemma-chat",
        sampling_args={"max_tokens": 24, "temperature": 0.7},
        num_examples=1,
        rollouts_per_example=2,
        max_concurrent=1,
    )
    outputs = results["outputs"]
    assert len(outputs) == 2
    for out in outputs:
        assert out.get("error") is None, out.get("error")
        turns = [m for m in out["completion"] if m["role"] == "assistant"]
        assert len(turns) == 2 and all(m["content"] is not None for m in turns)  # the corridor needs more steps
        # a 270M model rarely acts well: whatever it did, the reward is the env's return and the steps are counted
        assert out["reward"] >= 0 and 0 <= out["metrics"]["env_steps"] <= len(turns)
    assert len(sent) == len(answered) == 4  # two rollouts, two turns each
    assert all(a["status"] == 200 for a in answered), answered
    assert all(body["max_tokens"] == 24 and "max_completion_tokens" not in body for body in sent)
    assert all(None not in message.values() for body in sent for message in body["messages"])
    assert any(m["role"] == "assistant" for body in sent for m in body["messages"])  # a second turn was sent
    assert all(0 < a["body"]["usage"]["completion_tokens"] <= 24 for a in answered)  # the server kept to the length
