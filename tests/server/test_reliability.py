"""Load and failure behaviour over real sockets: many clients, many sessions, a server that dies."""

from __future__ import annotations

import asyncio
import random
import re

import httpx
import pytest

from envs.server.client import EnvServerUnavailable, RemoteEnv

CLIENTS = 64
STEPS_PER_CLIENT = 50  # 3,200 steps in all


async def _client(url: str, k: int, statuses: list[int]) -> int:
    """One AgentGym-load-like client: create, episodes of mixed good and bad actions, close."""
    rng = random.Random(k)
    steps = 0
    async with httpx.AsyncClient(base_url=url, timeout=60) as c:
        r = await c.post("/sessions", json={"env": "webshop"})
        statuses.append(r.status_code)
        sid = r.json()["session_id"]
        info: dict = {}
        done = True
        while steps < STEPS_PER_CLIENT:
            if done:
                r = await c.post(f"/sessions/{sid}/reset", json={"seed": rng.randrange(10**6)})
                statuses.append(r.status_code)
                info = r.json()["info"]
            acts = info["available_actions"]
            if info["action_templates"]:
                words = re.findall(r"[a-z]+", info["instruction"])
                action = f"search[{' '.join(rng.sample(words, min(4, len(words))))}]"
            elif acts and rng.random() < 0.9:
                action = rng.choice(acts)
            else:
                action = "click[nothing here]"
            r = await c.post(f"/sessions/{sid}/step", json={"action": action})
            statuses.append(r.status_code)
            body = r.json()
            info, done = body["info"], body["terminated"] or body["truncated"]
            steps += 1
            if steps % 10 == 0:
                statuses.append((await c.get(f"/sessions/{sid}/available_actions")).status_code)
        statuses.append((await c.delete(f"/sessions/{sid}")).status_code)
    return steps


def test_64_concurrent_clients_without_errors(server):
    statuses: list[int] = []

    async def main() -> list[int]:
        return await asyncio.wait_for(asyncio.gather(*(_client(server.url, k, statuses) for k in range(CLIENTS))), 240)

    steps = asyncio.run(main())
    assert sum(steps) == CLIENTS * STEPS_PER_CLIENT
    assert len(statuses) > CLIENTS * STEPS_PER_CLIENT and set(statuses) == {200, 201}
    assert httpx.get(f"{server.url}/health").json()["sessions"] == 0


def test_rss_bounded_over_10000_create_close_cycles(server_factory):
    s = server_factory()

    async def cycles(n: int, lanes: int = 8) -> None:
        async def lane(count: int) -> None:
            async with httpx.AsyncClient(base_url=s.url, timeout=60) as c:
                for i in range(count):
                    r = await c.post("/sessions", json={"env": "webshop"})
                    assert r.status_code == 201, r.text
                    sid = r.json()["session_id"]
                    if i % 10 == 0:  # exercise a reset now and then (episode state is allocated there)
                        assert (await c.post(f"/sessions/{sid}/reset", json={"seed": i})).status_code == 200
                    assert (await c.delete(f"/sessions/{sid}")).status_code == 200

        await asyncio.gather(*(lane(n // lanes) for _ in range(lanes)))

    start = s.rss_mb()
    asyncio.run(cycles(10_000))
    end = s.rss_mb()
    print(f"server RSS {start:.1f} MB -> {end:.1f} MB after 10,000 create/close cycles")
    assert httpx.get(f"{s.url}/health").json()["sessions"] == 0
    assert end - start < 50, f"RSS grew from {start:.0f} MB to {end:.0f} MB over 10,000 create/close cycles"


def test_server_killed_mid_run_gives_a_clear_client_error(server_factory):
    s = server_factory()
    env = RemoteEnv(s.url, "webshop")
    env.reset(seed=0)
    env.step("search[lamp]")
    s.proc.kill()
    s.proc.wait()
    with pytest.raises(EnvServerUnavailable, match=rf"env server {re.escape(s.url)} is unreachable during step"):
        env.step("click[back to search]")

    async def async_side() -> None:
        aenv = RemoteEnv(s.url, "webshop")
        with pytest.raises(EnvServerUnavailable, match="is unreachable during create"):
            await aenv.areset(seed=0)

    asyncio.run(async_side())
    env.close()  # closing against a dead server does not raise
