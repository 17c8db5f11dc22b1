"""Dataset trials in parallel: the published fixtures x `--trials`, with `concurrency=1` against `concurrency=N`.

Each setting is one `python -m agents.run env=coding env.kwargs.task=<fixtures> brain=scripted trials=K
concurrency=C` (the scripted expert runs each task's oracle, then the task's verifier grades), timed end to end
as a user sees it, in the same invocation of this script. Prints a table (wall time, trials, passes, the ratio to
concurrency 1) and writes `bench/results/coding_trials.json`. Each trial has its own bwrap sandbox; the trials'
env steps run in worker threads (`envs.capabilities.steps_block`), so their sandboxed processes overlap.

    python bench/coding_trials.py [--trials 1] [--concurrency 1 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "coding" / "fixtures" / "published"
OUT = ROOT / "bench" / "results" / "coding_trials.json"


def run(trials: int, concurrency: int) -> dict:
    """One timed run; its per-task report."""
    with tempfile.TemporaryDirectory(prefix="bench-trials-") as tmp:
        cmd = [
            sys.executable,
            "-m",
            "agents.run",
            "env=coding",
            f"env.kwargs.task={FIXTURES}",
            "env.kwargs.approximate=true",
            "brain=scripted",
            f"trials={trials}",
            f"concurrency={concurrency}",
            f"out={tmp}/run",
            "progress=false",
        ]
        t0 = time.perf_counter()
        res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if res.returncode != 0:
            raise SystemExit(f"run failed (exit {res.returncode}):\n{res.stdout[-2000:]}{res.stderr[-2000:]}")
        report = json.loads(Path(tmp, "run", "tasks.json").read_text())
        engine_s = json.loads(Path(tmp, "run", "summary.json").read_text())["summary"]["wall_time_s"]
    tasks = report["tasks"]
    return {
        "concurrency": concurrency,
        "wall_s": round(wall, 2),  # the whole command: imports, config, the dataset's check, the trials
        "episodes_wall_s": round(engine_s, 2),  # the engine's: first trial started to last finished
        "trials": sum(t["trials"] for t in tasks),
        "passed": sum(t["passed"] for t in tasks),
        "errors": {k: sum(t["errors"][k] for t in tasks) for k in tasks[0]["errors"]},
        "trial_time_mean_s": round(sum(t["time_total_s"] for t in tasks) / sum(t["trials"] for t in tasks), 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--trials", type=int, default=1)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 3])
    args = ap.parse_args()
    load_start = round(os.getloadavg()[0], 1)  # a shared machine: the load says how much CPU the runs had
    rows = [run(args.trials, c) for c in args.concurrency]
    base, base_eps = rows[0]["wall_s"], rows[0]["episodes_wall_s"]
    for r in rows:
        r["speedup_vs_first"] = round(base / r["wall_s"], 2)
        r["episodes_speedup_vs_first"] = round(base_eps / r["episodes_wall_s"], 2)
    tasks = len([p for p in FIXTURES.iterdir() if p.is_dir()])
    table = Table(title=f"{tasks} published fixtures x {args.trials} trials, scripted oracle")
    for col in ("concurrency", "wall s", "trials wall s", "trials", "passed", "mean trial s", "speed-up (trials)"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(
            str(r["concurrency"]),
            f"{r['wall_s']:.1f}",
            f"{r['episodes_wall_s']:.1f}",
            str(r["trials"]),
            str(r["passed"]),
            f"{r['trial_time_mean_s']:.1f}",
            f"{r['speedup_vs_first']:.2f}x ({r['episodes_speedup_vs_first']:.2f}x)",
        )
    Console().print(table)
    OUT.write_text(
        json.dumps(
            {
                "bench": "coding_trials",
                "tasks": tasks,
                "trials_per_task": args.trials,
                "cpus": os.cpu_count(),
                "load_avg_1m_at_start": load_start,
                "load_avg_1m_at_end": round(os.getloadavg()[0], 1),
                "runs": rows,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
