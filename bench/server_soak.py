"""Env-server memory soak: server RSS over many create/reset/close cycles over real HTTP.

    nice python bench/server_soak.py [--cycles 100000] [--max-seconds 600] [--num-products 1000] [--lanes 4]
    nice python bench/server_soak.py --trace 20000     # in-process (ASGI) run with tracemalloc top growth

The server is its own process (`python -m envs.server`, small catalog, preloaded); `--lanes`
asyncio clients each loop create -> reset -> close (every 10th cycle also steps twice). RSS of the
server process is read from /proc at checkpoints. If `--max-seconds` ends the run before
`--cycles`, the figure at `--cycles` is extrapolated from a least-squares line through the
second half of the checkpoints (after caches have warmed) and marked as such. Writes
bench/results/server_soak.json and prints a table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from server_bench import start_server  # noqa: E402  (one way to start the server for both benches)

RESULTS = ROOT / "bench" / "results" / "server_soak.json"
log = logging.getLogger("server_soak")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def cycle(c, i: int) -> None:
    r = await c.post("/sessions", json={"env": "webshop"})
    r.raise_for_status()
    sid = r.json()["session_id"]
    r = await c.post(f"/sessions/{sid}/reset", json={"seed": i})
    r.raise_for_status()
    if i % 10 == 0:
        for action in ("search[usb cable]", "click[nothing here]"):
            (await c.post(f"/sessions/{sid}/step", json={"action": action})).raise_for_status()
    (await c.delete(f"/sessions/{sid}")).raise_for_status()


async def soak(url: str, pid: int, cycles: int, max_s: float, lanes: int, every: int) -> tuple[list[dict], bool]:
    import httpx

    done = 0
    points = [{"cycles": 0, "rss_mb": rss_mb(pid), "s": 0.0}]
    t0 = time.monotonic()
    stop = False

    async def lane(k: int) -> None:
        nonlocal done, stop
        async with httpx.AsyncClient(base_url=url, timeout=60) as c:
            while not stop and done < cycles:
                i = done
                done += 1
                await cycle(c, i)
                if (i + 1) % every == 0:  # the lane that ran cycle i+1 records it, once
                    points.append({"cycles": i + 1, "rss_mb": rss_mb(pid), "s": round(time.monotonic() - t0, 1)})
                    log.info("%7d cycles  %.1f MB  %.0f s", done, points[-1]["rss_mb"], points[-1]["s"])
                if time.monotonic() - t0 > max_s:
                    stop = True

    await asyncio.gather(*(lane(k) for k in range(lanes)))
    points.sort(key=lambda q: q["cycles"])
    if points[-1]["cycles"] != done:
        points.append({"cycles": done, "rss_mb": rss_mb(pid), "s": round(time.monotonic() - t0, 1)})
    return points, done >= cycles


def fit(points: list[dict]) -> float:
    """MB per cycle: least squares over the second half of the checkpoints (caches warm by then)."""
    tail = points[len(points) // 2 :]
    if len(tail) < 2:
        return 0.0
    xs, ys = [p["cycles"] for p in tail], [p["rss_mb"] for p in tail]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else 0.0


def trace(n: int, num_products: int) -> None:
    """In-process: the whole ASGI app (guard, FastAPI, service, env) under tracemalloc; top growth after warm-up."""
    import tracemalloc

    import httpx

    from envs.server.app import build_app
    from envs.server.config import ServerConfig

    app = build_app(ServerConfig(env_kwargs={"webshop": {"num_products": num_products}}))
    service = app.app.state.service

    async def main() -> None:
        await service.start()
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://soak") as c:
            for i in range(2000):
                await cycle(c, i)
            tracemalloc.start(12)
            first = tracemalloc.take_snapshot()
            for i in range(2000, 2000 + n):
                await cycle(c, i)
            second = tracemalloc.take_snapshot()
        await service.stop()
        stats = second.compare_to(first, "traceback")
        total = sum(s.size_diff for s in stats)
        print(f"python heap growth over {n:,} cycles after warm-up: {total / 1e6:+.3f} MB")
        for s in stats[:8]:
            print(f"{s.size_diff / 1e3:+9.1f} kB  {s.count_diff:+7d} blocks")
            for line in s.traceback.format()[-6:]:
                print("      " + line)

    asyncio.run(main())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cycles", type=int, default=100_000)
    p.add_argument("--max-seconds", type=float, default=600.0)
    p.add_argument("--num-products", type=int, default=1000)
    p.add_argument("--lanes", type=int, default=4)
    p.add_argument("--every", type=int, default=2500, help="cycles between RSS checkpoints")
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument(
        "--no-preload",
        action="store_true",
        help="start cold: the first create builds the catalog (RSS then includes the catalog, not drift)",
    )
    p.add_argument("--trace", type=int, default=0, metavar="N", help="in-process tracemalloc run of N cycles instead")
    a = p.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    if a.trace:
        os.environ.setdefault("AGENTSIM_CACHE", tempfile.mkdtemp(prefix="agentsim-soak-"))
        trace(a.trace, a.num_products)
        return
    port = free_port()
    proc = start_server(
        port,
        {"num_products": a.num_products},
        max_sessions=256,
        preload=not a.no_preload,
        cache=tempfile.mkdtemp(prefix="agentsim-soak-"),
    )
    try:
        points, complete = asyncio.run(
            soak(f"http://127.0.0.1:{port}", proc.pid, a.cycles, a.max_seconds, a.lanes, a.every)
        )
    finally:
        proc.terminate()
        proc.wait(10)
    slope = fit(points)
    done = points[-1]["cycles"]
    warm = next((q for q in points if q["cycles"] >= 10_000), points[-1])
    projected = points[-1]["rss_mb"] + slope * (a.cycles - done)
    out = {
        "num_products": a.num_products,
        "lanes": a.lanes,
        "preload": not a.no_preload,
        "cycles_target": a.cycles,
        "cycles_done": done,
        "complete": complete,
        "seconds": points[-1]["s"],
        "cycles_per_s": done / max(points[-1]["s"], 1e-9),
        "rss_start_mb": points[0]["rss_mb"],
        "rss_at_10k_mb": warm["rss_mb"],
        "rss_end_mb": points[-1]["rss_mb"],
        "growth_mb": points[-1]["rss_mb"] - points[0]["rss_mb"],
        "slope_mb_per_10k_after_warmup": slope * 10_000,
        "rss_at_target_mb": points[-1]["rss_mb"] if complete else projected,
        "rss_at_target_is_extrapolated": not complete,
        "points": points,
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(out, indent=2) + "\n")
    print(f"{'cycles':>8} {'RSS MB':>8} {'seconds':>8}")
    for q in points:
        print(f"{q['cycles']:>8} {q['rss_mb']:>8.1f} {q['s']:>8.1f}")
    tag = "extrapolated" if not complete else "measured"
    print(
        f"start {out['rss_start_mb']:.1f} MB, after {done:,} cycles {out['rss_end_mb']:.1f} MB "
        f"({out['growth_mb']:+.1f} MB); slope after warm-up {out['slope_mb_per_10k_after_warmup']:+.2f} MB/10k; "
        f"at {a.cycles:,} cycles {out['rss_at_target_mb']:.1f} MB ({tag}). Wrote {a.out}"
    )


if __name__ == "__main__":
    main()
