"""The OpenAI-compatible brain against llama.cpp's real server on 127.0.0.1, and against faults."""

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import pytest

from agents.action import action_tools, parse_tool_call
from agents.brains.base import BrainError
from agents.brains.openai_brain import OpenAIBrain
from agents.core import Agent, arun_episode
from tests.conftest import free_port
from tests.misbehaving_server import MisbehavingServer
from tests.toy_env import ENV_ID

ROOT = Path(__file__).resolve().parents[2]
MSGS = [{"role": "user", "content": "Say hello."}]


def test_real_server_completion_usage_and_logprobs(llama_server):
    brain = OpenAIBrain(base_url=llama_server, model="gemma-chat", max_tokens=8, logprobs=True)
    out = brain.complete(MSGS)
    assert out.tokens_in > 0 and 0 < out.tokens_out <= 8 and out.latency_s > 0
    assert out.logprobs is not None and len(out.logprobs) == out.tokens_out and all(lp <= 0 for lp in out.logprobs)
    aout = asyncio.run(brain.acomplete(MSGS))
    assert aout.tokens_out > 0


def test_real_server_tool_calls(llama_server):
    tools = action_tools(["click[B01]", "click[B02]"], None)
    brain = OpenAIBrain(base_url=llama_server, model="gemma-tools", max_tokens=40, tool_choice="click")
    out = brain.complete([{"role": "user", "content": "Click the first product, B01."}], tools=tools)
    assert out.tool_calls and out.tool_calls[0].name == "click"
    parsed = parse_tool_call(out, ["click[B01]", "click[B02]"])
    assert parsed.action in ("click[B01]", "click[B02]")


def test_real_server_runs_an_async_episode(llama_server):
    brain = OpenAIBrain(base_url=llama_server, model="gemma-chat", max_tokens=24)
    rec = asyncio.run(arun_episode(gym.make(ENV_ID), Agent(brain), seed=0, max_steps=3))
    assert len(rec.steps) == 3 and rec.stats.tokens_in > 0
    # a 270M model rarely writes valid ReAct; whatever it wrote is recorded and fed back
    assert all(s.raw_output is not None for s in rec.steps)


def test_retries_429_then_succeeds():
    with MisbehavingServer("429-then-ok", fail_times=2) as srv:
        out = OpenAIBrain(base_url=srv.url, model="m", max_retries=3, timeout_s=5).complete(MSGS)
        assert out.text == "Action: click[ok]" and srv.requests == 3 and out.tokens_in == 7


def test_persistent_500_reports_status_after_retries():
    with MisbehavingServer("500") as srv:
        with pytest.raises(BrainError, match="HTTP 500 after retries"):
            OpenAIBrain(base_url=srv.url, model="m", max_retries=2, timeout_s=5).complete(MSGS)
        assert srv.requests == 3


def test_garbage_json_is_a_clear_error():
    with MisbehavingServer("garbage") as srv:
        with pytest.raises(BrainError, match="not a valid chat completion"):
            OpenAIBrain(base_url=srv.url, model="m", max_retries=0, timeout_s=5).complete(MSGS)


def test_hanging_server_times_out():
    with MisbehavingServer("hang") as srv:
        t0 = time.monotonic()
        with pytest.raises(BrainError, match="did not answer in time"):
            asyncio.run(OpenAIBrain(base_url=srv.url, model="m", max_retries=1, timeout_s=0.5).acomplete(MSGS))
        assert srv.requests == 2 and time.monotonic() - t0 < 20


def test_dead_endpoint_names_url_and_how_to_start_one():
    port = free_port()  # nothing listens here
    brain = OpenAIBrain(base_url=f"http://127.0.0.1:{port}/v1", model="m", max_retries=0, timeout_s=2)
    with pytest.raises(BrainError) as e:
        brain.check()
    assert f"127.0.0.1:{port}" in str(e.value) and "python -m llama_cpp.server" in str(e.value)


def test_remote_endpoint_without_key_is_refused(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(BrainError, match="OPENAI_API_KEY"):
        OpenAIBrain(base_url="https://api.example.com/v1")


def test_cli_dead_endpoint_is_one_clear_message(tmp_path):
    port = free_port()
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "agents.run",
            "env=gym",
            f"env.id={ENV_ID}",
            "env.entry_point=tests.toy_env:CorridorEnv",
            "brain=openai",
            f"brain.base_url=http://127.0.0.1:{port}/v1",
            "brain.max_retries=0",
            "memory=none",
            "episodes=1",
            f"out={tmp_path}/run",
            "progress=false",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 2
    assert f"could not reach http://127.0.0.1:{port}/v1/chat/completions" in res.stderr
    assert "Traceback" not in res.stderr
