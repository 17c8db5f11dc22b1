"""AgentEvol-style self-improvement rounds on top of a trained adapter:
`python bench/policy_evol.py --start agentsim-sft --env webshop --env faulttree --expert data/expert-webshop`.

Each round, top to bottom: explore (the current policy plays `--explore` training goals of each
`--env` it has not seen, sampling at `--temperature`, through the ordinary collection engine); keep
what the reward says worked (successes, or `--min-reward` and above); retrain (continue from the
current adapter on the kept episodes plus a share of the expert data, as AgentEvol merges them so
the policy does not drift); convert to a llama.cpp adapter. `--start` may be a shipped adapter
(`agentsim-sft`): it is turned back into PEFT weights (`agents.policy.peft_from_gguf`). Then compare all rounds on held-out goals with bench/policy_heldout.py.
Writes bench/results/policy_evol.json (per round: explored, kept, success while exploring, training).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402

from agents.engine import collect  # noqa: E402
from agents.policy.gguf_adapter import convert_peft_to_gguf  # noqa: E402
from agents.policy.sft_data import read_episodes, rejected_because  # noqa: E402
from agents.policy.train import train  # noqa: E402

log = logging.getLogger(__name__)


# the held-out benchmark's env settings (bench/policy_heldout.py), on the training split
ENVS = {
    "webshop": {"name": "webshop", "id": "agentsim/WebShop-v0", "max_steps": 15, "kwargs": {"split": "train"}},
    "faulttree": {"name": "faulttree", "id": "agentsim/FaultTree-v0", "max_steps": 40, "kwargs": {"split": "train"}},
}


def start_adapter(start: str, work: Path) -> tuple[Path, Path]:
    """(peft folder, llama.cpp adapter) of the starting policy: a train run's best/, a .gguf, or a shipped name."""
    from agents.brains.model_files import adapter_path
    from agents.policy.peft_from_gguf import convert_gguf_to_peft

    path = Path(start)
    if path.is_dir():
        gguf = path.parent / "adapter.gguf"
        if not gguf.exists():
            convert_peft_to_gguf(path, gguf)
        return path, gguf
    gguf = Path(adapter_path(start, "gemma3-270m") or start)
    return convert_gguf_to_peft(gguf, work / "start-peft"), gguf


def expert_subset(spec: str, default_n: int, round_dir: Path, round_no: int) -> str:
    """A .jsonl store of N successful expert episodes, a different slice each round (the CPU budget per store)."""
    path, sep, n_text = spec.rpartition(":")
    if not sep or not n_text.isdigit():
        path, n_text = spec, ""
    n = int(n_text) if n_text else default_n
    good = [ep for ep in read_episodes([path]) if ep.outcome.success]
    if not good:
        raise SystemExit(f"--expert {spec}: no successful episodes in {path}")
    first = (round_no - 1) * n % len(good)
    chosen = (good[first:] + good[:first])[:n]
    out = round_dir / f"expert-{Path(path).name}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(ep.model_dump_json() + "\n" for ep in chosen))
    return str(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--start", default="agentsim-sft", help="policy to improve: a train run's best/, a .gguf, or a shipped adapter"
    )
    ap.add_argument(
        "--expert", action="append", default=[], help="expert store mixed into each round's data: PATH[:N] (N episodes)"
    )
    ap.add_argument("--expert-episodes", type=int, default=12, help="episodes per expert store without :N")
    ap.add_argument("--env", action="append", default=[], help="env explored (repeat: webshop, faulttree)")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--explore", type=int, default=40, help="training goals explored per round and env")
    ap.add_argument("--seed-base", type=int, default=5000, help="first exploration seed (expert data used 0..)")
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument(
        "--min-reward", type=float, default=None, help="keep episodes whose reward clears this (default: successes)"
    )
    ap.add_argument(
        "--max-steps", type=int, default=None, help="and took at most this many steps (the bar credits detours too)"
    )
    ap.add_argument(
        "--concurrency", type=int, default=1, help="episodes at once (above 1 they evict each other's KV prefix)"
    )
    ap.add_argument("--max-updates", type=int, default=None, help="cap on optimiser updates (default: one epoch)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (1 on a busy machine)")
    ap.add_argument("--lr", type=float, default=2e-4)
    ap.add_argument(
        "--turn-style",
        choices=["full", "compact"],
        default="full",
        help="the prompt turns explored with (agent.perception.turn_style): the start adapter's and the expert data's",
    )
    ap.add_argument("--out", default="runs/evol")
    ap.add_argument("--results", default=str(ROOT / "bench" / "results" / "policy_evol.json"))
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    console = Console(stderr=True)
    out = Path(args.out)
    envs = args.env or ["webshop"]
    current, gguf = start_adapter(args.start, out)
    rounds = []
    # the keep rule, as training applies it (agents.policy.sft_data.rejected_because)
    keep = {"success_only": args.min_reward is None, "min_reward": args.min_reward, "max_steps": args.max_steps}
    for r in range(1, args.rounds + 1):
        t0 = time.perf_counter()
        explored: dict[str, dict[str, float]] = {}
        stores = []
        for env in envs:
            explore_dir = out / f"round{r}" / f"explore-{env}"
            collect(
                {
                    "env": ENVS.get(env, {"name": env, "id": env}),
                    "brain": {"name": "local", "adapter": str(gguf), "temperature": args.temperature},
                    "agent": {"perception": {"turn_style": args.turn_style}},
                    "episodes": args.explore,
                    "seed": args.seed_base + (r - 1) * args.explore,
                    "concurrency": args.concurrency,
                    "out": str(explore_dir),
                    "progress": True,
                },
                console,
            )
            records = list(read_episodes([explore_dir]))
            kept = sum(rejected_because(rec, **keep) is None for rec in records)
            explored[env] = {
                "episodes": len(records),
                "success": sum(rec.outcome.success for rec in records) / max(1, len(records)),
                "mean_score": 100 * sum(rec.outcome.reward for rec in records) / max(1, len(records)),
                "kept": kept,
            }
            log.info("round %d explore %s: %s", r, env, explored[env])
            stores.append(str(explore_dir))
        t_explore = time.perf_counter() - t0
        train_dir = out / f"round{r}" / "train"
        history = train(
            {
                "data": [
                    *stores,
                    *(expert_subset(e, args.expert_episodes, out / f"round{r}", r) for e in args.expert),
                ],
                "out": str(train_dir),
                **keep,
                "init_adapter": str(current),
                "max_updates": args.max_updates,
                "eval_every": 4,
                "accumulate": 4,
                "threads": args.threads,
                "lr": args.lr,
                "progress": True,
            },
            console,
        )
        rounds.append(
            {
                "round": r,
                "start": str(args.start if r == 1 else current),
                "explored": explored,
                "min_reward": args.min_reward,
                "max_steps": args.max_steps,
                "temperature": args.temperature,
                "turn_style": args.turn_style,
                "explore_seconds": t_explore,
                "train_seconds": time.perf_counter() - t0 - t_explore,
                "history": history,
                "adapter": str(train_dir / "adapter.gguf"),
            }
        )
        current, gguf = train_dir / "best", train_dir / "adapter.gguf"
        Path(args.results).write_text(json.dumps({"rounds": rounds}, indent=2))
    console.print(json.dumps(rounds, indent=2)[:2000])


if __name__ == "__main__":
    main()
