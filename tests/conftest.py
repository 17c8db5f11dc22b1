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


def wait_until_up(proc: subprocess.Popen, url: str, log: Path, what: str, timeout_s: float = 120) -> None:
    """Poll `url` until it answers 200; fail with the server's log if it exits or never answers."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited: {log.read_text()[-2000:]}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"{what} did not start in {timeout_s:.0f} s: {log.read_text()[-2000:]}")


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
    cfg = {
        "host": "127.0.0.1",
        "port": port,
        "models": [
            {
                "model": gguf_path,
                "model_alias": "gemma-chat",
                "chat_format": "gemma",
                "logits_all": True,
                "n_ctx": 1024,
                "verbose": False,
            },
            {
                "model": gguf_path,
                "model_alias": "gemma-tools",
                "chat_format": "chatml-function-calling",
                "n_ctx": 1024,
                "verbose": False,
            },
        ],
    }
    cfg_path = tmp_path_factory.mktemp("llama") / "server.json"
    cfg_path.write_text(json.dumps(cfg))
    log = open(cfg_path.with_suffix(".log"), "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--config_file", str(cfg_path)], stdout=log, stderr=subprocess.STDOUT
    )
    base = f"http://127.0.0.1:{port}/v1"
    wait_until_up(proc, f"{base}/models", cfg_path.with_suffix(".log"), "llama.cpp server")
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

    env = gym.make(tests.toy_env.ENV_ID)
    yield env
    env.close()


@pytest.fixture(autouse=True)
def _isolated_cache(monkeypatch, tmp_path_factory):
    """Keep model assembly in the user's cache (shared, expensive) but nothing else in $HOME."""
    os.environ.setdefault("AGENTSIM_CACHE", str(Path.home() / ".cache" / "agentsim"))


@pytest.fixture(scope="session")
def tiny_backbone(tmp_path_factory) -> str:
    """A 2-layer, 32-wide BERT with MiniLM's tokenizer: the real model code path, at test speed."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from agents.memory.minilm_files import model_dir

    torch.manual_seed(0)
    d = tmp_path_factory.mktemp("tiny-bert")
    tok = AutoTokenizer.from_pretrained(model_dir())
    cfg = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
    )
    BertModel(cfg).save_pretrained(d)
    tok.save_pretrained(d)
    return str(d)
