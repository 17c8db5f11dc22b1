"""Scale of rule societies: diffusion (independent cascade) with 1k, 10k, 100k (and 1M) agents x 10 rounds.

Sparse activation (only exposed agents decide; persona activity thins them further) plus
vectorised rule brains (`societies/scenarios/<name>/rule.py`): a round costs the frontier's edges, not n. Each size
runs in its own process, so the peak RSS (`ru_maxrss`) is that run's alone. Two measurements per size:

- `core`: env + rule on the fast path (`SocietyEnv.step_moves`), the simulation itself;
- `runner`: the full `societies.run` (SQLite event log, metrics series, 200 agents' trajectories; no plots).

For contrast, `dense`: bounded-confidence opinions with every agent active every round.

Feed rows (`--feed`, merged into the results file): the feed scenario (`societies.scenarios.feed`)
with each recommender, every agent active and deciding every round (`feed:<recommender>` on the
fast path, `feed-runner:<recommender>` through `societies.run`), default feed parameters.

    python bench/societies_scale.py            # prints the table, writes bench/results/societies_scale.json
    python bench/societies_scale.py --sizes 1000 10000
    python bench/societies_scale.py --feed      # only the feed rows, 100k agents
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "societies_scale.json"
ROUNDS = 10
DEGREE = 6.0
P = 0.25  # mean degree 6 x p 0.25 = 1.5 expected new sharers per sharer: the cascade grows for 10 rounds
SEED_SHARE = 0.001  # 0.1% of agents post at round 0
FEED_RECOMMENDERS = ("recency", "popularity", "similarity", "random")
log = logging.getLogger("bench.societies_scale")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def one_feed(kind: str, n: int, activity: float) -> dict:
    """One feed measurement: `feed:<recommender>` (env + rule) or `feed-runner:<recommender>` (societies.run)."""
    import numpy as np

    from societies.config import SocietyRunConfig, build

    base_rss = peak_rss_mb()
    recommender = kind.split(":", 1)[1]
    keys = dict(scenario="feed", agents=n, rounds=ROUNDS, seed=0, activity=activity,
                feed={"recommender": recommender}, graph={"kind": "erdos_renyi", "degree": DEGREE})  # fmt: skip
    if kind.startswith("feed-runner"):
        from societies.run import run_society

        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            s = run_society(SocietyRunConfig(out=tmp, plots=False, **keys))
            wall = time.perf_counter() - t0
        m = s["final_metrics"]
        return {
            "kind": kind, "agents": n, "activity": activity, "rounds": s["rounds_played"], "build_s": s["build_s"],
            "run_s": round(wall - s["build_s"], 3), "largest_cascade": m["cascade_size_max"],
            "modularity": round(m["modularity"], 4), "peak_rss_mb": round(peak_rss_mb(), 1),
            "base_rss_mb": round(base_rss, 1),
        }  # fmt: skip
    t0 = time.perf_counter()
    env, rule = build(SocietyRunConfig(out="", **keys))
    env.start(0)
    t_build = time.perf_counter() - t0
    rng = np.random.default_rng(1)
    decisions = 0
    t1 = time.perf_counter()
    while env.agents:
        moves = rule.decide(env.scenario, env.scenario.active, rng)
        decisions += int(moves.idx.size)
        r = env.step_moves(moves)
    run_s = time.perf_counter() - t1
    sc = env.scenario
    m = sc.metrics()
    return {
        "kind": kind, "agents": n, "activity": activity, "rounds": r.round, "build_s": round(t_build, 3),
        "run_s": round(run_s, 3), "decisions": decisions, "decisions_per_s": round(decisions / max(run_s, 1e-9)),
        "posts": sc.posts.size, "largest_cascade": m["cascade_size_max"], "modularity": round(m["modularity"], 4),
        "peak_rss_mb": round(peak_rss_mb(), 1), "base_rss_mb": round(base_rss, 1),
    }  # fmt: skip


def one(kind: str, n: int, activity: float) -> dict:
    """One measurement in this process (called by the parent through a subprocess)."""
    if kind.startswith("feed"):
        return one_feed(kind, n, activity)
    import numpy as np

    from societies.config import SocietyRunConfig, build

    base_rss = peak_rss_mb()
    seeds = max(1, int(n * SEED_SHARE))
    if kind == "runner":
        from societies.run import run_society

        with tempfile.TemporaryDirectory() as tmp:
            cfg = SocietyRunConfig(
                scenario="diffusion", agents=n, rounds=ROUNDS, seed=0, out=tmp, plots=False, activity=activity,
                diffusion={"p": P, "seeds": seeds}, graph={"kind": "erdos_renyi", "degree": DEGREE},
            )  # fmt: skip
            t0 = time.perf_counter()
            s = run_society(cfg)
            wall = time.perf_counter() - t0
            size_mb = sum(f.stat().st_size for f in Path(tmp).iterdir()) / 2**20
        return {
            "kind": kind, "agents": n, "activity": activity, "rounds": s["rounds_played"], "build_s": s["build_s"],
            "run_s": round(wall - s["build_s"], 3), "adopters": s["final_metrics"]["size"],
            "peak_rss_mb": round(peak_rss_mb(), 1), "base_rss_mb": round(base_rss, 1), "outputs_mb": round(size_mb, 2),
        }  # fmt: skip
    scenario = "diffusion" if kind == "core" else "opinion"
    cfg = SocietyRunConfig(
        scenario=scenario, agents=n, rounds=ROUNDS, seed=0, out="", activity=activity,
        diffusion={"p": P, "seeds": seeds}, graph={"kind": "erdos_renyi" if kind == "core" else "complete", "degree": DEGREE},
    )  # fmt: skip
    t0 = time.perf_counter()
    env, rule = build(cfg)
    env.start(0)
    t_build = time.perf_counter() - t0
    rng = np.random.default_rng(1)
    decisions = 0
    t1 = time.perf_counter()
    while env.agents:
        moves = rule.decide(env.scenario, env.scenario.active, rng)
        decisions += int(moves.idx.size)
        r = env.step_moves(moves)
    run_s = time.perf_counter() - t1
    final = env.scenario.metrics()
    return {
        "kind": kind, "agents": n, "activity": activity, "rounds": r.round, "build_s": round(t_build, 3),
        "run_s": round(run_s, 3), "decisions": decisions, "decisions_per_s": round(decisions / max(run_s, 1e-9)),
        "adopters": final.get("size"), "edges": getattr(env.scenario, "graph", None) and env.scenario.graph.n_edges,
        "peak_rss_mb": round(peak_rss_mb(), 1), "base_rss_mb": round(base_rss, 1),
    }  # fmt: skip


def measure(kind: str, n: int, activity: float) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--one", kind, str(n), str(activity)],
        capture_output=True, text=True, check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(rows: list[dict]) -> str:
    cols = [
        "kind",
        "agents",
        "activity",
        "rounds",
        "build_s",
        "run_s",
        "decisions",
        "decisions_per_s",
        "adopters",
        "posts",
        "largest_cascade",
        "modularity",
        "base_rss_mb",
        "peak_rss_mb",
    ]
    lines = [" | ".join(cols), " | ".join("---" for _ in cols)]
    for r in rows:
        lines.append(" | ".join(str(r.get(c, "")) for c in cols))
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=None, help="agents per row (default 1k-1M; --feed: 100k)")
    ap.add_argument("--feed", action="store_true", help="only the feed rows, merged into the results file")
    ap.add_argument("--one", nargs=3, metavar=("KIND", "N", "ACTIVITY"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        logging.basicConfig(level=logging.WARNING)
        kind, n, act = args.one
        print(json.dumps(one(kind, int(n), float(act))))
        return
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.feed:
        feed_main(args.sizes or [100_000])
        return
    rows = []
    for n in args.sizes or [1_000, 10_000, 100_000, 1_000_000]:
        for kind, activity in (("core", 1.0), ("core", 0.5), ("runner", 1.0), ("dense", 1.0)):
            row = measure(kind, n, activity)
            log.info("%s", row)
            rows.append(row)
    text = table(rows)
    log.info("\n%s", text)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "bench": "societies_scale",
                "scenario": f"diffusion: independent cascade, G(n, m) mean degree {DEGREE}, p {P}, {SEED_SHARE:.1%} seeds, {ROUNDS} rounds",
                "dense": f"opinion: Deffuant on complete mixing, every agent active, {ROUNDS} rounds",
                "machine": {
                    "cpus": os.cpu_count(),
                    "python": platform.python_version(),
                    "platform": platform.platform(),
                },
                "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "rows": rows,
            },
            indent=1,
        )
    )
    log.info("wrote %s", RESULTS)


def feed_main(sizes: list[int]) -> None:
    """Measure the feed rows and put them in the results file in place of earlier feed rows."""
    rows = []
    for n in sizes:
        for kind in [f"feed:{r}" for r in FEED_RECOMMENDERS] + [f"feed-runner:{r}" for r in FEED_RECOMMENDERS]:
            row = measure(kind, n, 1.0)
            log.info("%s", row)
            rows.append(row)
    log.info("\n%s", table(rows))
    data = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"bench": "societies_scale", "rows": []}
    data["rows"] = [r for r in data["rows"] if not str(r["kind"]).startswith("feed")] + rows
    data["feed"] = (
        f"feed: every agent active every round, {ROUNDS} rounds, G(n, m) mean degree {DEGREE} as the follow graph, "
        "default FeedParams (feed 10, window 3, p_repost 0.02, p_like 0.05, p_follow 0.2, p_post 0.02, 5 topics)"
    )
    data["feed_when"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    RESULTS.write_text(json.dumps(data, indent=1))
    log.info("wrote %s", RESULTS)


if __name__ == "__main__":
    main()
