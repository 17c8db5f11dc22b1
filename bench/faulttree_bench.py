"""Fault-tree benchmark: dataset build time, env speed, scripted-expert quality vs user noise.

    python bench/faulttree_bench.py [--episodes 100] [--entries 3130]

Writes bench/results/faulttree.json and bench/results/faulttree_expert.png and prints a table.
Numbers come from running the code; nothing is hard-coded.
"""

from __future__ import annotations

import argparse
import json
import logging
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
import numpy as np  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

import envs  # noqa: E402,F401
from envs.faulttree import dataset as ds  # noqa: E402
from envs.faulttree.rollout import run_expert  # noqa: E402

log = logging.getLogger("faulttree_bench")
RESULTS = ROOT / "bench" / "results"
VAGUENESS = (0.0, 0.3, 0.6)
ERROR_RATES = (0.0, 0.1, 0.2)


def bench_dataset(n_entries: int) -> dict:
    ds.tree_for.cache_clear()
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        manifest = ds.build_dataset(tmp, n_entries=n_entries)
        seconds = time.perf_counter() - start
        size = sum(p.stat().st_size for p in Path(tmp).iterdir())
        data = ds.load_dataset(tmp)
        nodes = [len(t) for t in data.trees.values()]
        ds.load_dataset.cache_clear()
    return {
        "entries": n_entries,
        "trees": manifest["trees"],
        "seconds": round(seconds, 2),
        "entries_per_s": round(n_entries / seconds, 1),
        "bytes": size,
        "nodes_mean": round(float(np.mean(nodes)), 1),
        "nodes_min": int(min(nodes)),
        "nodes_max": int(max(nodes)),
    }


def bench_speed(episodes: int) -> dict:
    """Steps/s for the expert policy and for a random policy over `available_actions` (warm trees)."""
    out = {}
    for policy in ("expert", "random"):
        env = gym.make("agentsim/FaultTree-v0")
        for seed in range(episodes):  # warm the tree cache so we time the env, not the generator
            env.reset(seed=seed)
        rng = random.Random(0)
        steps, start = 0, time.perf_counter()
        for seed in range(episodes):
            _, info = env.reset(seed=seed)
            while True:
                action = env.unwrapped.expert_action() if policy == "expert" else rng.choice(info["available_actions"])
                _, _, term, trunc, info = env.step(action)
                steps += 1
                if term or trunc:
                    break
        seconds = time.perf_counter() - start
        out[policy] = {"steps": steps, "steps_per_s": round(steps / seconds, 1)}
    return out


def bench_expert(episodes: int) -> list[dict]:
    rows = []
    for vag in VAGUENESS:
        for err in ERROR_RATES:
            env = gym.make("agentsim/FaultTree-v0", vagueness=vag, error_rate=err)
            results = [run_expert(env, seed) for seed in range(episodes)]
            rows.append(
                {
                    "vagueness": vag,
                    "error_rate": err,
                    "episodes": episodes,
                    "accuracy": round(float(np.mean([r.success for r in results])), 3),
                    "mean_score": round(float(np.mean([r.score for r in results])), 3),
                    "mean_turns": round(float(np.mean([r.turns for r in results])), 2),
                    "truncated": round(float(np.mean([r.truncated for r in results])), 3),
                    "rollbacks_per_episode": round(float(np.mean([r.rollbacks_seen for r in results])), 2),
                    "used_retracted_fact": round(float(np.mean([r.used_retracted_fact for r in results])), 3),
                }
            )
            log.info("vagueness=%.1f error=%.1f accuracy=%.3f", vag, err, rows[-1]["accuracy"])
    return rows


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for vag in VAGUENESS:
        sel = [r for r in rows if r["vagueness"] == vag]
        xs = [r["error_rate"] for r in sel]
        axes[0].plot(xs, [r["accuracy"] for r in sel], marker="o", label=f"vagueness {vag}")
        axes[1].plot(xs, [r["mean_turns"] for r in sel], marker="o", label=f"vagueness {vag}")
    axes[0].set(
        xlabel="user error rate",
        ylabel="expert accuracy (exact root causes)",
        ylim=(0, 1.05),
        title="Scripted expert accuracy",
    )
    axes[1].set(xlabel="user error rate", ylabel="mean turns to diagnosis", title="Dialogue length")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100, help="episodes per (vagueness, error rate) cell")
    parser.add_argument("--entries", type=int, default=ds.DEFAULT_ENTRIES)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    args.out.mkdir(parents=True, exist_ok=True)

    dataset = bench_dataset(args.entries)
    speed = bench_speed(min(args.episodes, 50))
    rows = bench_expert(args.episodes)
    result = {
        "benchmark": "faulttree",
        "python": platform.python_version(),
        "machine": platform.machine(),
        "dataset": dataset,
        "env_speed": speed,
        "expert": rows,
        "settings": {"max_turns": 40, "rollback_distance": 8, "rollback_prob": 0.8, "split": "test"},
    }
    (args.out / "faulttree.json").write_text(json.dumps(result, indent=2) + "\n")
    plot(rows, args.out / "faulttree_expert.png")

    console = Console(width=120)
    console.print(
        f"Dataset: {dataset['entries']} entries / {dataset['trees']} trees in {dataset['seconds']} s "
        f"({dataset['entries_per_s']} entries/s), nodes per tree mean {dataset['nodes_mean']} "
        f"[{dataset['nodes_min']}-{dataset['nodes_max']}], {dataset['bytes'] / 1e6:.1f} MB"
    )
    console.print(
        f"Env speed: expert policy {speed['expert']['steps_per_s']} steps/s, "
        f"random valid policy {speed['random']['steps_per_s']} steps/s"
    )
    table = Table(title=f"Scripted expert ({args.episodes} episodes a cell, max 40 turns)")
    for col in (
        "vagueness",
        "error rate",
        "accuracy",
        "mean score",
        "mean turns",
        "truncated",
        "rollbacks/ep",
        "used retracted",
    ):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(
            f"{r['vagueness']:.1f}",
            f"{r['error_rate']:.1f}",
            f"{r['accuracy']:.3f}",
            f"{r['mean_score']:.3f}",
            f"{r['mean_turns']:.1f}",
            f"{r['truncated']:.3f}",
            f"{r['rollbacks_per_episode']:.2f}",
            f"{r['used_retracted_fact']:.3f}",
        )
    console.print(table)
    return result


if __name__ == "__main__":
    main()
