"""The AgentPRM paper's Table 1 layout over this project's envs: one sample, Best-of-N random / PRM / oracle, and beam
search @2x2 / @4x4 / @8x8, per env, beside the paper's numbers.

    python bench/prm_paper_table.py        # reads the per-env results below, prints the table, writes the JSON

It reads what `bench/prm_experiment.py` wrote for each env (the policy is each env's scripted expert with epsilon
noise, the PRM a TD/GAE MiniLM trained on that policy's trajectories; regenerate one with the command in its JSON's
`config`), so it runs in a second. Budgets are policy samples per decision: Best-of-N draws N whole trajectories,
beam @N x M keeps N and expands M per node (budget N*M), as the paper does. `prior 0.3` is the validated beam
(the PRM plus 0.3 times the log share of the draws, `docs/prm.md`); `paper` is the paper's (PRM alone).
Writes bench/results/prm_paper_table.json.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

RESULTS = Path(__file__).resolve().parent / "results"
# env -> the prm_experiment results this table reads (the newest settled runs of each; a later file of one env fills
# only the columns the earlier ones lack: the same --work, PRM and seeds, searched with more methods)
SOURCES = {
    "WebShop": ["prm_beam_prior03.json"],
    "Fault trees": ["prm_faulttree_fixed.json"],
    "TextCraft": ["prm_textcraft.json", "prm_textcraft_prior.json"],
    "BabyAI": ["prm_babyai.json"],
}
# column -> summary keys that hold it, first found wins (runs differ in the methods and budgets they ran)
COLUMNS: dict[str, list[str]] = {
    "one sample": ["one sample (no search)"],
    "BoN-random@16": ["BoN-random@16"],
    "BoN-PRM@16": ["BoN-PRM@16"],
    "BoN-oracle@16": ["BoN-oracle@16"],
    "beam @2x2 (paper)": ["beam-PRM@4 (2x2)"],
    "beam @4x4 (paper)": ["beam-PRM@16 (4x4)"],
    "beam @8x8 (paper)": ["beam-PRM@64 (8x8)"],
    "beam @2x2 (prior 0.3)": ["beamp0.3@4 (2x2)"],
    "beam @4x4 (prior 0.3)": ["beamp0.3@16 (4x4)"],
    "beam @8x8 (prior 0.3)": ["beamp0.3@64 (8x8)"],
}
# AgentPRM (Table 1): SFT policy greedy, then PRM beam @2x2 / @4x4 / @8x8. WebShop and TextCraft: success (%);
# BabyAI: reward (x100). Values as quoted in docs/prm.md; for 0.5B on TextCraft and BabyAI only the two ends of the
# row are quoted there (SFT, then @8x8), so the middle stays empty.
PAPER: dict[str, dict[str, Any]] = {
    "WebShop": {"metric": "success", "Qwen2.5-0.5B": [30.5, 30.5, 51.5, 62.5], "Qwen2.5-3B": [46.0, 61.0, 72.5, 76.0]},
    "TextCraft": {
        "metric": "success",
        "Qwen2.5-0.5B": [27.8, None, None, 32.9],
        "Qwen2.5-3B": [29.8, 47.4, 51.5, 56.7],
    },
    "BabyAI": {"metric": "reward", "Qwen2.5-0.5B": [37.6, None, None, 90.4], "Qwen2.5-3B": [67.4, 84.4, 89.6, 89.8]},
}


def cell(summary: dict[str, Any], keys: list[str], metric: str) -> dict[str, float] | None:
    for k in keys:
        if k in summary and metric in summary[k]:
            mean, half = summary[k][metric]
            return {"mean": 100 * mean, "ci95": 100 * half}
    return None


def markdown(rows: dict[str, Any]) -> str:
    """The table as Markdown: our rows (mean ± 95% CI) and the paper's beside them."""
    cols = list(COLUMNS)
    lines = ["| env / policy | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for env, row in rows.items():
        if "missing" in row:
            continue
        cells = [
            "–" if row["cells"][c] is None else f"{row['cells'][c]['mean']:.1f} ± {row['cells'][c]['ci95']:.1f}"
            for c in cols
        ]
        lines.append(f"| {env}, {row['metric']} (ε-expert {row['policy'].split()[-1]}) | " + " | ".join(cells) + " |")
        for model in ("Qwen2.5-0.5B", "Qwen2.5-3B"):
            paper = PAPER.get(env, {}).get(model)
            if paper is None:
                continue
            shown = dict(zip(("one sample", "beam @2x2 (paper)", "beam @4x4 (paper)", "beam @8x8 (paper)"), paper))
            lines.append(
                f"| {env}, paper {model} | "
                + " | ".join("–" if shown.get(c) is None else f"{shown[c]:.1f}" for c in cols)
                + " |"
            )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=RESULTS / "prm_paper_table.json")
    ap.add_argument("--markdown", action="store_true", help="also print the table as Markdown (for docs/prm.md)")
    args = ap.parse_args()
    rows: dict[str, Any] = {}
    for env, names in SOURCES.items():
        missing = [n for n in names if not (RESULTS / n).exists()]
        if missing:
            rows[env] = {"missing": f"{missing[0]} not found: run bench/prm_experiment.py --env ... (docs/prm.md)"}
            continue
        runs = [json.loads((RESULTS / n).read_text()) for n in names]
        run, cfg = runs[0], runs[0]["config"]
        summary: dict[str, Any] = {}
        for r in runs:
            summary = {**r["summary_td"], **summary}  # the first file that has a key keeps it
        name = " + ".join(names)
        metric = "score" if PAPER.get(env, {}).get("metric") == "reward" else "success"
        rows[env] = {
            "source": name,
            "date": run.get("date"),
            "metric": metric,
            "policy": f"scripted expert, epsilon {cfg['epsilon']}",
            "tasks": f"{cfg['search_goals']} held-out tasks x {cfg['seeds']} seeds",
            "max_steps": cfg["max_steps"],
            "cells": {col: cell(summary, keys, metric) for col, keys in COLUMNS.items()},
        }
    table = Table(
        title="AgentPRM's Table 1 layout: mean ± 95% CI over seeds, % (BabyAI: reward x100, as the paper reports it)"
    )
    table.add_column("env / policy", justify="left")
    for col in COLUMNS:
        table.add_column(col, justify="right")
    for env, row in rows.items():
        if "missing" in row:
            table.add_row(env, row["missing"], *[""] * (len(COLUMNS) - 1))
            continue
        table.add_row(
            f"{env} ({row['metric']}; {row['policy']}; {row['tasks']})",
            *[
                "-"
                if row["cells"][col] is None
                else f"{row['cells'][col]['mean']:.1f} ± {row['cells'][col]['ci95']:.1f}"
                for col in COLUMNS
            ],
        )
        for model in ("Qwen2.5-0.5B", "Qwen2.5-3B"):
            paper = PAPER.get(env, {}).get(model)
            if paper is None:
                continue
            greedy, b4, b16, b64 = paper
            shown = {"one sample": greedy, "beam @2x2 (paper)": b4, "beam @4x4 (paper)": b16, "beam @8x8 (paper)": b64}
            table.add_row(
                f"  paper, {model} (SFT greedy, then beam)",
                *["-" if shown.get(col) is None else f"{shown[col]:.1f}" for col in COLUMNS],
            )
    Console(width=240).print(table)
    if args.markdown:
        print(markdown(rows))
    args.out.write_text(json.dumps({"rows": rows, "paper": PAPER}, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
