"""The AgentPRM paper's other envs (TextCraft, BabyAI): env speed, scripted-expert success, embedded agent.

    python bench/paper_envs.py [--blocks 5] [--block-episodes 20] [--agent-episodes 20] [--agent-max-steps 15]

Per env: steps/s of the env under the scripted expert and under a uniformly random choice from
`available_actions` (mean of `--blocks` blocks of episodes, 95% t-interval over blocks); the
expert's success (and BabyAI's mean reward) on the whole evaluation split (TextCraft's 97 goals,
BabyAI's 90 episodes; both seeded stand-ins for AgentGym's test ids, see docs/paper_envs.md),
95% t-interval over episodes; the embedded agent's (`brain=local`, Gemma 3 270M through llama.cpp)
success on the first `--agent-episodes` eval episodes, each cut at `--agent-max-steps` steps.
Writes bench/results/paper_envs.json and prints a table. `--skip-agent` leaves the LLM out.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import gymnasium as gym  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

import envs  # noqa: E402,F401
from bench.stats import ci95  # noqa: E402

RESULTS = ROOT / "bench" / "results"
ENVS = {"textcraft": ("agentsim/TextCraft-v0", 97), "babyai": ("agentsim/BabyAI-v0", 90)}


def play(env: gym.Env, seed: int, policy: str, rng: random.Random) -> tuple[int, float, bool]:
    """One episode to its end (or the registered step limit): (steps, final reward, success)."""
    _, info = env.reset(seed=seed)
    steps, reward = 0, 0.0
    while True:
        acts = info["available_actions"]
        action = env.unwrapped.expert_action() if policy == "expert" else rng.choice(acts)  # type: ignore[attr-defined]
        _, r, terminated, truncated, info = env.step(action)
        steps, reward = steps + 1, float(r)
        if terminated or truncated:
            return steps, reward, bool(info.get("success", False))


def bench_speed(env_id: str, blocks: int, block_episodes: int) -> dict:
    """Env steps/s under each policy: one figure per block of episodes (train split, fresh seeds per block)."""
    out = {}
    for policy in ("expert", "random"):
        env = gym.make(env_id)
        play(env, 10_000, policy, random.Random(0))  # warm: recipe book / level classes built once per process
        rates, steps_all = [], 0
        for b in range(blocks):
            rng = random.Random(b)
            steps, start = 0, time.perf_counter()
            for i in range(block_episodes):
                steps += play(env, b * block_episodes + i, policy, rng)[0]
            rates.append(steps / (time.perf_counter() - start))
            steps_all += steps
        mean, half = ci95(rates)
        out[policy] = {"steps_per_s": round(mean, 1), "ci95": round(half, 1), "steps": steps_all, "blocks": blocks}
        env.close()
    return out


def bench_expert(env_id: str, size: int) -> dict:
    """The scripted expert on the whole eval split: success and final reward, 95% t-intervals over episodes."""
    env = gym.make(env_id, split="eval")
    rng = random.Random(0)
    runs = [play(env, seed, "expert", rng) for seed in range(size)]
    env.close()
    success, reward = ci95([float(s) for _, _, s in runs]), ci95([r for _, r, _ in runs])
    return {
        "episodes": size,
        "success": round(success[0], 4),
        "success_ci95": round(success[1], 4),
        "mean_reward": round(reward[0], 4),
        "mean_reward_ci95": round(reward[1], 4),
        "mean_steps": round(sum(s for s, _, _ in runs) / size, 1),
    }


def bench_agent(name: str, env_id: str, episodes: int, max_steps: int) -> dict:
    """The embedded agent (brain=local) on the first `episodes` eval episodes, via the same engine as agents.run."""
    from agents.engine import run_config

    with tempfile.TemporaryDirectory(prefix=f"paper-envs-{name}-") as out:
        cfg = {
            "env": {
                "name": name,
                "id": env_id,
                "max_steps": max_steps,
                "kwargs": {"split": "eval"},
            },
            "brain": {"name": "local"},
            "memory": {"name": "none"},
            "episodes": episodes,
            "out": out,
            "progress": False,
        }
        start = time.perf_counter()
        r = run_config(cfg, console=Console(stderr=True, quiet=True))
        wall = time.perf_counter() - start
        rows = [json.loads(line) for line in (Path(out) / "trajectories.jsonl").read_text().splitlines() if line]
    successes = [float(bool(ep["outcome"]["success"])) for ep in rows]
    mean, half = ci95(successes)
    s = r.summary
    return {
        "episodes": len(rows),
        "crashed": len(r.failed),
        "max_steps": max_steps,
        "success": round(mean, 4),
        "success_ci95": round(half, 4),
        "mean_score": s.mean_score,
        "mean_steps": s.mean_steps,
        "invalid_action_rate": s.invalid_action_rate,
        "wall_s": round(wall, 1),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--blocks", type=int, default=5)
    p.add_argument("--block-episodes", type=int, default=20)
    p.add_argument("--agent-episodes", type=int, default=20)
    p.add_argument("--agent-max-steps", type=int, default=15)
    p.add_argument("--skip-agent", action="store_true")
    p.add_argument("--agent-only", action="store_true", help="add the agent rows to an existing --out file")
    p.add_argument("--out", default=str(RESULTS / "paper_envs.json"))
    p.add_argument("--envs", default=",".join(ENVS), help="comma-separated envs to measure (default: all)")
    a = p.parse_args()
    logging.basicConfig(level=logging.WARNING)
    machine = {
        "python": platform.python_version(),
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "load_avg_1min_at_start": round(os.getloadavg()[0], 1),  # the steps/s figures shrink with a busy machine
    }
    if a.agent_only:
        results = json.loads(Path(a.out).read_text())
        results["agent_machine"], results["agent_args"] = machine, vars(a)
    else:
        results = {"machine": machine, "args": vars(a), "envs": {}}
    wanted = [e.strip() for e in a.envs.split(",") if e.strip()]
    unknown = sorted(set(wanted) - set(ENVS))
    if unknown:
        p.error(f"unknown env(s) {unknown}; choose from {sorted(ENVS)}")
    for name, (env_id, size) in ((n, ENVS[n]) for n in wanted):
        if a.agent_only:
            row = results["envs"][name]
        else:
            row = {"speed": bench_speed(env_id, a.blocks, a.block_episodes), "expert": bench_expert(env_id, size)}
        if not a.skip_agent:
            row["agent"] = bench_agent(name, env_id, a.agent_episodes, a.agent_max_steps)
        results["envs"][name] = row
        print(f"{name}: {json.dumps(row)}", file=sys.stderr)
        Path(a.out).write_text(json.dumps(results, indent=2) + "\n")  # each env's row kept as soon as it is measured
    results["machine" if not a.agent_only else "agent_machine"]["load_avg_1min_at_end"] = round(os.getloadavg()[0], 1)
    Path(a.out).write_text(json.dumps(results, indent=2) + "\n")
    table = Table(title="The AgentPRM paper's other envs (eval splits; 95% intervals)")
    for col in ("env", "steps/s expert", "steps/s random", "expert success", "expert reward", "agent success"):
        table.add_column(col, justify="right")
    for name, row in results["envs"].items():
        sp, ex, ag = row["speed"], row["expert"], row.get("agent")
        table.add_row(
            name,
            f"{sp['expert']['steps_per_s']:,.0f} ± {sp['expert']['ci95']:,.0f}",
            f"{sp['random']['steps_per_s']:,.0f} ± {sp['random']['ci95']:,.0f}",
            f"{ex['success']:.1%} ± {ex['success_ci95']:.1%} (n={ex['episodes']})",
            f"{ex['mean_reward']:.3f} ± {ex['mean_reward_ci95']:.3f}",
            "-" if ag is None else f"{ag['success']:.1%} ± {ag['success_ci95']:.1%} (n={ag['episodes']})",
        )
    Console().print(table)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
