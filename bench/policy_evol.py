"""AgentEvol-style self-improvement rounds on top of a trained adapter:
`python bench/policy_evol.py --start runs/sft/best --rounds 1 --explore 40 --expert runs/collect/webshop-scripted-seed0`.

Each round, top to bottom: explore (the current policy plays `--explore` training goals it has not
seen, sampling at `--temperature`, through the ordinary collection engine); keep what the reward
says worked (`success_only`); retrain (continue from the current adapter on the kept episodes plus
a share of the expert data, as AgentEvol merges them so the policy does not drift); convert to a
llama.cpp adapter. Then compare all rounds on held-out goals with bench/policy_heldout.py.
Writes bench/results/policy_evol.json (per round: explored, kept, success while exploring, training).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402

from agents.engine import collect  # noqa: E402
from agents.policy.gguf_adapter import convert_peft_to_gguf  # noqa: E402
from agents.policy.train import train  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--start", required=True, help="peft adapter folder of the policy to improve (a train run's best/)")
    ap.add_argument("--expert", action="append", default=[], help="expert stores mixed into each round's data")
    ap.add_argument("--expert-episodes", type=int, default=16, help="expert episodes per store per round")
    ap.add_argument("--env", default="webshop")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--explore", type=int, default=40, help="training goals explored per round")
    ap.add_argument("--seed-base", type=int, default=5000, help="first exploration seed (expert data used 0..)")
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--max-updates", type=int, default=8)
    ap.add_argument("--threads", type=int, default=None, help="torch threads (1 on a busy machine)")
    ap.add_argument("--lr", type=float, default=2e-4)
    ap.add_argument("--out", default="runs/evol")
    ap.add_argument("--results", default=str(ROOT / "bench" / "results" / "policy_evol.json"))
    args = ap.parse_args()
    console = Console(stderr=True)
    out = Path(args.out)
    current = Path(args.start)
    rounds = []
    for r in range(1, args.rounds + 1):
        t0 = time.perf_counter()
        gguf = current.parent / "adapter.gguf"
        if not gguf.exists():
            convert_peft_to_gguf(current, gguf)
        explore_dir = out / f"round{r}" / "explore"
        explored = collect(
            {
                "env": {"name": args.env, "id": args.env},
                "brain": {"name": "local", "adapter": str(gguf), "temperature": args.temperature},
                "episodes": args.explore,
                "seed": args.seed_base + (r - 1) * args.explore,
                "concurrency": 1,
                "out": str(explore_dir),
                "progress": False,
            },
            console,
        )
        t_explore = time.perf_counter() - t0
        train_dir = out / f"round{r}" / "train"
        history = train(
            {
                "data": [str(explore_dir), *args.expert],
                "out": str(train_dir),
                "success_only": True,
                "max_episodes": args.expert_episodes,
                "init_adapter": str(current),
                "max_updates": args.max_updates,
                "eval_every": max(1, args.max_updates // 2),
                "accumulate": 4,
                "threads": args.threads,
                "lr": args.lr,
                "progress": False,
            },
            console,
        )
        summary = explored.summary
        rounds.append(
            {
                "round": r,
                "explored": args.explore,
                "explore_success": summary.success_rate,
                "explore_seconds": t_explore,
                "train_seconds": time.perf_counter() - t0 - t_explore,
                "history": history,
                "adapter": str(train_dir / "adapter.gguf"),
            }
        )
        current = train_dir / "best"
        Path(args.results).write_text(json.dumps({"rounds": rounds}, indent=2))
    console.print(json.dumps(rounds, indent=2)[:2000])


if __name__ == "__main__":
    main()
