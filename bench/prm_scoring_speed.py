"""PRM scoring speed beside the raw batched forward pass of the same backbone, measured side by side in one run.

    python bench/prm_scoring_speed.py [--quick] [--threads N]

The PRM: MiniLM + the head (untrained: an untrained head costs the same), text windows of <= 384 tokens
(obs 100, instruction 64, action 16, focus). The data: WebShop (2,000 products, `text_rich`, test-split goals,
<= 15 steps) trajectories of the scripted expert at epsilon 0.5, and beam-search-like calls (4 states of those
paths, 4 sibling actions stepped at each: 16 children sharing 4 prefixes per `score_last` call).

Arms, each on exactly the same windows, interleaved chunk by chunk (the order rotating) and repeated, so a
noisy machine slows every arm alike:
  raw      the windows the scorer runs, length-sorted into batches of `--batch-size`, padded and collated
           beforehand; timed: `model.backbone(input_ids, attention_mask=<4D block-causal mask>)` only (the ceiling)
  torch    `PRMScorer` (its cache cleared before every call): tokenizing into windows, cache keys, collate,
           forward, head at the markers, numpy -- everything a caller pays
  torch-whole  the same with `share_prefix=False` (every window run whole), for the beam calls
  onnx     `PRMScorer(backend="onnx")`: the same on onnxruntime (export cached by model content)
tokens/s counts the real (non-pad) tokens of the windows; a shared prefix is counted once per window that
uses it (the work the caller gets done), so sharing can beat the raw ceiling. Ratios are per repeat (arms
side by side), the median over repeats reported. Writes bench/results/prm_scoring_speed.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch
from rich.console import Console
from rich.table import Table

RESULTS = ROOT / "bench" / "results"
ENV_ID = "agentsim/WebShop-v0"
T = TypeVar("T")
Arm = tuple[Callable[[], object], Callable[[], object]]  # (untimed preparation, timed call)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="a smaller run (under 2 minutes)")
    p.add_argument("--threads", type=int, default=2, help="torch and onnxruntime intra-op threads")
    p.add_argument("--goals", type=int, default=None, help="test-split goals (default 30; quick 6)")
    p.add_argument("--beam-calls", type=int, default=None, help="score_last calls (default 6; quick 2)")
    p.add_argument("--parents", type=int, default=4, help="states per beam call")
    p.add_argument("--siblings", type=int, default=4, help="sibling actions stepped per state")
    p.add_argument("--repeats", type=int, default=None, help="default 3")
    p.add_argument("--chunk", type=int, default=10, help="trajectories per score_trajectories call")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--products", type=int, default=2000)
    p.add_argument("--epsilon", type=float, default=0.5)
    p.add_argument("--max-steps", type=int, default=15)
    p.add_argument("--no-onnx", action="store_true")
    p.add_argument("--out", type=Path, default=RESULTS / "prm_scoring_speed.json")
    a = p.parse_args(argv)
    a.goals = a.goals or (6 if a.quick else 30)
    a.beam_calls = a.beam_calls or (2 if a.quick else 6)
    a.repeats = a.repeats or 3
    return a


# ---------------------------------------------------------------------------------------------- data
def make_data(args: argparse.Namespace):
    """ε-policy trajectories on test goals (as PRM trajectories) and beam-like `score_last` calls (lists of items)."""
    import envs  # noqa: F401
    from agents.brains.scripted import ScriptedBrain
    from envs.webshop.env import WebShopEnv
    from prm.episodes import from_record
    from prm.policy import BrainSampler, Sample, apply, rollout, start, to_episode

    env = WebShopEnv(num_products=args.products, split="test", observation_mode="text_rich")
    sampler = BrainSampler(ScriptedBrain(epsilon=args.epsilon), temperature=1.0, agent_cfg={"mode": "choose"})
    trajs, states = [], []
    for g in range(min(args.goals, len(env.goals))):
        root = start(env, options={"goal_index": g})
        path = [root]
        end, _ = rollout(env, sampler, root, seed=g, max_steps=args.max_steps, path=path)
        ep = to_episode(
            end,
            episode_id=f"test-g{g}",
            env_name="webshop",
            env_id=ENV_ID,
            seed=0,
            brain="scripted",
            env_kwargs={"num_products": args.products, "split": "test", "observation_mode": "text_rich"},
        )
        trajs.append(from_record(ep))
        states += [n for n in path if not n.done and len(n.info.get("available_actions") or []) >= 2]
    rng = random.Random(0)
    rng.shuffle(states)
    calls = []
    for c in range(args.beam_calls):
        items = []
        for node in states[c * args.parents : (c + 1) * args.parents]:
            acts = rng.sample(
                list(node.info["available_actions"]), min(args.siblings, len(node.info["available_actions"]))
            )
            items += [apply(env, node, Sample(a, "(sibling)"), args.max_steps).prm_item() for a in acts]
        calls.append(items)
    env.close()
    return trajs, [c for c in calls if c]


def unique_windows(model, windows):
    """The distinct windows (by token ids) the scorer would send to the model, longest first."""
    seen = {}
    for w in windows:
        seen.setdefault(tuple(w.ids), w)
    return sorted(seen.values(), key=lambda w: len(w.ids), reverse=True)


def traj_windows(model, trajs):
    return [w for i, t in enumerate(trajs) for w in model.steps.windows(t.instruction, t.observations, t.actions, i)]


def last_windows(model, items):
    return [model.steps.windows(i, list(o), list(a), traj=j, last_only=True)[0] for j, (i, o, a) in enumerate(items)]


# ---------------------------------------------------------------------------------------------- arms
def raw_arm(model, windows, batch_size: int) -> Arm:
    """The ceiling: pre-collated padded batches straight through the HF backbone with the 4D block-causal mask."""
    from prm.data import collate

    ws = unique_windows(model, windows)
    batches = [collate(ws[b : b + batch_size], model.steps.pad_id) for b in range(0, len(ws), batch_size)]

    def run() -> None:
        with torch.inference_mode():
            for batch in batches:
                model.backbone(input_ids=batch.input_ids, attention_mask=batch.attention_mask)

    return (lambda: None), run


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def interleave(chunks: list[dict[str, Arm]], repeats: int) -> tuple[dict[str, np.ndarray], dict]:
    """Seconds per (repeat, chunk) per arm: every chunk runs every arm back to back, the arm order rotating, so
    arms are compared side by side; also what each arm returned on the first repeat."""
    arms = list(chunks[0])
    secs = {a: np.zeros((repeats, len(chunks))) for a in arms}
    first: dict = {}
    turn = 0
    for r in range(repeats):
        for c, chunk in enumerate(chunks):
            order = arms[turn % len(arms) :] + arms[: turn % len(arms)]
            turn += 1
            for a in order:
                prepare, run = chunk[a]
                prepare()
                secs[a][r, c], out = timed(run)
                if r == 0:
                    first[(a, c)] = out
    return secs, first


def summarize(secs: dict[str, np.ndarray], tokens: list[int]) -> dict[str, dict]:
    """Per arm: tokens/s and the ratio to raw, (a) from each chunk's fastest repeat (interference only ever adds
    time) and (b) as the median of the ratios of side-by-side runs (same chunk, same repeat)."""
    total = sum(tokens)
    raw = secs["raw"]
    rows = {}
    for arm, s in secs.items():
        paired = (raw / s).ravel()
        best = float(s.min(axis=0).sum())
        rows[arm] = {
            "seconds": s.tolist(),
            "tokens_per_s_best": total / best,
            "tokens_per_s_median_repeat": float(np.median([total / x for x in s.sum(axis=1)])),
            "ratio_to_raw_best": float(raw.min(axis=0).sum()) / best,
            "ratio_to_raw_paired_median": float(np.median(paired)),
            "ratio_to_raw_paired_range": [float(paired.min()), float(paired.max())],
        }
    return rows


def max_diff(a: list, b: list) -> float:
    flat = lambda xs: np.concatenate([np.atleast_1d(np.asarray(x, dtype=np.float64)).ravel() for x in xs])  # noqa: E731
    return float(np.abs(flat(a) - flat(b)).max())


# ---------------------------------------------------------------------------------------------- breakdown
def breakdown(model, trajs, chunk: int, batch_size: int) -> dict:
    """Where an all-steps scoring call spends its time, part by part (one pass each, indicative), and padding."""
    from prm.data import collate

    st = model.steps
    saved = dict(st.cache)
    st.cache.clear()
    t_cold, _ = timed(lambda: traj_windows(model, trajs))
    st.cache.update(saved)
    t_warm, windows = timed(lambda: traj_windows(model, trajs))
    t_keys, _ = timed(lambda: [tuple(w.ids) for w in windows])
    ws = unique_windows(model, windows)
    parts = [ws[b : b + batch_size] for b in range(0, len(ws), batch_size)]
    t_collate, batches = timed(lambda: [collate(p, st.pad_id) for p in parts])
    with torch.inference_mode():
        t_forward, hidden = timed(
            lambda: [
                model.backbone(input_ids=b.input_ids, attention_mask=b.attention_mask).last_hidden_state
                for b in batches
            ]
        )
        t_head, _ = timed(
            lambda: [model.head(h[b.marker_mask]).squeeze(-1).float().cpu().numpy() for h, b in zip(hidden, batches)]
        )
    total = t_warm + t_keys + t_collate + t_forward + t_head
    # padding in the bench's calls (length-sorted batches of `batch_size`)
    real = padded = 0
    for c in range(0, len(trajs), chunk):
        lengths = [len(w.ids) for w in unique_windows(model, traj_windows(model, trajs[c : c + chunk]))]
        real += sum(lengths)
        padded += sum(lengths[b] * len(lengths[b : b + batch_size]) for b in range(0, len(lengths), batch_size))
    return {
        "windows_tokenize_cold_s": t_cold,
        "windows_warm_s": t_warm,
        "cache_keys_s": t_keys,
        "collate_and_mask_s": t_collate,
        "backbone_forward_s": t_forward,
        "head_gather_numpy_s": t_head,
        "share_of_warm_call": {
            "windows": t_warm / total,
            "keys": t_keys / total,
            "collate": t_collate / total,
            "forward": t_forward / total,
            "head": t_head / total,
        },
        "tokenize_cold_vs_forward": t_cold / t_forward,
        "real_tokens": real,
        "padding_waste": 1 - real / padded,
    }


# ---------------------------------------------------------------------------------------------- main
TRAJ = "trajectories: score_trajectories, all steps"
BEAM = "beam: score_last, siblings sharing prefixes"


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    console = Console()
    t_start = time.perf_counter()
    load0 = os.getloadavg()

    from prm.data import TextConfig
    from prm.model import PRMConfig, PRMModel
    from prm.scoring import PRMScorer

    text = TextConfig(max_length=384, obs_tokens=100, instruction_tokens=64, action_tokens=16, focus=True)
    torch.manual_seed(0)
    model = PRMModel.from_backbone(PRMConfig(base_backbone="minilm", text=text)).eval()
    trajs, calls = make_data(args)
    t_data = time.perf_counter() - t_start

    scorers: dict[str, PRMScorer] = {
        "torch": PRMScorer(model, batch_size=args.batch_size),
        "torch-whole": PRMScorer(model, batch_size=args.batch_size, share_prefix=False),
    }
    onnx_info: dict = {}
    if not args.no_onnx:
        from prm.onnx_scoring import model_digest, onnx_path

        onnx_info["cached"] = onnx_path(model_digest(model)).is_file()
        t0 = time.perf_counter()
        scorers["onnx"] = PRMScorer(model, batch_size=args.batch_size, backend="onnx", threads=args.threads)
        onnx_info["setup_s"] = time.perf_counter() - t0  # hashing the weights, export + check if not cached, session

    def fresh(name: str, call: Callable) -> Arm:
        s = scorers[name]
        return s.clear, lambda: call(s)  # its cache is cleared before every timed call (untimed)

    traj_chunks = [trajs[i : i + args.chunk] for i in range(0, len(trajs), args.chunk)]
    traj_arms = ["torch"] + (["onnx"] if "onnx" in scorers else [])
    beam_arms = ["torch", "torch-whole"] + (["onnx"] if "onnx" in scorers else [])
    tchunks = [
        {"raw": raw_arm(model, traj_windows(model, ch), args.batch_size)}
        | {a: fresh(a, lambda s, ch=ch: s.score_trajectories(ch)) for a in traj_arms}
        for ch in traj_chunks
    ]
    bchunks = [
        {"raw": raw_arm(model, last_windows(model, items), args.batch_size)}
        | {a: fresh(a, lambda s, items=items: s.score_last(items)) for a in beam_arms}
        for items in calls
    ]
    traj_tokens = [sum(len(w.ids) for w in unique_windows(model, traj_windows(model, ch))) for ch in traj_chunks]
    beam_tokens = [sum(len(w.ids) for w in unique_windows(model, last_windows(model, items))) for items in calls]
    console.print(
        f"[dim]{len(trajs)} trajectories ({sum(len(t) for t in trajs)} steps, {sum(traj_tokens)} window tokens, "
        f"{len(traj_chunks)} calls), {len(calls)} beam calls ({sum(len(c) for c in calls)} children, "
        f"{sum(beam_tokens)} window tokens); data {t_data:.1f}s, onnx {onnx_info}; threads {args.threads}, "
        f"load {load0[0]:.2f}[/dim]"
    )

    stats: dict[str, dict] = {}
    t_secs, t_out = interleave(tchunks, args.repeats)
    stats[TRAJ] = {a: vars(scorers[a].stats).copy() for a in traj_arms}
    for s in scorers.values():
        s.stats = type(s.stats)()
    b_secs, b_out = interleave(bchunks, args.repeats)
    stats[BEAM] = {a: vars(scorers[a].stats).copy() for a in beam_arms}
    agreement = {
        TRAJ: {
            a: max_diff(
                [x for c in range(len(tchunks)) for x in t_out[(a, c)]],
                [x for c in range(len(tchunks)) for x in t_out[("torch", c)]],
            )
            for a in traj_arms
            if a != "torch"
        },
        BEAM: {
            a: max_diff(
                [b_out[(a, c)] for c in range(len(bchunks))], [b_out[("torch-whole", c)] for c in range(len(bchunks))]
            )
            for a in beam_arms
            if a != "torch-whole"
        },
    }
    parts = breakdown(model, trajs, args.chunk, args.batch_size)
    load1 = os.getloadavg()

    results = {TRAJ: summarize(t_secs, traj_tokens), BEAM: summarize(b_secs, beam_tokens)}
    tokens = {TRAJ: sum(traj_tokens), BEAM: sum(beam_tokens)}
    table = Table(
        title=f"PRM scoring vs the raw forward pass: MiniLM, windows <= 384 tokens, {args.threads} threads, "
        f"{args.repeats} repeats interleaved"
    )
    for col in ("workload", "arm", "tokens/s", "ratio to raw", "paired ratio: median [range]", "model tokens"):
        table.add_column(col, justify="left" if col in ("workload", "arm") else "right")
    for work, rows in results.items():
        for arm, r in rows.items():
            st = stats[work].get(arm)
            lo, hi = r["ratio_to_raw_paired_range"]
            table.add_row(
                work if arm == "raw" else "",
                arm,
                f"{r['tokens_per_s_best']:,.0f}",
                f"{r['ratio_to_raw_best']:.2f}",
                f"{r['ratio_to_raw_paired_median']:.2f} [{lo:.2f}-{hi:.2f}]",
                "1.00" if st is None else f"{st['tokens'] / (tokens[work] * args.repeats):.2f}",
            )
    console.print(table)
    sh = parts["share_of_warm_call"]
    console.print(
        "tokens/s and ratio: each call's fastest repeat; paired: the same call, same repeat, back to back. "
        "model tokens: tokens the model computed per window token (shared prefixes run once)."
    )
    console.print(
        f"an all-steps call, part by part: forward {sh['forward']:.1%}, windows (warm token cache) {sh['windows']:.1%}, "
        f"collate+mask {sh['collate']:.1%}, head+gather {sh['head']:.1%}, cache keys {sh['keys']:.2%}; cold "
        f"tokenization {parts['tokenize_cold_vs_forward']:.1%} of the forward; padding {parts['padding_waste']:.1%} "
        "of the batched tokens"
    )
    console.print(
        "max |score difference|: "
        + "; ".join(
            f"{w.split(':')[0]}: " + ", ".join(f"{a} {d:.1e}" for a, d in v.items()) for w, v in agreement.items()
        )
        + " (trajectories vs torch, beam vs torch-whole)"
    )
    out = {
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "machine": {
            "cpus": os.cpu_count(),
            "loadavg_start": load0,
            "loadavg_end": load1,
            "python": platform.python_version(),
            "torch": torch.__version__,
            "onnxruntime": _version("onnxruntime"),
            "transformers": _version("transformers"),
        },
        "data": {
            "trajectories": len(trajs),
            "steps": sum(len(t) for t in trajs),
            "trajectory_window_tokens": sum(traj_tokens),
            "trajectory_calls": len(traj_chunks),
            "beam_calls": len(calls),
            "beam_children": sum(len(c) for c in calls),
            "beam_window_tokens": sum(beam_tokens),
        },
        "onnx": onnx_info,
        "results": results,
        "scorer_stats": stats,
        "breakdown": parts,
        "max_abs_score_diff": agreement,
        "wall_s": time.perf_counter() - t_start,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2))
    console.print(f"[dim]wrote {args.out} ({out['wall_s']:.0f}s)[/dim]")
    return out


def _version(name: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:
        return None


if __name__ == "__main__":
    main()
