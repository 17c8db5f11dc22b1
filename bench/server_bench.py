"""Env server benchmark: WebShop steps/s and step latency over HTTP vs in-process, at 1, 8, 64 clients.

    nice python bench/server_bench.py [--steps 3000] [--clients 1 8 64] [--num-products 10000]

The server runs as its own process (`python -m envs.server`, niced like this one); each HTTP
client is an asyncio task with its own connection doing create -> (reset, steps)* -> close. The
in-process side runs the same policy on `WebShopEnv`s in as many threads. Both use the same
seeded policy (search the goal's words, then random clicks, some invalid), so the work per step
matches. Writes bench/results/server.json and prints a rich table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "bench" / "results" / "server.json"
log = logging.getLogger("server_bench")


def choose(rng: random.Random, info: dict) -> str:
    if info["action_templates"]:
        words = re.findall(r"[a-z]+", info["instruction"])
        return f"search[{' '.join(rng.sample(words, min(5, len(words))))}]"
    acts = info["available_actions"]
    return rng.choice(acts) if acts and rng.random() < 0.9 else "click[nothing here]"


def stats(lat: list[float], steps: int, wall: float) -> dict:
    a = np.array(lat) * 1e3
    return {
        "steps": steps,
        "wall_s": wall,
        "steps_per_s": steps / wall,
        "p50_ms": float(np.percentile(a, 50)),
        "p99_ms": float(np.percentile(a, 99)),
    }


# -- in-process ---------------------------------------------------------------------------
def inprocess(clients: int, steps: int, kwargs: dict) -> dict:
    import gymnasium as gym

    import envs  # noqa: F401

    per = steps // clients
    lat: list[float] = []
    lock = threading.Lock()

    def client(k: int) -> None:
        rng = random.Random(k)
        # checker off: this bench times the env's own steps, not the checker wrapper around them
        env = gym.make("agentsim/WebShop-v0", disable_env_checker=True, **kwargs)
        mine, done, info = [], True, {}
        for _ in range(per):
            if done:
                _, info = env.reset(seed=rng.randrange(10**6))
            t0 = time.perf_counter()
            _, _, term, trunc, info = env.step(choose(rng, info))
            mine.append(time.perf_counter() - t0)
            done = term or trunc
        env.close()
        with lock:
            lat.extend(mine)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return stats(lat, per * clients, time.perf_counter() - t0)


# -- over HTTP ----------------------------------------------------------------------------
async def http(url: str, clients: int, steps: int) -> dict:
    import httpx

    per = steps // clients
    lat: list[float] = []

    async def client(k: int) -> None:
        rng = random.Random(k)
        async with httpx.AsyncClient(base_url=url, timeout=120) as c:
            sid = (await c.post("/sessions", json={"env": "webshop"})).json()["session_id"]
            done, info = True, {}
            for _ in range(per):
                if done:
                    info = (await c.post(f"/sessions/{sid}/reset", json={"seed": rng.randrange(10**6)})).json()["info"]
                t0 = time.perf_counter()
                r = await c.post(f"/sessions/{sid}/step", json={"action": choose(rng, info)})
                lat.append(time.perf_counter() - t0)
                r.raise_for_status()
                body = r.json()
                info, done = body["info"], body["terminated"] or body["truncated"]
            await c.delete(f"/sessions/{sid}")

    t0 = time.perf_counter()
    await asyncio.gather(*(client(k) for k in range(clients)))
    return stats(lat, per * clients, time.perf_counter() - t0)


def start_server(
    port: int, kwargs: dict, *, max_sessions: int = 256, preload: bool = True, cache: str | None = None
) -> subprocess.Popen:
    """`python -m envs.server` on `port` serving WebShop with `kwargs`, once /health answers (the soak bench too)."""
    import httpx

    cmd = [sys.executable, "-m", "envs.server", "--port", str(port), "--max-sessions", str(max_sessions)]
    cmd += ["--env-kwargs", "webshop=" + json.dumps(kwargs), "--log-level", "WARNING"]
    cmd += ["--preload", "webshop"] * preload
    env = {**os.environ, **({"AGENTSIM_CACHE": cache} if cache else {})}
    proc = subprocess.Popen(["nice", *cmd], cwd=ROOT, env=env)
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("server did not start")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=3000, help="steps per configuration")
    p.add_argument("--clients", type=int, nargs="+", default=[1, 8, 64])
    p.add_argument("--num-products", type=int, default=10_000)
    p.add_argument("--port", type=int, default=8799)
    a = p.parse_args()
    logging.basicConfig(level=logging.INFO)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    os.environ.setdefault("AGENTSIM_CACHE", str(Path(tempfile.gettempdir()) / "agentsim-bench-cache"))
    kwargs = {"num_products": a.num_products}
    inprocess(1, 50, kwargs)  # build/load the catalog before timing anything
    server = start_server(a.port, kwargs)
    rows = []
    try:
        for n in a.clients:
            local = inprocess(n, a.steps, kwargs)
            remote = asyncio.run(http(f"http://127.0.0.1:{a.port}", n, a.steps))
            rows.append(
                {
                    "clients": n,
                    "in_process": local,
                    "http": remote,
                    "http_over_in_process": remote["steps_per_s"] / local["steps_per_s"],
                }
            )
            log.info(
                "%d clients: in-process %.0f steps/s, http %.0f steps/s", n, local["steps_per_s"], remote["steps_per_s"]
            )
    finally:
        server.terminate()
        server.wait(10)
    result = {
        "benchmark": "env server vs in-process, WebShop",
        "num_products": a.num_products,
        "steps": a.steps,
        "cpus": os.cpu_count(),
        "rows": rows,
        "time": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2))

    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"WebShop steps over HTTP vs in-process ({a.num_products:,} products, {os.cpu_count()} CPUs)")
    for c in ("clients", "in-proc steps/s", "in-proc p50/p99 ms", "HTTP steps/s", "HTTP p50/p99 ms", "HTTP / in-proc"):
        t.add_column(c, justify="right")
    for r in rows:
        i, h = r["in_process"], r["http"]
        t.add_row(
            str(r["clients"]),
            f"{i['steps_per_s']:,.0f}",
            f"{i['p50_ms']:.2f} / {i['p99_ms']:.2f}",
            f"{h['steps_per_s']:,.0f}",
            f"{h['p50_ms']:.2f} / {h['p99_ms']:.2f}",
            f"{r['http_over_in_process']:.2f}",
        )
    Console(width=160).print(t)
    print(f"results: {RESULTS}")


if __name__ == "__main__":
    main()
