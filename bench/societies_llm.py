"""LLM agents in a society: agent-steps/s of brain seats, one at a time vs batched async, in one run.

Every seat is an `agents.core.agent.Agent` on the embedded model (`brain=local`, Gemma 3 270M
GGUF via llama.cpp, ranking the listed actions). The same seeded society is played once per
mode, in this one process, with the call cache off (so every mode pays for every call):

- `sequential`: `max_concurrency=1`, the seats decide one after another on the sync path;
- `async x8, pool 1`: the seats' calls gathered with asyncio under a semaphore of 8, one model
  instance (its llama.cpp context is locked: calls still run one at a time);
- `async x8, pool 2`: the same, two model instances with one thread each, so two seats decode at once;
- `replay`: the async run replayed from its call cache (`cache=replay`): no model call at all.

Modes are interleaved and repeated (`--repeats`, order rotated each time) on a shared machine; a
row is the repeat with the least decision time, and every repeat's time is in the JSON.
Only the seats' decision time counts (`decide_s`: prompts, brain calls, parsing), not the model
load (a warm-up load and decode comes first). `same actions` compares each mode's moves with the sequential run's.

    python bench/societies_llm.py                 # prints the table, writes bench/results/societies_llm.json
    python bench/societies_llm.py --agents 6 --rounds 2 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import shutil
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "societies_llm.json"
log = logging.getLogger("bench.societies_llm")


def play(out: Path, scenario: str, agents: int, rounds: int, **kw: Any) -> dict[str, Any]:
    from agents.config import validate_config
    from societies.config import SocietyRunConfig
    from societies.run import run_society

    cfg = validate_config(
        SocietyRunConfig,
        {
            "out": str(out),
            "scenario": scenario,
            "agents": agents,
            "rounds": rounds,
            "seed": 0,
            "plots": False,
            "trajectory_agents": 0,
            "brain": {"name": "local", "n_ctx": 2048, "temperature": 0.0, **kw.pop("brain", {})},
            "cooperation": {"match_length": 4},
            **kw,
        },
    )
    t0 = time.perf_counter()
    s = run_society(cfg)
    s["total_s"] = time.perf_counter() - t0
    with sqlite3.connect(out / "events.sqlite") as db:
        s["moves"] = db.execute("SELECT round, agent, action, value FROM events ORDER BY round, agent").fetchall()
    return s


def warm_up() -> None:
    """Load the model once and decode once, so the first timed mode does not pay for reading the file."""
    from agents.brains.local import LocalBrain

    brain = LocalBrain(n_ctx=2048)
    brain.choose([{"role": "user", "content": "Say yes or no."}], ["yes", "no"], prefix="Action: ")
    del brain


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--scenarios", nargs="+", default=["cooperation", "opinion"])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    cores = os.cpu_count() or 1
    modes: list[tuple[str, dict[str, Any]]] = [
        ("sequential", {"max_concurrency": 1, "cache": "off"}),
        ("async x8, pool 1", {"max_concurrency": 8, "cache": "off"}),
        ("async x8, pool 2", {"max_concurrency": 8, "brain_pool": 2, "cache": "off"}),
    ]
    warm_up()
    load_before = os.getloadavg()
    rows = []
    for scenario in args.scenarios:
        tmp = Path(tempfile.mkdtemp(prefix="societies_llm_"))
        try:
            runs: dict[str, list[dict[str, Any]]] = {label: [] for label, _ in modes}
            for rep in range(args.repeats):  # modes interleaved, order rotated: a busy neighbour hits all of them
                for label, kw in modes[rep % len(modes) :] + modes[: rep % len(modes)]:
                    name = f"{label}-{rep}".replace(" ", "_").replace(",", "")
                    runs[label].append(play(tmp / name, scenario, args.agents, args.rounds, **kw))
            base = best(runs["sequential"])
            for label, _ in modes:
                rows.append(row(scenario, label, best(runs[label]), base, runs[label], runs["sequential"]))
            # replay: a cached run, then the same run from its cache alone
            cached = tmp / "cached"
            play(cached, scenario, args.agents, args.rounds, max_concurrency=8, brain_pool=2)
            s = play(cached, scenario, args.agents, args.rounds, max_concurrency=8, brain_pool=2, cache="replay")
            rows.append(row(scenario, "replay from cache", s, base, [s], runs["sequential"]))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print_table(rows)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "machine": {"cpus": cores, "python": platform.python_version(), "platform": platform.platform()},
                "model": "gemma3-270m (GGUF, llama.cpp, choose = rank the listed actions)",
                "agents": args.agents,
                "rounds": args.rounds,
                "repeats": args.repeats,
                "load_average_before_after": [load_before, os.getloadavg()],
                "rows": rows,
            },
            indent=1,
        )
    )
    print(f"\nwrote {RESULTS.relative_to(ROOT)}")


def best(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The repeat with the least decision time (the one a busy machine disturbed least)."""
    return min(runs, key=lambda s: s["brain"]["decide_s"])


def median(runs: list[dict[str, Any]]) -> float:
    return float(statistics.median(r["brain"]["decide_s"] for r in runs))


def row(
    scenario: str, label: str, s: dict[str, Any], base: dict[str, Any], runs: list[dict], base_runs: list[dict]
) -> dict[str, Any]:
    b, bb = s["brain"], base["brain"]
    same = sum(x == y for x, y in zip(s["moves"], base["moves"]))
    return {
        "scenario": scenario,
        "mode": label,
        "agent_steps": b["agent_steps"],
        "decide_s": b["decide_s"],
        "agent_steps_per_s": b["agent_steps_per_s"],
        "speedup": round(bb["decide_s"] / b["decide_s"], 2) if b["decide_s"] else None,
        "tokens_per_s": round((b["tokens_in"] + b["tokens_out"]) / b["decide_s"], 1) if b["decide_s"] else None,
        "brain_calls": b["cache"]["brain_calls"],
        "same_actions": f"{same}/{len(base['moves'])}",
        "decide_s_all_repeats": [r["brain"]["decide_s"] for r in runs],
        "speedup_of_medians": round(median(base_runs) / median(runs), 2) if base_runs else None,
        "final_metrics": s["final_metrics"],
    }


def print_table(rows: list[dict[str, Any]]) -> None:
    head = (
        f"{'scenario':<12} {'mode':<20} {'steps':>5} {'decide s':>9} {'steps/s':>8} {'speed-up':>8} "
        f"{'(medians)':>9} {'tok/s':>8} {'calls':>5}  same actions"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r['scenario']:<12} {r['mode']:<20} {r['agent_steps']:>5} {r['decide_s']:>9.2f} "
            f"{r['agent_steps_per_s']:>8.1f} {r['speedup']:>7.2f}x {r['speedup_of_medians']:>8.2f}x "
            f"{r['tokens_per_s']:>8.0f} {r['brain_calls']:>5}  "
            f"{r['same_actions']}"
        )


if __name__ == "__main__":
    main()
