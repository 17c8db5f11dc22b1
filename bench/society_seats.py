"""Seats that choose: LLM seats in the opinion scenario writing their opinion (free) vs ranking a listed set (ranked).

One seeded opinion society per seed: `--agents` agents on a Watts-Strogatz graph (degree 6, so each
observation lists the seat's neighbours and their opinions), Deffuant threshold 0.2, mu 0.5, `--rounds`
rounds, `--seats` seats played by the embedded model (`brain=local`: Gemma 3 270M GGUF, the shipped
adapter, temperature 0.7 sampled with per-step seeds, one KV slot per seat, call cache off). Three rows:

- `free`: `seat_actions=free`, today's seats: the brain ranks `keep`, `compromise`, `opinion[...]` and,
  when the template wins, writes the number itself;
- `ranked`: `seat_actions=ranked` (the default): the scenario's `choices` (`opinion[0.0]` .. `opinion[1.0]`)
  are listed beside `keep` and `compromise`, and the brain ranks all thirteen by mean log-likelihood;
- `deffuant`: the same seats played by the rule (the control: what bounded confidence does there).

Per seat-step: invalid (the reply did not parse or the env refused it), example (an opinion equal to one
the instruction shows, 0.35 or 0.8), moved (the opinion changed), toward / away (the new opinion is
closer to / farther from the mean of the neighbours listed in the observation than the old one), and
per run the correlation of the change with the gap to that mean (NaN when nothing moved). Every number
is a mean over seeds with a 95% t-interval (`bench.stats.ci95`).

    python bench/society_seats.py                  # prints the table, writes bench/results/society_seats.json
    python bench/society_seats.py --seeds 2 --rounds 4 --seats 3
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import platform
import re
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.stats import ci95  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "society_seats.json"
EXAMPLES = (0.35, 0.8)  # the values the opinion instruction shows ("such as opinion[0.35] or opinion[0.8]")
_VALUE = re.compile(r"^opinion\[\s*([0-9.]+)\s*\]$")
MODES = ("free", "ranked", "deffuant")
THREADS = 1  # llama.cpp threads: on a loaded 2-core machine two threads wait on each other at every barrier
COLUMNS = ("invalid", "example", "moved", "toward", "away", "corr")


def config(out: Path, mode: str, seed: int, agents: int, seats: int, rounds: int) -> Any:
    from agents.config import validate_config
    from societies.config import SocietyRunConfig

    brain: dict[str, Any] = (
        {"name": "rule"}
        if mode == "deffuant"
        else {"name": "local", "kv_slots": seats, "n_ctx": 1024 * seats, "n_threads": THREADS}
    )
    return validate_config(
        SocietyRunConfig,
        {
            "out": str(out),
            "scenario": "opinion",
            "agents": agents,
            "rounds": rounds,
            "seed": seed,
            "graph": {"kind": "watts_strogatz", "degree": 6},
            "opinion": {"threshold": 0.2, "mu": 0.5},
            "plots": False,
            "trajectory_agents": 0,
            "llm_agents": seats,
            "brain": brain,
            "cache": "off",
            "seat_actions": "free" if mode == "free" else "ranked",
            "log_level": "WARNING",
        },
    )


def play(mode: str, seed: int, agents: int, seats: int, rounds: int) -> dict[str, Any]:
    """One run, round by round; every seat-step as (action, error, old, new, neighbours' mean, partner's)."""
    from societies.run import SocietyRun
    from societies.scenarios.opinion import OpinionScenario
    from societies.seats import choose_seats

    with tempfile.TemporaryDirectory() as tmp:
        cfg = config(Path(tmp), mode, seed, agents, seats, rounds)
        run = SocietyRun(cfg)
        sc = run.sc
        assert isinstance(sc, OpinionScenario)
        idx = choose_seats(sc.n, cfg.llm_fraction, cfg.llm_agents, cfg.seed)
        steps: list[dict[str, Any]] = []
        t0, cpu0 = time.perf_counter(), time.process_time()
        try:
            while not run.done:
                x0 = sc.x.copy()
                nb_mean = {i: float(x0[sc.graph.neighbors(i)].mean()) for i in idx.tolist()}
                partner = sc.partner.copy()
                result = run.play_round()
                for i in idx.tolist():
                    pending = run.recorder.tracks[i].pending if i in run.recorder.tracks else None
                    step: dict[str, Any] = {
                        "old": float(x0[i]),
                        "new": float(sc.x[i]),
                        "neighbours": nb_mean[i],
                        "partner": float(x0[partner[i]]) if partner[i] >= 0 else None,
                    }
                    if mode != "deffuant":
                        assert pending is not None
                        step["action"] = pending["action"]
                        step["error"] = pending["info"].get("error") or pending["fields"].get("parse_error")
                    else:
                        code = dict(zip(result.moved.idx.tolist(), result.moved.code.tolist())).get(i, 0)
                        step["action"] = sc.move_text(i, code, float("nan"))
                        step["error"] = None
                    steps.append(step)
                print(
                    f"  {mode} seed {seed} round {result.round}: {[s['action'] for s in steps[-len(idx) :]]} "
                    f"({time.perf_counter() - t0:.0f} s)",
                    flush=True,
                )
            decide_s = run.brain_s
            run.finish(time.perf_counter() - t0)
        finally:
            run.close()
    cpu_s = round(time.process_time() - cpu0, 1)  # this process's CPU (a worker may play several runs)
    return {"seed": seed, "seats": idx.tolist(), "steps": steps, "decide_s": round(decide_s, 1), "cpu_s": cpu_s}


def measure(steps: list[dict[str, Any]]) -> dict[str, float]:
    """One run's rates over its seat-steps."""
    n = len(steps)
    old = np.array([s["old"] for s in steps])
    new = np.array([s["new"] for s in steps])
    nb = np.array([s["neighbours"] for s in steps])
    values = [_VALUE.match(s["action"] or "") for s in steps]
    example = sum(1 for m in values if m is not None and any(abs(float(m.group(1)) - e) < 1e-9 for e in EXAMPLES))
    delta, gap = new - old, nb - old
    moved = np.abs(delta) > 1e-12
    closer = np.abs(new - nb) < np.abs(old - nb) - 1e-12
    farther = np.abs(new - nb) > np.abs(old - nb) + 1e-12
    corr = float(np.corrcoef(delta, gap)[0, 1]) if delta.std() > 0 and gap.std() > 0 else float("nan")
    return {
        "invalid": sum(1 for s in steps if s["action"] is None or s["error"]) / n,
        "example": example / n,
        "moved": float(moved.mean()),
        "toward": float(closer.mean()),
        "away": float(farther.mean()),
        "corr": corr,
    }


def action_mix(steps: list[dict[str, Any]]) -> dict[str, int]:
    """How often each kind of reply came: keep, compromise, a listed or written opinion, unparsable."""
    mix: dict[str, int] = {}
    for s in steps:
        a = s["action"]
        kind = "unparsable" if a is None else ("opinion[...]" if a.startswith("opinion[") else a)
        mix[kind] = mix.get(kind, 0) + 1
    return mix


def fmt(mean: float, half: float) -> str:
    if math.isnan(mean):
        return "n/a"
    return f"{mean:.2f}" if math.isnan(half) else f"{mean:.2f} ± {half:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--agents", type=int, default=20)
    ap.add_argument("--seats", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=4, help="runs in parallel, one process each (one llama.cpp thread)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    seeds = list(range(args.seeds))
    t0 = time.perf_counter()
    runs: dict[str, list[dict[str, Any]]] = {m: [] for m in MODES}
    jobs = [(mode, seed) for seed in seeds for mode in MODES]
    with ProcessPoolExecutor(max_workers=args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(play, m, s, args.agents, args.seats, args.rounds): (m, s) for m, s in jobs}
        for fut in as_completed(futures):
            mode, seed = futures[fut]
            r = fut.result()
            r["metrics"] = measure(r["steps"])
            r["mix"] = action_mix(r["steps"])
            runs[mode].append(r)
            print(f"seed {seed} {mode}: {r['mix']} decide {r['decide_s']} s, CPU {r['cpu_s']} s", flush=True)
            report(args, seeds, runs, time.perf_counter() - t0, final=len(jobs) == sum(map(len, runs.values())))


def report(
    args: argparse.Namespace, seeds: list[int], runs: dict[str, list[dict[str, Any]]], wall: float, final: bool
) -> None:
    """The table over the runs done so far, printed at the end, and the JSON after every run (a cut-short bench keeps
    what it measured; `complete` says whether every run finished)."""
    rows = []
    for mode in MODES:
        done = sorted(runs[mode], key=lambda r: r["seed"])
        row: dict[str, Any] = {
            "mode": mode,
            "seeds": [r["seed"] for r in done],
            "seat_steps": sum(len(r["steps"]) for r in done),
        }
        for c in COLUMNS:
            xs = [r["metrics"][c] for r in done if not math.isnan(r["metrics"][c])]
            row[c] = ci95(xs) if xs else (float("nan"), float("nan"))
        mix: dict[str, int] = {}
        for r in done:
            for k, v in r["mix"].items():
                mix[k] = mix.get(k, 0) + v
        row["mix"] = mix
        row["decide_s"] = round(sum(r["decide_s"] for r in done), 1)
        rows.append(row)
    cpu = sum(r["cpu_s"] for m in MODES for r in runs[m])
    if final:
        head = "| seats | seat-steps | invalid | example copied | moved | toward nbrs | away from nbrs | corr(Δ, gap) |"
        print(
            f"\n{args.agents} agents, {args.seats} seats, {args.rounds} rounds, seeds {seeds} (mean ± 95% CI over seeds)"
        )
        print(head)
        print("|---" * (head.count("|") - 1) + "|")
        for row in rows:
            cells = " | ".join(fmt(*row[c]) for c in COLUMNS)
            print(f"| {row['mode']} | {row['seat_steps']} | {cells} |")
        for row in rows:
            print(f"{row['mode']}: replies {row['mix']}, decision time {row['decide_s']} s")
        print(f"wall {wall:.0f} s, CPU {cpu:.0f} s (all runs)")
    summary = {
        "bench": "society_seats",
        "complete": final,
        "setup": {
            "scenario": "opinion",
            "graph": "watts_strogatz degree 6",
            "threshold": 0.2,
            "mu": 0.5,
            "agents": args.agents,
            "seats": args.seats,
            "rounds": args.rounds,
            "seeds": seeds,
            "brain": "local (Gemma 3 270M, shipped adapter, temperature 0.7, kv_slots = seats, 1 thread)",
            "examples": list(EXAMPLES),
        },
        "rows": [
            {**{k: v for k, v in row.items() if k not in COLUMNS}, **{c: list(row[c]) for c in COLUMNS}} for row in rows
        ],
        "runs": {
            m: [{k: r[k] for k in ("seed", "seats", "decide_s", "cpu_s", "metrics", "mix")} for r in runs[m]]
            for m in MODES
        },
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "load_avg": os.getloadavg()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=1, default=float))
    if final:
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
