"""PRM-guided search over the shipped WebShop policy: does AgentPRM's beam search beat one sample and Best-of-16
random when the policy is the embedded model (`agentsim-choice`), not the scripted epsilon-expert?

    nice python bench/prm_policy.py                              # ~1 h on 2 cores; every stage cached under --work
    nice python bench/prm_policy.py --goals 3 --rollouts 12 --work /tmp/prm-policy-smoke   # a smoke run

Stages, each a documented command of the project (printed as it runs):
1. the policy's own rollouts on WebShop *training* goals at the search temperature (0.7): AgentPRM trains its PRM on
   the policy it will guide;
2. a PRM with the paper's TD/GAE labels (`python -m prm.train`, MiniLM);
3. on held-out *test* goals 0..N-1, the same memoryless sampler (`python -m prm.search`, temperature 0.7): one
   sample, Best-of-16 random, and beam search 4x4 (equal budget: 16 policy samples a decision) with the validated
   policy prior (0.3; `--paper-beam` adds the paper's, without it);
4. a table: success (95% Wilson interval), mean score (95% t-interval), policy samples per goal, and paired
   differences against one sample and against Best-of-16 random. Writes bench/results/prm_policy.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from agents.trajectories.store import TRAJECTORIES, TrajectoryStore  # noqa: E402
from bench.stats import ci95, wilson95  # noqa: E402

# arm -> prm.search keys (each spends at most 16 policy samples a decision, one sample spends 1)
ARMS: dict[str, list[str]] = {
    "one sample": ["strategy=random", "n=1"],
    "Best-of-16 random": ["strategy=random", "n=16"],
    "beam 4x4 (prior 0.3)": ["strategy=beam", "n=4", "m=4", "prior=0.3"],
}
PAPER_BEAM = {"beam 4x4 (paper, prior 0)": ["strategy=beam", "n=4", "m=4", "prior=0"]}  # --paper-beam
NEEDS_PRM = {"beam 4x4 (prior 0.3)", "beam 4x4 (paper, prior 0)"}


def run(cmd: list[str], console: Console) -> None:
    console.print("$ " + " ".join(cmd), markup=False, style="bold")
    subprocess.run(cmd, cwd=ROOT, check=True)


def episodes(folder: Path) -> list[dict[str, Any]]:
    """A run folder's episode records as plain dicts (the project's store reads them; none when absent)."""
    path = folder / TRAJECTORIES
    return [rec.model_dump() for rec in TrajectoryStore(path).read()] if path.exists() else []


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--goals", type=int, default=50, help="held-out WebShop test goals (seeds 0..N-1)")
    ap.add_argument("--rollouts", type=int, default=300, help="policy rollouts on training goals for the PRM")
    ap.add_argument("--rollout-seed", type=int, default=40000, help="first training-goal seed of the rollouts")
    ap.add_argument("--epochs", type=int, default=3, help="PRM training epochs")
    ap.add_argument(
        "--history",
        choices=["true", "false"],
        default="true",
        help="prm.search history=: the sampler reads the path's transcript as the agent does in agents.run (true), "
        "or one-turn prompts (false, the memoryless sampler of older tables)",
    )
    ap.add_argument("--paper-beam", action="store_true", help="also beam 4x4 without the policy prior (the paper's)")
    ap.add_argument("--work", type=Path, default=ROOT / "runs" / "prm-policy")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "prm_policy.json")
    args = ap.parse_args()
    console = Console()
    w, py = args.work, sys.executable
    t0 = time.perf_counter()
    timings: dict[str, float] = {}

    # 1. the policy's own rollouts (temperature 0.7, as the search samples), on training goals
    t = time.perf_counter()
    if len(episodes(w / "rollouts")) < args.rollouts:
        run(
            [py, "-m", "agents.collect", "env=webshop", "env.kwargs.split=train", f"episodes={args.rollouts}",
             f"seed={args.rollout_seed}", "brain.temperature=0.7", "resume=true", "progress=false",
             f"out={w / 'rollouts'}"],
            console,
        )  # fmt: skip
    timings["rollouts_s"] = time.perf_counter() - t
    rolled = episodes(w / "rollouts")
    # 2. the PRM: the paper's TD/GAE labels on those rollouts
    t = time.perf_counter()
    if not (w / "prm" / "best").exists():
        run(
            [py, "-m", "prm.train", f"data=[{w / 'rollouts'}]", f"out={w / 'prm'}", f"epochs={args.epochs}",
             "freeze_layers=3", "progress=false"],
            console,
        )  # fmt: skip
    timings["prm_train_s"] = time.perf_counter() - t
    # 3. the arms on held-out test goals, the same sampler (memoryless agent, temperature 0.7)
    results: dict[str, list[dict[str, Any]]] = {}
    arms = {**ARMS, **(PAPER_BEAM if args.paper_beam else {})}
    for arm, keys in arms.items():
        folder = (
            w
            / "search"
            / f"history-{args.history}"
            / arm.split(" (")[0].replace(" ", "-").lower()
            / keys[-1].replace("=", "")
        )
        t = time.perf_counter()
        if len(episodes(folder)) < args.goals:  # a cut search resumes: only the missing goals are played
            prm = [f"model={w / 'prm' / 'best'}"] if arm in NEEDS_PRM else []
            run(
                [py, "-m", "prm.search", "env=webshop", "+env.kwargs.split=test", f"episodes={args.goals}", "seed=0",
                 "temperature=0.7", f"history={args.history}", *keys, *prm, "resume=true", f"out={folder}"],
                console,
            )  # fmt: skip
        timings[f"{arm}_s"] = time.perf_counter() - t
        results[arm] = sorted(episodes(folder), key=lambda e: e["seed"])[: args.goals]

    # 4. the table
    rows = []
    base = {e["seed"]: e for e in results["one sample"]}
    bo16 = {e["seed"]: e for e in results["Best-of-16 random"]}
    for arm, eps in results.items():
        wins = sum(bool(e["outcome"]["success"]) for e in eps)
        score, score_ci = ci95([100 * e["outcome"]["reward"] for e in eps])
        samples = [e["meta"]["search"]["samples"] for e in eps]
        row: dict[str, Any] = {
            "arm": arm,
            "goals": len(eps),
            "success": wins / len(eps),
            "success_ci95": wilson95(wins, len(eps)),
            "score": score,
            "score_ci95": score_ci,
            "samples_per_goal": sum(samples) / len(samples),
        }
        for name, other in (("one_sample", base), ("best_of_16_random", bo16)):
            common = [e for e in eps if e["seed"] in other]
            row[f"success_minus_{name}"] = ci95(
                [float(e["outcome"]["success"]) - float(other[e["seed"]]["outcome"]["success"]) for e in common]
            )
            row[f"score_minus_{name}"] = ci95(
                [100 * (e["outcome"]["reward"] - other[e["seed"]]["outcome"]["reward"]) for e in common]
            )
        rows.append(row)
    table = Table(
        title=f"PRM search over agentsim-choice, {args.goals} held-out WebShop goals (temperature 0.7, "
        f"history={args.history})"
    )
    for col in ("arm", "success", "score", "samples / goal", "success − one sample", "success − Best-of-16 random"):
        table.add_column(col, justify="left" if col == "arm" else "right")
    for r in rows:
        lo, hi = r["success_ci95"]
        d1, d1ci = r["success_minus_one_sample"]
        d2, d2ci = r["success_minus_best_of_16_random"]
        table.add_row(
            r["arm"],
            f"{100 * r['success']:.1f}% [{100 * lo:.0f}, {100 * hi:.0f}]",
            f"{r['score']:.1f} ± {r['score_ci95']:.1f}",
            f"{r['samples_per_goal']:.0f}",
            f"{100 * d1:+.1f} ± {100 * d1ci:.1f}",
            f"{100 * d2:+.1f} ± {100 * d2ci:.1f}",
        )
    console.print(table)
    summary = {
        "policy": "agentsim-choice (brain.adapter=auto on WebShop) at temperature 0.7, "
        + ("reading the path's transcript (history=true)" if args.history == "true" else "memoryless (history=false)"),
        "prm": f"TD/GAE (paper labels), MiniLM, {args.epochs} epochs, on {len(rolled)} policy rollouts "
        f"(training goals, seeds {args.rollout_seed}..)",
        "rollout_success": sum(bool(e["outcome"]["success"]) for e in rolled) / max(1, len(rolled)),
        "rows": rows,
        "timings_s": timings,
        "wall_s": time.perf_counter() - t0,
    }
    args.out.write_text(json.dumps(summary, indent=2))
    console.print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
