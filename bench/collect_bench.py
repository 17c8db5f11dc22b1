"""Collection throughput with the scripted brain: local asyncio vs `executor=ray` with 2 workers.

    nice python bench/collect_bench.py [--episodes 600] [--concurrency 8] [--num-products 10000]

Each configuration is the real CLI (`python -m agents.collect ...`) into a fresh out dir.
episodes/s comes from the collector's own summary (first episode to last); "wall" also counts
start-up (imports, catalog load, Ray start). Writes bench/results/collect.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "collect.json"
log = logging.getLogger("collect_bench")


def run(name: str, extra: list[str], episodes: int, concurrency: int, num_products: int, tmp: Path) -> dict:
    out = tmp / "".join(ch if ch.isalnum() else "-" for ch in name)
    cmd = [
        "nice",
        sys.executable,
        "-m",
        "agents.collect",
        "env=webshop",
        f"+env.kwargs.num_products={num_products}",
        "brain=scripted",
        "brain.epsilon=0.1",
        f"episodes={episodes}",
        f"concurrency={concurrency}",
        f"out={out}",
        "progress=false",
        "log_level=WARNING",
        *extra,
    ]
    t0 = time.perf_counter()
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        raise RuntimeError(f"{name} failed: {res.stderr[-2000:]}")
    s = json.loads((out / "summary.json").read_text())
    row = {
        "config": name,
        "episodes": s["episodes_completed"],
        "episodes_per_s": s["episodes_per_s"],
        "steps_per_s": s["summary"]["steps_per_s"],
        "success_rate": s["summary"]["success_rate"],
        "collect_s": s["summary"]["wall_time_s"],
        "wall_s_with_startup": wall,
    }
    log.info("%s: %.1f episodes/s", name, row["episodes_per_s"])
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--episodes", type=int, default=600)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--num-products", type=int, default=10_000)
    a = p.parse_args()
    logging.basicConfig(level=logging.INFO)
    os.environ.setdefault("AGENTSIM_CACHE", str(Path(tempfile.gettempdir()) / "agentsim-bench-cache"))
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        run("warm-up", ["episodes=2"], 2, 1, a.num_products, tmp)  # the catalog is built once, not timed
        rows = [
            run("local asyncio", ["executor=local"], a.episodes, a.concurrency, a.num_products, tmp),
            run("ray, 2 workers", ["executor=ray", "workers=2"], a.episodes, a.concurrency, a.num_products, tmp),
        ]
    result = {
        "benchmark": "collection, scripted brain, WebShop",
        "num_products": a.num_products,
        "episodes": a.episodes,
        "concurrency": a.concurrency,
        "cpus": os.cpu_count(),
        "rows": rows,
        "ray_over_local": rows[1]["episodes_per_s"] / rows[0]["episodes_per_s"],
        "time": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2))

    from rich.console import Console
    from rich.table import Table

    t = Table(
        title=f"Collection, scripted brain, WebShop {a.num_products:,} products, {a.episodes} episodes, "
        f"concurrency {a.concurrency}, {os.cpu_count()} CPUs"
    )
    for c in ("executor", "episodes/s", "env steps/s", "success", "collect s", "wall s (with start-up)"):
        t.add_column(c, justify="right")
    for r in rows:
        t.add_row(
            r["config"],
            f"{r['episodes_per_s']:.1f}",
            f"{r['steps_per_s']:.0f}",
            f"{r['success_rate']:.0%}",
            f"{r['collect_s']:.1f}",
            f"{r['wall_s_with_startup']:.1f}",
        )
    Console(width=160).print(t)
    print(f"results: {RESULTS}")


if __name__ == "__main__":
    main()
