"""Client mistakes get the right status and a message that says what is wrong — never a 500."""

from __future__ import annotations

import httpx
import pytest

from envs.server.config import ServerConfig


@pytest.fixture
def client(server):
    with httpx.Client(base_url=server.url, timeout=30) as c:
        yield c


@pytest.fixture
def session(client):
    sid = client.post("/sessions", json={"env": "webshop"}).json()["session_id"]
    client.post(f"/sessions/{sid}/reset", json={"seed": 0})
    yield sid
    client.delete(f"/sessions/{sid}")


def detail(r: httpx.Response) -> str:
    return r.json()["detail"]


def test_malformed_and_invalid_bodies(client, session):
    r = client.post("/sessions", content=b'{"env": "webshop",', headers={"content-type": "application/json"})
    assert r.status_code == 422 and "not valid JSON" in detail(r)
    r = client.post("/sessions", json={"kwargs": {}})
    assert r.status_code == 422 and "body.env: Field required" in detail(r)
    r = client.post("/sessions", json={"env": "webshop", "surprise": 1})
    assert r.status_code == 422 and "surprise" in detail(r)
    r = client.post(f"/sessions/{session}/step", json={"action": 42})
    assert r.status_code == 422 and "body.action" in detail(r)
    r = client.post(f"/sessions/{session}/reset", json={"seed": "soon"})
    assert r.status_code == 422 and "body.seed" in detail(r)
    r = client.post("/step", json={"env_idx": "zero", "action": "search[x]"})
    assert r.status_code == 422 and "env_idx" in detail(r)


def test_unknown_ids_and_envs(client):
    r = client.post("/sessions/nope/step", json={"action": "search[x]"})
    assert r.status_code == 404 and "unknown session 'nope'" in detail(r)
    assert client.delete("/sessions/nope").status_code == 404
    r = client.get("/observation", params={"env_idx": 999999})
    assert r.status_code == 404 and "unknown env_idx 999999" in detail(r)
    r = client.post("/sessions", json={"env": "chess"})
    assert r.status_code == 404 and "unknown env 'chess'" in detail(r) and "webshop" in detail(r)


def test_bad_kwargs_options_and_order(client):
    r = client.post("/sessions", json={"env": "webshop", "kwargs": {"num_prodcts": 10}})
    assert r.status_code == 422 and "num_prodcts" in detail(r)
    r = client.post("/sessions", json={"env": "webshop", "kwargs": {"num_products": -5}})
    assert r.status_code == 422 and "num_products" in detail(r)
    sid = client.post("/sessions", json={"env": "webshop"}).json()["session_id"]
    r = client.post(f"/sessions/{sid}/step", json={"action": "search[x]"})
    assert r.status_code == 409 and "not been reset" in detail(r)
    assert client.get(f"/sessions/{sid}/observation").status_code == 409
    r = client.post(f"/sessions/{sid}/reset", json={"options": {"goal_index": 10**9}})
    assert r.status_code == 422 and "goal_index" in detail(r)
    client.delete(f"/sessions/{sid}")
    sid = client.post("/sessions", json={"env": "faulttree"}).json()["session_id"]
    client.post(f"/sessions/{sid}/reset", json={"seed": 0})
    client.delete(f"/sessions/{sid}")


def test_oversize_action_and_body(client, session):
    r = client.post(f"/sessions/{session}/step", json={"action": "search[" + "a" * 20_000 + "]"})
    assert r.status_code == 422 and "action is 20,008 characters long" in detail(r) and "at most 8,192" in detail(r)
    # within the transport limit, the env itself judges the action (and says why), as in-process
    r = client.post(f"/sessions/{session}/step", json={"action": "search[" + "a" * 3000 + "]"})
    error = r.json()["info"]["error"]  # wording from the shared action cap in envs/contract.py
    assert r.status_code == 200 and "too long" in error and "at most 1,000" in error
    r = client.post(f"/sessions/{session}/step", json={"action": "x" * (2 << 20)})
    assert r.status_code == 413 and "over this server's limit" in detail(r)

    def chunks():  # no content-length: the size is counted as the body streams in
        yield b'{"action": "'
        for _ in range(40):
            yield b"y" * 65536
        yield b'"}'

    r = client.post(f"/sessions/{session}/step", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413 and "over this server's limit" in detail(r)


def test_too_many_sessions(server_factory):
    s = server_factory("--max-sessions", "3")
    with httpx.Client(base_url=s.url) as c:
        ids = [c.post("/sessions", json={"env": "corridor"}).json()["session_id"] for _ in range(3)]
        r = c.post("/sessions", json={"env": "corridor"})
        assert r.status_code == 503 and r.headers["retry-after"] == "1"
        assert "server is full: 3 sessions open (max 3)" in detail(r)
        assert c.post("/create").status_code == 503  # the AgentGym route shares the cap
        c.delete(f"/sessions/{ids[0]}")
        assert c.post("/sessions", json={"env": "corridor"}).status_code == 201


STRONG = "Zq3-vK8_pT1mW6xR"  # 16 visible ASCII characters with variety (a weak one no longer starts a server)


def test_bearer_token(server_factory):
    s = server_factory(token=STRONG)
    with httpx.Client(base_url=s.url) as c:
        assert c.get("/health").status_code == 200  # probes stay open
        r = c.post("/sessions", json={"env": "corridor"})
        assert r.status_code == 401 and "missing bearer token" in detail(r)
        r = c.post("/sessions", json={"env": "corridor"}, headers={"Authorization": "Bearer nope"})
        assert r.status_code == 401 and "wrong bearer token" in detail(r)
        r = c.post("/sessions", json={"env": "corridor"}, headers={"Authorization": f"Bearer {STRONG}"})
        assert r.status_code == 201


def test_token_required_off_loopback():
    with pytest.raises(ValueError, match="requires a bearer token"):
        ServerConfig(host="0.0.0.0")
    strong = "7f3a9c1e5b2d8046e1c7a9f3b5d20864"  # issue 12: off loopback a token needs >= 16 chars (was "t")
    assert ServerConfig(host="0.0.0.0", token=strong).token == strong
    assert ServerConfig(host="::1").token is None
