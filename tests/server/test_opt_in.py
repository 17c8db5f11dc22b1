"""Issue 43, the env server: a shell only when the operator asks (`--allow-coding`), tokens of real strength.

Before: the coding env was served by default (any client could open a shell in a sandbox), and
`aaaaaaaaaaaaaaaa` or sixteen zero-width spaces were accepted as tokens.
"""

from __future__ import annotations

import secrets
import subprocess
import sys

import httpx
import pytest

from envs.server.__main__ import parse_args
from envs.server.config import ServerConfig, token_bits, token_problem
from tests.server.conftest import ROOT

WEAK = [
    ("aaaaaaaaaaaaaaaa", "distinct"),
    ("\u200b" * 16, "not visible ASCII"),
    ("passwordpassword", "repeated"),
    ("0123456789abcdef0123456789abcdef", "repeated"),
    ("abcdefghijklmnop", "run of 16"),
    ("Xk2!aaaaaaa9Lm#q", "run of 7"),
    ("token with space", "not visible ASCII"),
    ("s3cret", "16 to 1,024"),
    ("ab" * 600, "16 to 1,024"),
    ("abcabcabcabcabcd", "distinct"),
    ("aAbBcCaAbBcCaAbB", "repeated"),
]


@pytest.mark.parametrize("token,why", WEAK)
def test_weak_tokens_are_refused_with_how_to_make_one(token: str, why: str) -> None:
    assert why in (token_problem(token) or ""), token_problem(token)
    for host in ("127.0.0.1", "0.0.0.0"):  # a token given is checked wherever the server binds
        with pytest.raises(ValueError, match="too weak") as e:
            ServerConfig(host=host, token=token)
        assert "secrets.token_urlsafe(24)" in str(e.value)


def test_generated_tokens_pass() -> None:
    """What the message tells operators to run must pass, every time (and the usual alternatives too)."""
    for _ in range(500):
        for t in (secrets.token_urlsafe(24), secrets.token_hex(16), secrets.token_urlsafe(12), secrets.token_hex(8)):
            assert token_problem(t) is None, t
    assert token_bits(secrets.token_urlsafe(24)) > 100
    assert token_bits("abcdefghijklmnop") < 36 < token_bits("Zq3-vK8_pT1mW6xR")


@pytest.mark.parametrize("token", ["aaaaaaaaaaaaaaaa", "\u200b" * 16, "passwordpassword"])
def test_weak_token_exits_2_on_the_command_line(token: str) -> None:
    p = subprocess.run(
        [sys.executable, "-m", "envs.server", "--token", token], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 2, p.stderr[-1000:]
    assert "too weak" in p.stderr and "secrets.token_urlsafe(24)" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--preload", "coding"],
        ["--env-kwargs", 'coding={"backend": "bwrap"}'],
        ["--agentgym-env", "coding"],
        ["--env", "shell=agentsim/Coding-v0"],
        ["--env", "shell=x/Shell-v0@envs.coding.env:CodingEnv"],
        ["--client-kwargs", "coding=task"],
    ],
)
def test_naming_the_coding_env_without_the_flag_exits_2(args: list[str], capsys) -> None:
    with pytest.raises(SystemExit) as e:
        parse_args(args)
    assert e.value.code == 2 and "--allow-coding" in capsys.readouterr().err
    assert parse_args([*args, "--allow-coding"]).allow_coding  # with the flag, the same options are taken


def test_coding_sessions_are_403_without_the_flag(server) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as c:
        for env in ("coding", "agentsim/Coding-v0"):
            r = c.post("/sessions", json={"env": env, "kwargs": {"task": "example-kv-delete"}})
            assert r.status_code == 403 and "--allow-coding" in r.json()["detail"], r.text
        r = c.post("/sessions", json={"env": "coding", "kwargs": {"task": "/etc"}})
        assert r.status_code == 403  # refused before its kwargs are even looked at
        assert "coding" not in [e["name"] for e in c.get("/envs").json()]
        assert "coding" not in c.get("/health").json()["envs"]
        assert all(s["env"] != "coding" for s in c.get("/sessions").json())


def test_with_the_flag_an_unavailable_backend_is_422_not_500(server_factory) -> None:
    """Before: a coding session with an unavailable backend was created, and its first reset answered 500."""
    from envs.coding.sandbox import unavailable_reason

    s = server_factory("--allow-coding")
    with httpx.Client(base_url=s.url, timeout=60) as c:
        assert "coding" in [e["name"] for e in c.get("/envs").json()]
        if unavailable_reason("docker") is None:
            pytest.skip("a Docker engine runs here, so no backend is unavailable to ask for")
        r = c.post("/sessions", json={"env": "coding", "kwargs": {"task": "example-kv-delete", "backend": "docker"}})
        assert r.status_code == 422, r.text
        d = r.json()["detail"]
        assert "'docker' does not work on this server" in d and "backends that work here" in d
        assert c.get("/health").json()["sessions"] == 0  # the refused session took no slot
