"""Candidates that start alike, decoded once: `python bench/candidate_sharing.py [--episodes N]`.

The embedded brain ranks an env's listed actions by scoring each as a continuation of the prompt, and every
scored token costs a full 262k-word logits row. Candidates mostly begin alike (`click[b0...`, `check[...`), so
the brain decodes them as a prefix tree (`LlamaRuntime.score_shared`): a token several candidates share is
decoded once. This replays real steps (the scripted expert's episodes, recorded with their prompts) and times,
per step, evaluating the new turn of the prompt (from the previous step's cached prompt, as in an episode) and
ranking the candidates with the tree and one sequence per candidate, alternating which goes first. Prints a
table and writes bench/results/candidate_sharing.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402
from rich.progress import track  # noqa: E402
from rich.table import Table  # noqa: E402

from agents.brains.local import LocalBrain, scoring_texts  # noqa: E402
from agents.core.agent import CHOOSE_PREFIX  # noqa: E402
from agents.engine import collect  # noqa: E402
from agents.trajectories import TrajectoryStore  # noqa: E402
from bench.stats import ci95  # noqa: E402

ENVS = {"webshop": {"kwargs": {"split": "test"}}, "faulttree": {"kwargs": {"split": "test"}}}


def recorded_steps(env: str, episodes: int, out: Path) -> list[tuple[list[dict], list[str], int]]:
    """(prompt messages, candidate actions, episode) of every step of `episodes` scripted-expert episodes."""
    collect(
        {
            "env": {"name": env, "id": env, **ENVS[env]},
            "brain": {"name": "scripted"},
            "episodes": episodes,
            "out": str(out / env),
            "progress": False,
        },
        Console(stderr=True, quiet=True),
    )
    steps = []
    for k, ep in enumerate(sorted(TrajectoryStore(out / env / "trajectories.jsonl").read(), key=lambda e: e.seed)):
        for st in ep.steps:
            cands = [c.text for c in st.candidates or []]
            if st.messages and len(cands) > 1:
                steps.append((st.messages, cands, k))
    return steps


def measure(brain: LocalBrain, steps: list, label: str) -> dict:
    """Per step: the new turn's prompt evaluation, then the ranking with and without shared prefixes."""
    rt = brain.runtime
    prompt_s, tree_s, alone_s, tree_tok, alone_tok, agree = [], [], [], [], [], 0
    for n, (messages, cands, _) in enumerate(track(steps, description=label)):
        head, _ = scoring_texts(brain.prompt_text(messages), CHOOSE_PREFIX, "")
        t0 = time.perf_counter()
        brain.scorer.eval_context(brain.tokenize(head))  # the prompt as the episode extends it; both rankings reuse it
        prompt_s.append(time.perf_counter() - t0)
        picks = {}
        for share in (n % 2 == 0, n % 2 == 1):  # alternate which goes first
            brain.share_prefixes = share
            brain.ranker.rankings.clear()
            before, t0 = rt.candidate_tokens_decoded, time.perf_counter()
            out = brain.choose(messages, cands, prefix=CHOOSE_PREFIX)
            (tree_s if share else alone_s).append(time.perf_counter() - t0)
            (tree_tok if share else alone_tok).append(rt.candidate_tokens_decoded - before)
            picks[share] = out.text
        agree += picks[True] == picks[False]
    brain.share_prefixes = True
    step_alone = [p + a for p, a in zip(prompt_s, alone_s)]
    step_tree = [p + t for p, t in zip(prompt_s, tree_s)]
    return {
        "steps": len(steps),
        "candidates_per_step": statistics.mean(len(c) for _, c, _ in steps),
        "candidate_tokens_alone": statistics.mean(alone_tok),
        "candidate_tokens_tree": statistics.mean(tree_tok),
        "prompt_eval_s_p50": statistics.median(prompt_s),
        "rank_s_p50_alone": statistics.median(alone_s),
        "rank_s_p50_tree": statistics.median(tree_s),
        "rank_faster_x": statistics.mean(alone_s) / statistics.mean(tree_s),
        "rank_faster_x_per_step_ci": ci95([a / t for a, t in zip(alone_s, tree_s)]),
        "step_s_p50_alone": statistics.median(step_alone),
        "step_s_p50_tree": statistics.median(step_tree),
        "step_faster_x": statistics.mean(step_alone) / statistics.mean(step_tree),
        "same_argmax": agree / len(steps),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=6, help="scripted-expert episodes per env to replay")
    ap.add_argument("--env", action="append", choices=sorted(ENVS), help="default: both")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "candidate_sharing.json"))
    args = ap.parse_args(argv)
    brain = LocalBrain(n_ctx=4096, seed=0, adapter="agentsim-sft")
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for env in args.env or sorted(ENVS):
            rows[env] = measure(brain, recorded_steps(env, args.episodes, Path(tmp)), env)
    t = Table(title="Ranking a step's candidates: one sequence each vs shared prefixes (same run, interleaved)")
    for col in ("env", "steps", "cands/step", "cand tokens", "rank p50", "rank ×", "step p50", "step ×", "same pick"):
        t.add_column(col, justify="right")
    for env, r in rows.items():
        t.add_row(
            env,
            f"{r['steps']}",
            f"{r['candidates_per_step']:.1f}",
            f"{r['candidate_tokens_alone']:.0f} → {r['candidate_tokens_tree']:.0f}",
            f"{r['rank_s_p50_alone']:.2f} → {r['rank_s_p50_tree']:.2f} s",
            f"{r['rank_faster_x']:.2f}",
            f"{r['step_s_p50_alone']:.2f} → {r['step_s_p50_tree']:.2f} s",
            f"{r['step_faster_x']:.2f}",
            f"{r['same_argmax']:.0%}",
        )
    Console().print(t)
    Path(args.out).write_text(json.dumps({"episodes": args.episodes, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
