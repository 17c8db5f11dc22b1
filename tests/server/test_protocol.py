"""The native protocol over a real socket: every route, and RemoteEnv == the local env."""

from __future__ import annotations

import asyncio

import gymnasium as gym
import httpx
import pytest

import envs  # noqa: F401
from envs.server import REMOTE_ID
from envs.server.client import RemoteEnv
from tests.server.conftest import SMALL


def test_health_envs_and_openapi(server):
    h = httpx.get(f"{server.url}/health").json()
    assert h["status"] == "ok" and {"webshop", "faulttree", "corridor"} <= set(h["envs"])
    listed = {e["name"]: e["env_id"] for e in httpx.get(f"{server.url}/envs").json()}
    assert listed["webshop"] == "agentsim/WebShop-v0" and listed["corridor"] == "agentsim-test/Corridor-v0"
    paths = httpx.get(f"{server.url}/openapi.json").json()["paths"]
    for p in (
        "/health",
        "/envs",
        "/sessions",
        "/sessions/{sid}/reset",
        "/sessions/{sid}/step",
        "/sessions/{sid}/observation",
        "/sessions/{sid}/available_actions",
        "/sessions/{sid}",
        "/create",
        "/step",
        "/reset",
        "/observation",
        "/available_actions",
        "/instruction_text",
    ):
        assert p in paths, p


def test_session_lifecycle_routes(server):
    with httpx.Client(base_url=server.url) as c:
        info = c.post("/sessions", json={"env": "agentsim/WebShop-v0"}).json()
        sid = info["session_id"]
        assert info["env"] == "webshop" and info["kwargs"] == {"num_products": SMALL}
        r = c.post(f"/sessions/{sid}/reset", json={"seed": 5}).json()
        assert r["observation"].startswith("WebShop [SEP] Instruction") and r["info"]["action_templates"] == [
            "search[...]"
        ]
        acts = c.get(f"/sessions/{sid}/available_actions").json()
        assert acts == {"available_actions": [], "action_templates": ["search[...]"]}
        expert = c.get(f"/sessions/{sid}/expert_action").json()["action"]
        s = c.post(f"/sessions/{sid}/step", json={"action": expert}).json()
        assert set(s) == {"observation", "reward", "terminated", "truncated", "info"} and not s["terminated"]
        assert c.get(f"/sessions/{sid}/observation").json()["observation"] == s["observation"]
        assert any(x["session_id"] == sid and x["steps"] == 1 for x in c.get("/sessions").json())
        assert c.delete(f"/sessions/{sid}").json() == {"closed": True}
        assert c.post(f"/sessions/{sid}/step", json={"action": expert}).status_code == 404


def _play(env, seed: int, n: int = 12) -> list:
    """A fixed action script that mixes good and bad actions; the trajectory must match exactly."""
    trace = [env.reset(seed=seed)]
    for k in range(n):
        acts = trace[-1][-1]["available_actions"]
        action = [
            "search[usb cable]",
            "click[not there]",
            acts[min(2, len(acts) - 1)] if acts else "search[desk lamp]",
        ][k % 3]
        res = env.step(action)
        trace.append(res)
        if res[2] or res[3]:
            break
    return trace


def test_remote_env_matches_local_env(server):
    local = gym.make("agentsim/WebShop-v0", num_products=SMALL)
    remote = RemoteEnv(server.url, "webshop", {"num_products": SMALL})
    try:
        assert remote.spec.id == "agentsim/WebShop-v0"
        for seed in (1, 2):
            assert _play(remote, seed) == _play(local, seed)
    finally:
        remote.close()
        local.close()


def test_remote_env_async_and_gym_make(server):
    async def episode() -> tuple:
        env = RemoteEnv(server.url, "corridor")
        obs, info = await env.areset(seed=3)
        steps = 0
        while True:
            obs, r, term, trunc, info = await env.astep(await env.aexpert_action())
            steps += 1
            if term or trunc:
                await env.aclose()
                return r, term, steps

    async def main() -> list:
        return await asyncio.wait_for(asyncio.gather(*(episode() for _ in range(8))), 60)

    results = asyncio.run(main())
    assert all(r == 1.0 and term for r, term, _ in results)
    env = gym.make(REMOTE_ID, url=server.url, env="corridor")
    obs, info = env.reset(seed=0)
    assert "corridor" in obs and "available_actions" in info
    env.close()


def test_evicted_session_is_recreated_on_reset(server_factory):
    s = server_factory("--idle-timeout", "0.3")
    env = RemoteEnv(s.url, "corridor")
    env.reset(seed=1)
    first = env.session_id
    import time

    time.sleep(1.5)  # idle past the timeout: the server closes the session
    with httpx.Client(base_url=s.url) as c:
        r = c.post(f"/sessions/{first}/step", json={"action": "move[left]"})
        assert r.status_code == 404 and "idle" in r.json()["detail"]
        assert c.get("/health").json()["sessions"] == 0
    with pytest.raises(Exception, match="idle"):
        env.step("move[left]")
    obs, _ = env.reset(seed=1)  # a reset after eviction starts a new session
    assert env.session_id != first and "corridor" in obs
    env.close()
