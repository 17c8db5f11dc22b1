"""WebShop benchmark: catalog generation, index build, search latency, env speed, memory.

    nice python bench/webshop_bench.py                    # 10k and 100k
    nice python bench/webshop_bench.py --sizes 1000000    # the 1M run (minutes)

Each catalog size runs in its own subprocess (so peak RSS is per size) with a fresh cache dir
(so build times are cold). Prints a rich table and writes bench/results/webshop.json.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "bench" / "results" / "webshop.json"
log = logging.getLogger("webshop_bench")


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def percentiles(xs: list[float]) -> dict[str, float]:
    a = np.array(xs) * 1e3
    return {"p50_ms": float(np.percentile(a, 50)), "p99_ms": float(np.percentile(a, 99)), "mean_ms": float(a.mean())}


def bench_queries(catalog, n: int) -> list[str]:
    """Realistic queries: goal keywords (expert style) and the first words of instructions (human style)."""
    goals = catalog.goals("test")
    rng = random.Random(0)
    out = []
    for k in range(n):
        g = goals[rng.randrange(len(goals))]
        out.append(g.keywords if k % 2 == 0 else " ".join(g.instruction.split(",")[0].split()[2:]))
    return out


def run_episodes(env, n: int, epsilon: float, seed: int) -> tuple[int, float, list[float]]:
    """Scripted-expert episodes with epsilon-random clicks; returns steps, seconds, rewards."""
    rng = random.Random(seed)
    steps, rewards = 0, []
    t0 = time.perf_counter()
    for e in range(n):
        _, info = env.reset(seed=seed * 100_000 + e)
        while True:
            acts = info["available_actions"]
            a = rng.choice(acts) if acts and rng.random() < epsilon else env.expert_action()
            _, r, term, trunc, info = env.step(a)
            steps += 1
            if term or trunc:
                rewards.append(r)
                break
    return steps, time.perf_counter() - t0, rewards


def one_size(n: int, queries: int, episodes: int, baseline_max: int, bm25s_max: int) -> dict:
    from envs.webshop.search import Bm25sIndex, TantivyIndex, open_index
    from envs.webshop.synth import SyntheticCatalog, generate_codes

    out: dict = {"num_products": n}
    t = time.perf_counter()
    codes = generate_codes(n, 0)
    out["generate_s"] = time.perf_counter() - t
    catalog = SyntheticCatalog(n, 0, codes=codes)
    t = time.perf_counter()
    texts_chars = sum(len(x) for b in catalog.iter_search_texts() for x in b)
    out["render_texts_s"] = time.perf_counter() - t
    out["corpus_mb"] = texts_chars / 2**20
    t = time.perf_counter()
    index = open_index(catalog, "tantivy")
    out["index_build_s"] = time.perf_counter() - t
    out["rss_after_index_mb"] = rss_mb()
    qs = bench_queries(catalog, queries)
    assert isinstance(index, TantivyIndex)
    from envs.webshop.search import query_terms

    lat = []
    for q in qs:  # uncached: straight to the engine
        t = time.perf_counter()
        index._search(query_terms(q), 50)
        lat.append(time.perf_counter() - t)
    out["search"] = percentiles(lat)

    if n <= bm25s_max:
        t = time.perf_counter()
        b = open_index(catalog, "bm25s")
        out["bm25s_build_s"] = time.perf_counter() - t
        assert isinstance(b, Bm25sIndex)
        lat = []
        for q in qs:
            t = time.perf_counter()
            b._search(query_terms(q), 50)
            lat.append(time.perf_counter() - t)
        out["bm25s_search"] = percentiles(lat)
        del b
        gc.collect()

    if n <= baseline_max:
        from rank_bm25 import BM25Okapi

        t = time.perf_counter()
        tokenized = [query_terms(x) for batch in catalog.iter_search_texts() for x in batch]
        bm = BM25Okapi(tokenized)
        out["rank_bm25_build_s"] = time.perf_counter() - t
        lat = []
        for q in qs[: max(20, queries // 10)]:
            t = time.perf_counter()
            scores = bm.get_scores(query_terms(q))
            np.argpartition(-scores, 50)[:50]
            lat.append(time.perf_counter() - t)
        out["rank_bm25_search"] = percentiles(lat)
        out["rank_bm25_p50_ratio"] = out["rank_bm25_search"]["p50_ms"] / out["search"]["p50_ms"]
        del bm, tokenized
        gc.collect()

    import envs  # noqa: F401
    from envs.webshop.env import WebShopEnv

    env = WebShopEnv(num_products=n, split="train")
    steps, secs, rewards = run_episodes(env, episodes, epsilon=0.0, seed=1)
    steps_n, secs_n, rewards_n = run_episodes(env, episodes, epsilon=0.2, seed=2)
    test_env = WebShopEnv(num_products=n, split="test")
    _, _, rewards_test = run_episodes(test_env, min(episodes, len(test_env.goals)), epsilon=0.0, seed=3)
    out["env"] = {
        "episodes": 3 * episodes,
        "steps": steps + steps_n,
        "steps_per_s": (steps + steps_n) / (secs + secs_n),
        "expert_steps_per_s": steps / secs,
        "noisy_steps_per_s": steps_n / secs_n,
        "expert_success_train": float(np.mean(np.array(rewards) >= 1.0)),
        "expert_success_test": float(np.mean(np.array(rewards_test) >= 1.0)),
        "expert_score_test": float(np.mean(rewards_test) * 100),
        "eps0.2_success": float(np.mean(np.array(rewards_n) >= 1.0)),
    }
    out["peak_rss_mb"] = peak_rss_mb()
    return out


def many_envs(n: int, count: int, episodes: int) -> dict:
    """RSS with `count` env instances (each played) vs one, same catalog, same process."""
    import envs  # noqa: F401
    from envs.webshop.env import WebShopEnv

    first = WebShopEnv(num_products=n)
    per_env = max(1, episodes // 10)
    run_episodes(first, per_env * count, 0.1, 7)  # warm the shared caches as much as the pool will
    gc.collect()
    one = rss_mb()
    pool = [first] + [WebShopEnv(num_products=n) for _ in range(count - 1)]
    for i, e in enumerate(pool):
        run_episodes(e, per_env, 0.1, 100 + i)
    gc.collect()
    many = rss_mb()
    return {"num_products": n, "instances": count, "rss_one_mb": one, "rss_many_mb": many, "ratio": many / one}


def child(args) -> None:
    logging.basicConfig(level=logging.WARNING)
    if args.many:
        res = many_envs(args.one, args.many, args.episodes)
    else:
        res = one_size(args.one, args.queries, args.episodes, args.baseline_max, args.bm25s_max)
    print(json.dumps(res))


def run_child(extra: list[str], cache: str) -> dict:
    env = {**os.environ, "AGENTSIM_CACHE": cache, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, __file__, *extra], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"bench child {extra} failed:\n{p.stderr[-4000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def table(results: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title="WebShop benchmark (synthetic catalog, tantivy BM25)")
    for col in (
        "products",
        "generate s",
        "index build s",
        "search p50 ms",
        "search p99 ms",
        "bm25s p50 ms",
        "rank_bm25 p50 ms",
        "rank_bm25 / ours",
        "env steps/s",
        "expert success (test)",
        "peak RSS MB",
    ):
        t.add_column(col, justify="right")
    for r in results["sizes"]:
        f = lambda v, fmt="{:.2f}": "—" if v is None else fmt.format(v)  # noqa: E731
        t.add_row(
            f"{r['num_products']:,}",
            f(r["generate_s"]),
            f(r["index_build_s"]),
            f(r["search"]["p50_ms"]),
            f(r["search"]["p99_ms"]),
            f(r.get("bm25s_search", {}).get("p50_ms")),
            f(r.get("rank_bm25_search", {}).get("p50_ms")),
            f(r.get("rank_bm25_p50_ratio"), "{:.0f}x"),
            f(r["env"]["steps_per_s"], "{:,.0f}"),
            f(r["env"]["expert_success_test"], "{:.1%}"),
            f(r["peak_rss_mb"], "{:,.0f}"),
        )
    Console(width=200).print(t)
    m = results.get("many_envs")
    if m:
        Console().print(
            f"{m['instances']} envs vs 1 ({m['num_products']:,} products): RSS {m['rss_many_mb']:.0f} MB "
            f"vs {m['rss_one_mb']:.0f} MB = {m['ratio']:.3f}x"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000", help="comma-separated catalog sizes")
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--episodes", type=int, default=200, help="scripted episodes per mode")
    ap.add_argument("--baseline-max", type=int, default=100_000, help="largest size to run rank_bm25 on")
    ap.add_argument("--bm25s-max", type=int, default=100_000, help="largest size to also build bm25s for")
    ap.add_argument("--instances", type=int, default=64)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--many", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        return child(args)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    results: dict = {"machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]}, "sizes": []}
    with tempfile.TemporaryDirectory(prefix="webshop-bench-") as cache:
        for n in sizes:
            print(f"benchmarking {n:,} products ...", file=sys.stderr)
            results["sizes"].append(
                run_child(
                    [
                        "--one",
                        str(n),
                        "--queries",
                        str(args.queries),
                        "--episodes",
                        str(args.episodes),
                        "--baseline-max",
                        str(args.baseline_max),
                        "--bm25s-max",
                        str(args.bm25s_max),
                    ],
                    cache,
                )
            )
        if args.instances > 1:
            n = min(sizes)
            print(f"{args.instances} env instances vs 1 ({n:,} products) ...", file=sys.stderr)
            results["many_envs"] = run_child(
                ["--one", str(n), "--many", str(args.instances), "--episodes", "50"], cache
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    previous = json.loads(args.out.read_text()) if args.out.exists() else {}
    merged = {r["num_products"]: r for r in previous.get("sizes", [])}
    merged.update({r["num_products"]: r for r in results["sizes"]})
    results["sizes"] = [merged[k] for k in sorted(merged)]
    results.setdefault("many_envs", previous.get("many_envs"))
    args.out.write_text(json.dumps(results, indent=2))
    table(results)
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
