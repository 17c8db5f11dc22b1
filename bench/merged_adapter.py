"""A shipped adapter applied at run time vs folded into the weights: `python bench/merged_adapter.py [--episodes N]`.

Replays real steps (the scripted expert's episodes, recorded with their prompts, as `bench/candidate_sharing.py`
does) through three brains, in turn at every step so machine noise hits all alike: the base model with the LoRA
applied by llama.cpp at run time (`brain.merge_adapter=false`), the same adapter merged into the weights
(`agents.brains.merged_model`, the default), and the base model alone (the reference for how far an adapter
moves the scores). Per step: the new turn's prompt evaluation and the candidates' ranking. Prints a table
with the merged model's speed-up and how close its scores stay to the run-time LoRA's, and writes
bench/results/merged_adapter.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402
from rich.progress import track  # noqa: E402
from rich.table import Table  # noqa: E402

from agents.brains.local import LocalBrain, scoring_texts  # noqa: E402
from agents.catalog import DEFAULT_ADAPTER, ENV_ADAPTERS  # noqa: E402
from agents.core.agent import CHOOSE_PREFIX  # noqa: E402
from bench.candidate_sharing import ENVS, recorded_steps  # noqa: E402
from bench.stats import ci95  # noqa: E402

KINDS = ("lora", "merged", "base")


def step_through(brain: LocalBrain, messages: list[dict], cands: list[str]) -> tuple[float, float, np.ndarray, str]:
    """(prompt evaluation s, ranking s, candidate logprobs, pick) for one recorded step."""
    head, _ = scoring_texts(brain.prompt_text(messages), CHOOSE_PREFIX, "")
    t0 = time.perf_counter()
    brain.scorer.eval_context(brain.tokenize(head))  # the prompt as the episode extends it
    t1 = time.perf_counter()
    brain.ranker.rankings.clear()
    out = brain.choose(messages, cands, prefix=CHOOSE_PREFIX)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, np.array([c.logprob for c in out.candidates]), out.text


def measure(brains: dict[str, LocalBrain], steps: list, label: str) -> dict:
    prompt: dict[str, list[float]] = {k: [] for k in brains}
    rank: dict[str, list[float]] = {k: [] for k in brains}
    gap_merged, gap_base, same_merged, same_base = [], [], 0, 0
    for n, (messages, cands, _) in enumerate(track(steps, description=label)):
        order = list(brains)[n % len(brains) :] + list(brains)[: n % len(brains)]  # rotate who goes first
        got = {}
        for kind in order:
            p, r, lps, pick = step_through(brains[kind], messages, cands)
            prompt[kind].append(p)
            rank[kind].append(r)
            got[kind] = (lps, pick)
        gap_merged.append(float(np.abs(got["merged"][0] - got["lora"][0]).mean()))
        gap_base.append(float(np.abs(got["base"][0] - got["lora"][0]).mean()))
        same_merged += got["merged"][1] == got["lora"][1]
        same_base += got["base"][1] == got["lora"][1]
    step = {k: [p + r for p, r in zip(prompt[k], rank[k])] for k in brains}
    return {
        "steps": len(steps),
        **{f"prompt_s_p50_{k}": statistics.median(prompt[k]) for k in brains},
        **{f"rank_s_p50_{k}": statistics.median(rank[k]) for k in brains},
        **{f"step_s_p50_{k}": statistics.median(step[k]) for k in brains},
        "rank_faster_x": sum(rank["lora"]) / sum(rank["merged"]),
        "prompt_faster_x": sum(prompt["lora"]) / sum(prompt["merged"]),
        "step_faster_x": sum(step["lora"]) / sum(step["merged"]),
        "step_faster_x_per_step_ci": ci95([a / b for a, b in zip(step["lora"], step["merged"])]),
        "merged_vs_base_step_x": sum(step["merged"]) / sum(step["base"]),
        "mean_abs_logprob_gap_merged": statistics.mean(gap_merged),
        "mean_abs_logprob_gap_base": statistics.mean(gap_base),
        "same_pick_merged": same_merged / len(steps),
        "same_pick_base": same_base / len(steps),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=4, help="scripted-expert episodes per env to replay")
    ap.add_argument("--env", action="append", choices=sorted(ENVS), help="default: both")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "merged_adapter.json"))
    args = ap.parse_args(argv)
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for env in args.env or sorted(ENVS):
            adapter = ENV_ADAPTERS.get(env, DEFAULT_ADAPTER)
            brains = {
                "lora": LocalBrain(n_ctx=4096, seed=0, adapter=adapter, merge_adapter=False),
                "merged": LocalBrain(n_ctx=4096, seed=0, adapter=adapter, merge_adapter=True),
                "base": LocalBrain(n_ctx=4096, seed=0, adapter=None),
            }
            rows[env] = {"adapter": adapter, **measure(brains, recorded_steps(env, args.episodes, Path(tmp)), env)}
            del brains
    t = Table(title="A LoRA at run time vs merged into the weights (same run, steps interleaved)")
    for col in ("env", "adapter", "steps", "rank p50", "rank ×", "step p50", "step ×", "|Δ logprob|", "same pick"):
        t.add_column(col, justify="right")
    for env, r in rows.items():
        t.add_row(
            env,
            r["adapter"],
            f"{r['steps']}",
            f"{r['rank_s_p50_lora']:.2f} → {r['rank_s_p50_merged']:.2f} s",
            f"{r['rank_faster_x']:.2f}",
            f"{r['step_s_p50_lora']:.2f} → {r['step_s_p50_merged']:.2f} s",
            f"{r['step_faster_x']:.2f}",
            f"{r['mean_abs_logprob_gap_merged']:.3f} (base {r['mean_abs_logprob_gap_base']:.3f})",
            f"{r['same_pick_merged']:.0%} (base {r['same_pick_base']:.0%})",
        )
    Console().print(t)
    Path(args.out).write_text(json.dumps({"episodes": args.episodes, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
