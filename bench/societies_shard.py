"""Sharding rule societies over Ray actors (`societies.sharding`): what a shard costs, and a cluster projection.

Setup as bench/societies_scale.py: diffusion with independent cascade (keyed edge trials) on
G(n, m), mean degree 6, p 0.25, 0.1% of agents as seeds, 10 rounds; for contrast, DeGroot opinions
on the same graph (every agent updates every round, so every boundary opinion crosses the cut).
Per size, in its own process: the unsharded run (the env with the keyed rule), then 1, 2 and 4
shards on a local Ray, each checked for exactly the same metrics. Measured: partition time,
per-round wall time at the driver (the barrier included), per-shard compute time (inside the
actor), bytes exchanged per round, edge cut against a random split, peak RSS per actor. Also the
edge cut of the partitioners (ours; random; METIS when pymetis is installed) at 2, 4, 8 shards.

From the 1M-agent measurements the script projects a 1M- and a 10M-agent run on a cluster of N
machines (assumptions in `ASSUMPTIONS`, written to the JSON and docs/societies.md).

    python bench/societies_shard.py             # prints the tables, writes bench/results/societies_shard.json
    python bench/societies_shard.py --sizes 100000
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
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "societies_shard.json"
ROUNDS = 10
DEGREE = 6.0
P = 0.25
SEED_SHARE = 0.001
SHARDS = (1, 2, 4)
CUT_SHARDS = (2, 4, 8, 16, 64)
ASSUMPTIONS = {
    "network_gbit_s": 10.0,  # per machine NIC
    "network_efficiency": 0.5,  # of line rate reached by Ray object transfers (serialisation, TCP)
    "barrier_s": 0.002,  # per round: the driver's round trip on a LAN (one shard measured 2.2-2.4 ms here, locally)
    "per_shard_call_s": 0.0005,  # per round and shard: the driver submits a call and reads its stats, one by one
    "core": "one core per shard, as fast as one core of this machine (numpy is single-threaded here)",
    "duplex": "a NIC sends and receives at once: a machine's network time is its larger direction",
    "cut": "the edge cut our partitioner measured on the 1M graph for N shards (one shard per machine)",
}
log = logging.getLogger("bench.societies_shard")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def unsharded(env: Any, rule: Any) -> tuple[list[dict[str, float]], list[float]]:
    """The reference: the env's fast path with the keyed rule; metrics and wall time per round."""
    import numpy as np

    env.start(0)
    rng = np.random.default_rng(1)
    metrics, times = [env.scenario.metrics()], []
    while env.agents:
        t = time.perf_counter()
        env.step_moves(rule.decide(env.scenario, env.scenario.active, rng))
        times.append(time.perf_counter() - t)
        metrics.append(env.scenario.metrics())
    return metrics, times


def row(kind: str, n: int, shards: int | None, metrics_ok: bool | None, times: list[float], rep: Any = None,
        start_s: float | None = None) -> dict[str, Any]:  # fmt: skip
    """One table row; sharded rows carry the engine's report."""
    import numpy as np

    out: dict[str, Any] = {
        "model": kind,
        "agents": n,
        "shards": shards if shards is not None else "unsharded",
        "round_s": round(float(np.mean(times)), 4),
        "rounds_s": round(float(np.sum(times)), 3),
    }
    if rep is None:
        return out
    compute = np.array(rep.compute_s)  # [round, shard]
    cpu = np.array(rep.cpu_s)
    out |= {
        "same_metrics": metrics_ok,
        "start_s": round(start_s or 0.0, 2),
        "partition_s": rep.partition_s,
        "load_s": rep.load_s,
        "shard_compute_s": round(float(compute.max(axis=1).mean()), 4),  # the slowest shard, mean over rounds
        "shard_compute_sum_s": round(float(compute.sum(axis=1).mean()), 4),  # all shards' work per round
        "shard_cpu_sum_s": round(float(cpu.sum(axis=1).mean()), 4),
        "overhead_s": round(float(np.mean(np.array(rep.round_s) - compute.max(axis=1))), 4),  # barrier + transfer
        "driver_metrics_s": round(float(np.mean(rep.metrics_s)), 4),
        "bytes_per_round": int(np.mean(rep.bytes)),
        "bytes_max_round": int(np.max(rep.bytes)),
        "gather_bytes_per_round": int(np.mean(rep.gather_bytes)),
        "edge_cut": rep.edge_cut,
        "random_cut": rep.random_cut,
        "halo": sum(rep.halo),
        "actor_base_mb": max(rep.base_rss_mb),
        "actor_peak_mb": max(rep.peak_rss_mb),
    }
    return out


def one(n: int) -> dict[str, Any]:
    """All measurements for one size (in this process)."""
    import ray

    from societies.config import SocietyRunConfig, build
    from societies.env import SocietyEnv
    from societies.graphs import from_networkx
    from societies.partition import edge_cut, metis_part, partition_graph
    from societies.scenarios.diffusion import DiffusionScenario
    from societies.scenarios.opinion import DeGroot, OpinionScenario
    from societies.sharding import ShardEngine

    base = peak_rss_mb()
    load_before = os.getloadavg()
    cfg = SocietyRunConfig(
        scenario="diffusion", agents=n, rounds=ROUNDS, seed=0, out="", keyed=True,
        diffusion={"p": P, "seeds": max(1, int(n * SEED_SHARE))}, graph={"kind": "erdos_renyi", "degree": DEGREE},
    )  # fmt: skip
    t = time.perf_counter()
    env, rule = build(cfg)
    build_s = time.perf_counter() - t
    graph = env.scenario.graph  # type: ignore[attr-defined]
    seeds = cfg.diffusion.seeds

    def diffusion_env() -> SocietyEnv:
        return SocietyEnv(DiffusionScenario(graph, n_seeds=seeds), ROUNDS)

    def opinion_env() -> SocietyEnv:
        return SocietyEnv(OpinionScenario(graph), ROUNDS)

    rows = []
    ref_metrics, times = unsharded(diffusion_env(), rule)
    rows.append(row("diffusion", n, None, None, times))
    op_metrics, op_times = unsharded(opinion_env(), DeGroot())
    rows.append(row("degroot", n, None, None, op_times))
    driver_mb = peak_rss_mb()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    try:
        for shards in SHARDS:
            for kind, make, r, ref in (
                ("diffusion", diffusion_env, rule, ref_metrics),
                ("degroot", opinion_env, DeGroot(), op_metrics),
            ):
                t = time.perf_counter()
                with ShardEngine(shards, "ray") as engine:
                    start_s = time.perf_counter() - t
                    res = engine.run(make(), r, 0)
                s = res.series
                got = [{k: v[i] for k, v in s.series.items()} for i in range(len(s.rounds))]
                rows.append(row(kind, n, shards, got == ref, res.report.round_s, res.report, start_s))
                log.info("%s", rows[-1])
    finally:
        ray.shutdown()
    cuts: list[dict[str, Any]] = []
    graphs = {"erdos_renyi": graph}
    if n <= 200_000:  # networkx's generator takes minutes at 1M
        import networkx as nx

        graphs["watts_strogatz"] = from_networkx(nx.connected_watts_strogatz_graph(n, 6, 0.1, seed=1))
    for gname, g in graphs.items():
        for shards in CUT_SHARDS:
            p = partition_graph(g, shards)
            entry: dict[str, Any] = {
                "graph": gname, "agents": n, "shards": shards, "random": round(p.random_cut, 4),
                "ours": round(p.edge_cut, 4), "ours_s": round(p.seconds, 2),
            }  # fmt: skip
            try:
                t = time.perf_counter()
                part = metis_part(g, shards)
                entry |= {"metis": round(edge_cut(g, part), 4), "metis_s": round(time.perf_counter() - t, 2)}
            except ValueError:
                entry["metis"] = None
            cuts.append(entry)
            log.info("%s", entry)
    return {
        "agents": n,
        "edges": graph.n_edges,
        "graph_build_s": round(build_s, 2),
        "driver_base_mb": round(base, 1),
        "driver_after_unsharded_mb": round(driver_mb, 1),
        "adopters": ref_metrics[-1]["size"],
        "load_average": [round(x, 2) for x in (*load_before, *os.getloadavg())],  # 1/5/15 min, before and after
        "rows": rows,
        "cuts": cuts,
    }


def project(size: dict[str, Any]) -> list[dict[str, Any]]:
    """Per-round time and memory of the same workloads on N machines, from the measured per-shard cost.

    compute: the 1-shard compute per round (process CPU time: this machine is shared, so wall time
    is inflated by other work), scaled to the agents per machine (n / N);
    network: a machine sends (and, at the same time, receives) its share of the boundary bytes,
    which scale with the edge cut measured for N shards;
    gather and driver metrics (opinion only): every opinion crosses the driver's NIC, and the
    driver computes the global metrics (measured at the basis size, scaled linearly);
    barrier: one driver round trip per round, plus the driver's per-shard call cost. Nothing
    overlaps (a conservative sum). `shard_round_s` leaves out the opinion metrics (gather and
    driver): what the sharded dynamics cost, and what a run that measures every k rounds approaches."""
    cuts = {c["shards"]: c["ours"] for c in size["cuts"] if c["graph"] == "erdos_renyi"}
    cut_s = {c["shards"]: c["ours_s"] for c in size["cuts"] if c["graph"] == "erdos_renyi"}
    bw = ASSUMPTIONS["network_gbit_s"] * 1e9 / 8 * ASSUMPTIONS["network_efficiency"]
    out = []
    for kind in ("diffusion", "degroot"):
        rows = [r for r in size["rows"] if r["model"] == kind and r["shards"] != "unsharded"]
        one_shard = next(r for r in rows if r["shards"] == 1)
        four = next(r for r in rows if r["shards"] == 4)
        bytes_per_cut = four["bytes_per_round"] / four["edge_cut"]  # boundary bytes per unit of cut, this workload
        gather_per_agent = four["gather_bytes_per_round"] / size["agents"]
        metrics_per_agent = min(r["driver_metrics_s"] for r in rows) / size["agents"]  # least contended
        mem_per_agent = (one_shard["actor_peak_mb"] - one_shard["actor_base_mb"]) / size["agents"]
        for agents in (1_000_000, 10_000_000):
            scale = agents / size["agents"]
            for machines in (1, *CUT_SHARDS):
                cut = cuts[machines] if machines > 1 else 0.0
                total_bytes = bytes_per_cut * cut * scale
                compute = one_shard["shard_cpu_sum_s"] * scale / machines  # CPU time: wall is contended here
                network = total_bytes / machines / bw
                gather = gather_per_agent * agents / bw if machines > 1 else 0.0  # every opinion to the driver
                driver = metrics_per_agent * agents
                barrier = ASSUMPTIONS["barrier_s"] + ASSUMPTIONS["per_shard_call_s"] * machines if machines > 1 else 0.0
                total = compute + network + gather + driver + barrier
                shard_round = compute + network + barrier
                out.append(
                    {
                        "model": kind, "agents": agents, "machines": machines, "edge_cut": round(cut, 3),
                        "compute_s": round(compute, 4), "network_s": round(network, 4),
                        "gather_s": round(gather, 4), "driver_metrics_s": round(driver, 4), "barrier_s": barrier,
                        "round_s": round(total, 4), "shard_round_s": round(shard_round, 4),
                        "rounds_10_s": round(10 * total, 2), "bytes_per_round": int(total_bytes),
                        "shard_mb": round(one_shard["actor_base_mb"] + mem_per_agent * agents / machines, 1),
                        # once, on the driver: build the graph, partition it, ship the blocks (linear in n)
                        "setup_s": round((size["graph_build_s"] + cut_s.get(machines, 0.0) + four["load_s"]) * scale, 1),
                    }
                )  # fmt: skip
    return out


def table(rows: list[dict[str, Any]], cols: list[str]) -> str:
    lines = [" | ".join(cols), " | ".join("---" for _ in cols)]
    lines += [" | ".join(str(r.get(c, "")) for c in cols) for r in rows]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--reproject", action="store_true", help="recompute the projection from the saved measurements")
    args = ap.parse_args()
    if args.one:
        logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
        print(json.dumps(one(args.one)))
        return
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    sizes = json.loads(RESULTS.read_text())["sizes"] if args.reproject else []
    for n in [] if args.reproject else args.sizes:
        done = subprocess.run(
            [sys.executable, __file__, "--one", str(n)],
            capture_output=True, text=True, check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
        sizes.append(json.loads(done.stdout.strip().splitlines()[-1]))
        log.info("%d agents done", n)
    rows = [r for s in sizes for r in s["rows"]]
    cols = ["model", "agents", "shards", "same_metrics", "partition_s", "round_s", "shard_compute_s",
            "shard_compute_sum_s", "overhead_s", "driver_metrics_s", "bytes_per_round", "gather_bytes_per_round", "edge_cut",
            "random_cut", "actor_peak_mb"]  # fmt: skip
    log.info("\n%s", table(rows, cols))
    cuts = [c for s in sizes for c in s["cuts"]]
    log.info("\n%s", table(cuts, ["graph", "agents", "shards", "random", "ours", "ours_s", "metis", "metis_s"]))
    basis = max(sizes, key=lambda s: s["agents"])
    projection = project(basis)
    pcols = ["model", "agents", "machines", "edge_cut", "compute_s", "network_s", "gather_s", "driver_metrics_s", "barrier_s",
             "round_s", "shard_round_s", "rounds_10_s", "bytes_per_round", "shard_mb", "setup_s"]  # fmt: skip
    log.info("\n%s", table(projection, pcols))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "bench": "societies_shard",
                "scenario": f"diffusion: independent cascade (keyed edge trials), G(n, m) mean degree {DEGREE}, "
                f"p {P}, {SEED_SHARE:.1%} seeds, {ROUNDS} rounds; degroot: the same graph, {ROUNDS} rounds",
                "machine": {
                    "cpus": os.cpu_count(),
                    "python": platform.python_version(),
                    "platform": platform.platform(),
                },
                "ray": "local, num_cpus=2: 4 shards share 2 cores, so sharding cannot be faster here",
                "when": json.loads(RESULTS.read_text())["when"]
                if args.reproject
                else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "sizes": sizes,
                "projection": {"basis_agents": basis["agents"], "assumptions": ASSUMPTIONS, "rows": projection},
            },
            indent=1,
        )
    )
    log.info("wrote %s", RESULTS)


if __name__ == "__main__":
    main()
