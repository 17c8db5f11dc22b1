"""Shared fixtures: the embedded model, a real llama.cpp OpenAI-compatible server, free ports."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import tests.toy_env  # noqa: E402,F401  (registers the corridor env)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def gguf_path() -> str:
    from agents.brains.model_files import model_path

    return str(model_path("gemma3-270m"))


@pytest.fixture(scope="session")
def local_brain():
    from agents.brains.local import LocalBrain

    return LocalBrain(model="gemma3-270m", n_ctx=2048, seed=0)


@pytest.fixture(scope="session")
def llama_server(gguf_path, tmp_path_factory):
    """llama.cpp's own OpenAI-compatible server on 127.0.0.1 serving the embedded model.

    Two aliases of the same GGUF: `gemma-chat` (Gemma chat format, logprobs on) and
    `gemma-tools` (chatml-function-calling, for tool calls).
    """
    port = free_port()
    cfg = {"host": "127.0.0.1", "port": port, "models": [
        {"model": gguf_path, "model_alias": "gemma-chat", "chat_format": "gemma", "logits_all": True, "n_ctx": 1024,
         "verbose": False},
        {"model": gguf_path, "model_alias": "gemma-tools", "chat_format": "chatml-function-calling", "n_ctx": 1024,
         "verbose": False}]}
    cfg_path = tmp_path_factory.mktemp("llama") / "server.json"
    cfg_path.write_text(json.dumps(cfg))
    log = open(cfg_path.with_suffix(".log"), "w")
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--config_file", str(cfg_path)],
                            stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.time() + 120
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama.cpp server exited: {cfg_path.with_suffix('.log').read_text()[-2000:]}")
        try:
            if httpx.get(f"{base}/models", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.3)
    else:
        proc.kill()
        raise RuntimeError("llama.cpp server did not start in 120 s")
    yield base
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


@pytest.fixture
def corridor():
    import gymnasium as gym

    env = gym.make(tests.toy_env.ENV_ID, disable_env_checker=True)
    yield env
    env.close()


@pytest.fixture(autouse=True)
def _isolated_cache(monkeypatch, tmp_path_factory):
    """Keep model assembly in the user's cache (shared, expensive) but nothing else in $HOME."""
    os.environ.setdefault("AGENTSIM_CACHE", str(Path.home() / ".cache" / "agentsim"))
