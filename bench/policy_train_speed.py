"""Training tokens/s with and without skipping the frozen layers: `python bench/policy_train_speed.py [--episodes N]`.

`agents.train` on a few scripted-expert WebShop episodes (training split, compact turns, as the shipped policy
reads them), the default recipe (LoRA r=16 on the top 8 of 18 layers), for `--epochs` epochs, once with
`frozen_cache=false` (the full forward every time) and once with `frozen_cache=true` (the frozen layers' output
computed in the first epoch, reused after). The arms alternate A B B A ... so load on the shared machine hits both
alike; each run's forward+backward tokens/s is reported per epoch, with the ratio within each round. Writes
bench/results/policy_train_speed.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402


def expert_store(folder: Path, episodes: int, seed: int) -> Path:
    """Scripted-expert WebShop episodes on training goals, recorded as agents.collect records them."""
    cmd = [sys.executable, "-m", "agents.collect", "env=webshop", "brain=scripted", f"episodes={episodes}"]
    cmd += [f"seed={seed}", "env.kwargs.split=train", "agent.perception.turn_style=compact", f"out={folder}"]
    subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT)
    return folder


def train_once(store: Path, out: Path, frozen_cache: bool, args: argparse.Namespace, **over: Any) -> dict[str, Any]:
    from agents.policy.train import train

    cfg = {
        "data": [str(store)],
        "out": str(out),
        "eval_fraction": 0.0,
        "epochs": args.epochs,
        "eval_every": 10_000,
        "gguf": False,
        "progress": False,
        "frozen_cache": frozen_cache,
        "device": args.device,
    }
    if args.threads:
        cfg["threads"] = args.threads
    train({**cfg, **over})
    return json.loads((out / "history.json").read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2, help="each round trains both arms, the order alternating")
    ap.add_argument("--seed", type=int, default=7000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "policy_train_speed.json"))
    args = ap.parse_args()
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = expert_store(Path(tmp) / "store", args.episodes, args.seed)
        for r in range(args.rounds):
            order = [False, True] if r % 2 == 0 else [True, False]
            for arm in order:
                s = train_once(store, Path(tmp) / f"run{r}-{arm}", arm, args)
                runs.append(
                    {
                        "round": r,
                        "frozen_cache": arm,
                        "epoch_tokens_per_s": [float(v) for v in s["epoch_train_tokens_per_s"].values()],
                        "epoch_tokens_per_cpu_s": [float(v) for v in s["epoch_train_tokens_per_cpu_s"].values()],
                        "tokens_per_s": s["train_tokens_per_s"],
                        "tokens_per_epoch": s["train_tokens_per_epoch"],
                        "layers_skipped": s["frozen_layers_skipped"],
                        "device": s["device"],
                    }
                )
    rows = []
    for r in range(args.rounds):
        off = next(x for x in runs if x["round"] == r and not x["frozen_cache"])
        on = next(x for x in runs if x["round"] == r and x["frozen_cache"])
        for e in range(args.epochs):
            a, b = off["epoch_tokens_per_s"][e], on["epoch_tokens_per_s"][e]
            ca, cb = off["epoch_tokens_per_cpu_s"][e], on["epoch_tokens_per_cpu_s"][e]
            rows.append({"round": r, "epoch": e + 1, "full_forward": a, "frozen_cache": b, "ratio": b / a,
                         "full_forward_per_cpu_s": ca, "frozen_cache_per_cpu_s": cb, "cpu_ratio": cb / ca})  # fmt: skip
        rows.append({"round": r, "epoch": "all", "full_forward": off["tokens_per_s"], "frozen_cache": on["tokens_per_s"],
                     "ratio": on["tokens_per_s"] / off["tokens_per_s"]})  # fmt: skip
    later = [x["ratio"] for x in rows if isinstance(x["epoch"], int) and x["epoch"] > 1]
    later_cpu = [x["cpu_ratio"] for x in rows if isinstance(x["epoch"], int) and x["epoch"] > 1]
    first_cpu = [x["cpu_ratio"] for x in rows if x["epoch"] == 1]
    first = [x["ratio"] for x in rows if x["epoch"] == 1]
    overall = [x["ratio"] for x in rows if x["epoch"] == "all"]
    result = {
        "what": "agents.train forward+backward tokens/s, full forward vs frozen layers skipped after epoch 1",
        "episodes": args.episodes,
        "epochs": args.epochs,
        "rounds": args.rounds,
        "tokens_per_epoch": runs[0]["tokens_per_epoch"],
        "layers_skipped": next(x["layers_skipped"] for x in runs if x["frozen_cache"]),
        "device": runs[0]["device"],
        "median_ratio_epoch1": statistics.median(first),
        "median_ratio_later_epochs": statistics.median(later) if later else None,
        "median_ratio_all_epochs": statistics.median(overall),
        "median_cpu_ratio_epoch1": statistics.median(first_cpu),
        "median_cpu_ratio_later_epochs": statistics.median(later_cpu) if later_cpu else None,
        "load_note": "wall tokens/s swing with the shared machine's load; tokens per CPU-second of the training "
        "process measure the work itself",
        "rows": rows,
        "runs": runs,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))
    table = Table(title=f"training tokens/s ({result['tokens_per_epoch']} tokens an epoch, {result['device']})")
    for c in ("round", "epoch", "full forward", "frozen cache", "ratio", "per CPU-s: full", "cached", "ratio"):
        table.add_column(c, justify="right")
    for x in rows:
        cpu = ["", "", ""]
        if x["epoch"] != "all":
            cpu = [f"{x['full_forward_per_cpu_s']:.0f}", f"{x['frozen_cache_per_cpu_s']:.0f}", f"{x['cpu_ratio']:.2f}x"]
        table.add_row(str(x["round"]), str(x["epoch"]), f"{x['full_forward']:.1f}", f"{x['frozen_cache']:.1f}",
                      f"{x['ratio']:.2f}x", *cpu)  # fmt: skip
    console = Console()
    console.print(table)
    console.print(
        f"median ratio: epoch 1 {result['median_ratio_epoch1']:.2f}x, later epochs "
        f"{result['median_ratio_later_epochs']:.2f}x, all epochs {result['median_ratio_all_epochs']:.2f}x; "
        f"per CPU-second: epoch 1 {result['median_cpu_ratio_epoch1']:.2f}x, later {result['median_cpu_ratio_later_epochs']:.2f}x"
    )


if __name__ == "__main__":
    main()
