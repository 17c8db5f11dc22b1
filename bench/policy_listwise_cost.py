"""What the listwise loss adds to a training step: `python bench/policy_listwise_cost.py [--episodes N]`.

`agents.train` on scripted-expert WebShop episodes (as bench/policy_train_speed.py builds them), frozen cache on,
one epoch with `listwise_weight=0` (token-level SFT) and one with `listwise_weight=1` (SFT + every ranked step's
candidates packed as branches of the same forward), alternating. Reports tokens per CPU-second of the training
process (wall time swings with the shared machine's load) and writes bench/results/policy_listwise_cost.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.policy_train_speed import expert_store, train_once  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--seed", type=int, default=7000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "policy_listwise_cost.json"))
    args = ap.parse_args()
    args.epochs = 1
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        store = expert_store(Path(tmp) / "store", args.episodes, args.seed)
        for r in range(args.rounds):
            for w in [0.0, 1.0] if r % 2 == 0 else [1.0, 0.0]:
                s = train_once(store, Path(tmp) / f"run{r}-{w}", True, args, listwise_weight=w)
                runs.append(
                    {
                        "round": r,
                        "listwise_weight": w,
                        "tokens_per_cpu_s": float(s["epoch_train_tokens_per_cpu_s"]["0"]),
                        "tokens_per_s": s["train_tokens_per_s"],
                        "sequence_tokens": s["train_tokens_per_epoch"],
                        "choices": s["data"][str(store)].get("choices"),
                        "candidate_tokens": s["data"][str(store)].get("candidate_tokens"),
                    }
                )
    ratios = [
        next(x for x in runs if x["round"] == r and x["listwise_weight"] == 1.0)["tokens_per_cpu_s"]
        / next(x for x in runs if x["round"] == r and x["listwise_weight"] == 0.0)["tokens_per_cpu_s"]
        for r in range(args.rounds)
    ]
    result = {"what": "sequence tokens per CPU-second, SFT vs SFT + listwise", "runs": runs, "ratios": ratios}
    Path(args.out).write_text(json.dumps(result, indent=2))
    for x in runs:
        print(
            f"round {x['round']} listwise_weight={x['listwise_weight']}: {x['tokens_per_cpu_s']:.0f} tokens/CPU-s "
            f"({x['sequence_tokens']} sequence tokens, {x['choices']} ranked steps, {x['candidate_tokens']} candidate tokens)"
        )
    print("listwise / SFT:", ", ".join(f"{r:.2f}x" for r in ratios))


if __name__ == "__main__":
    main()
