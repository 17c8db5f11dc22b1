"""Coding env bench: reset, one bash step and grading per shipped task, with the scripted expert's success.

Each task runs once with the expert (reset -> its steps -> submit, which grades), beside a plain
`subprocess.run` of `sh -c true` as the floor, in the same run. Prints a table and writes
`bench/results/coding_env.json`.

    python bench/coding_env.py [--tasks N]
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gymnasium as gym  # noqa: E402

import envs  # noqa: E402,F401  (registers agentsim/Coding-v0)
from envs.coding.tasks.loader import shipped_tasks  # noqa: E402

log = logging.getLogger("bench.coding_env")


def ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000


def floor_ms(n: int = 50) -> float:
    """p50 of a plain subprocess: what any sandboxed command costs at the least."""
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run(["sh", "-c", "true"], check=True)
        times.append(ms(t0))
    return statistics.median(times)


def run_task(name: str) -> dict:
    env = gym.make("agentsim/Coding-v0", task=name)
    try:
        t0 = time.perf_counter()
        env.reset(seed=0)
        first_reset = ms(t0)
        t0 = time.perf_counter()
        env.reset(seed=0)
        reset = ms(t0)
        t0 = time.perf_counter()
        env.step("bash[ls]")
        bash = ms(t0)
        env.reset(seed=0)
        steps, reward, grade_ms, done = 0, 0.0, 0.0, False
        while not done and steps < 20:
            action = env.unwrapped.expert_action()
            t0 = time.perf_counter()
            _, reward, term, trunc, info = env.step(action)
            if action.startswith("submit"):
                grade_ms = ms(t0)
            steps += 1
            done = term or trunc
        return {
            "task": name,
            "first_reset_ms": first_reset,
            "reset_ms": reset,
            "bash_step_ms": bash,
            "grade_ms": grade_ms,
            "expert_steps": steps,
            "expert_reward": float(reward),
        }
    finally:
        env.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", type=int, default=0, help="first N shipped tasks (0 = all)")
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "coding_env.json"))
    a = p.parse_args()
    logging.basicConfig(level=logging.WARNING)
    names = sorted(shipped_tasks())
    names = names[: a.tasks] if a.tasks else names
    floor = floor_ms()
    rows = [run_task(n) for n in names]
    med = {k: statistics.median(r[k] for r in rows) for k in ("reset_ms", "bash_step_ms", "grade_ms")}
    success = sum(r["expert_reward"] >= 1.0 for r in rows) / len(rows)
    print(f"{'task':34} {'1st reset':>9} {'reset':>7} {'bash':>7} {'grade':>8} {'steps':>5} {'reward':>6}")
    for r in rows:
        print(
            f"{r['task']:34} {r['first_reset_ms']:9.0f} {r['reset_ms']:7.1f} {r['bash_step_ms']:7.1f} "
            f"{r['grade_ms']:8.0f} {r['expert_steps']:5d} {r['expert_reward']:6.2f}"
        )
    print(
        f"median: reset {med['reset_ms']:.1f} ms, bash step {med['bash_step_ms']:.1f} ms "
        f"({med['bash_step_ms'] / floor:.1f}x a plain subprocess, {floor:.2f} ms), grading {med['grade_ms']:.0f} ms; "
        f"scripted expert success {success:.0%} over {len(rows)} tasks"
    )
    Path(a.out).write_text(
        json.dumps({"floor_subprocess_ms": floor, "median": med, "expert_success": success, "tasks": rows}, indent=2)
    )
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
