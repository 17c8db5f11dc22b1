"""What serving a LoRA fine-tune costs per ranked step: `python bench/policy_adapter_speed.py [--reps N] [--adapter X.gguf]`.

The embedded brain ranks WebShop actions with and without a llama.cpp LoRA adapter (default: a
random r=8 PEFT LoRA on every attention and MLP projection of all 18 layers, converted with
`agents.policy.gguf_adapter`; the values do not matter for speed, the shapes do). Each rep is a
fresh WebShop step (a new goal: results page 2 after a search, ~13 candidate actions, the previous
page in the memory block, ~800 prompt tokens), so the KV cache reuses only the shared system
preamble, as between episodes. Both brains see the same prompt in the same rep, in alternating
order, so machine noise hits both alike. Prints a table and writes
bench/results/policy_adapter_speed.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

import envs  # noqa: E402,F401  (registers WebShop)
from agents.brains.base import Message  # noqa: E402
from agents.brains.local import LocalBrain  # noqa: E402
from agents.core.agent import CHOOSE_PREFIX  # noqa: E402
from agents.perception import Perception, PerceptionConfig  # noqa: E402

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def random_adapter(out: Path, rank: int) -> Path:
    """A PEFT LoRA with non-zero B on every projection, saved and converted to a llama.cpp GGUF."""
    import peft
    import torch

    from agents.policy.gguf_adapter import convert_peft_to_gguf
    from agents.policy.hf_model import load_hf_model

    torch.manual_seed(0)
    pm = peft.get_peft_model(load_hf_model(), peft.LoraConfig(r=rank, lora_alpha=2 * rank, target_modules=TARGETS))
    with torch.no_grad():
        for name, p in pm.named_parameters():
            if "lora_B" in name:
                p.normal_(0.0, 0.02)
    pm.save_pretrained(str(out / "peft"))
    return convert_peft_to_gguf(out / "peft", out / "adapter.gguf")


def webshop_steps(n: int, count_tokens: Any, budget: int) -> list[tuple[list[Message], list[str]]]:
    """`n` distinct ranked steps: WebShop goal `seed`, searched (expert query), then on results page 2."""
    env = gym.make("agentsim/WebShop-v0", disable_env_checker=True)
    perception = Perception(PerceptionConfig(budget_tokens=budget), count_tokens=count_tokens)
    steps = []
    for seed in range(n):
        _, info = env.reset(seed=seed)
        search = env.unwrapped.expert_action()
        page1, *_ = env.step(search)
        page2, _, _, _, info = env.step("click[next >]")
        memory = f"[action] {search}\n[observation] {page1}\n[action] click[next >]"
        percept = perception.build(
            instruction=info["instruction"],
            observation=page2,
            available_actions=info["available_actions"],
            action_templates=info["action_templates"],
            memory_context=memory,
        )
        steps.append((percept.messages, list(info["available_actions"])))
    env.close()
    return steps


def summary(xs: list[float]) -> dict[str, float]:
    a = np.array(xs) * 1e3
    return {
        "p50_ms": float(np.percentile(a, 50)),
        "p90_ms": float(np.percentile(a, 90)),
        "mean_ms": float(a.mean()),
        "min_ms": float(a.min()),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=30, help="timed steps per brain (after --warmup)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--adapter", default=None, help="a LoRA GGUF to time (default: a random r=--rank LoRA)")
    ap.add_argument("--rank", type=int, default=8)
    ap.add_argument("--budget", type=int, default=850, help="perception budget_tokens (sets the prompt length)")
    ap.add_argument("--n-seq", type=int, default=16, help="LocalBrain n_seq (candidates per decode)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "policy_adapter_speed.json"))
    args = ap.parse_args()
    console = Console()

    tmp = Path(tempfile.mkdtemp(prefix="adapter-bench-"))
    t = time.perf_counter()
    adapter = Path(args.adapter) if args.adapter else random_adapter(tmp, args.rank)
    build_s = time.perf_counter() - t
    brains: dict[str, LocalBrain] = {}
    load_s: dict[str, float] = {}
    for name, path in (("base", None), ("adapter", str(adapter))):
        t = time.perf_counter()
        brains[name] = LocalBrain(model="gemma3-270m", n_ctx=2048, n_seq=args.n_seq, adapter=path)
        load_s[name] = time.perf_counter() - t
    base = brains["base"]
    steps = webshop_steps(args.warmup + args.reps, base.count_tokens, args.budget)
    prompt_tokens = [len(base.tokenize(base.prompt_text(m))) for m, _ in steps]
    n_cands = [len(c) for _, c in steps]

    lat: dict[str, list[float]] = {k: [] for k in brains}
    picks_differ = 0
    load_before = os.getloadavg()[0]
    for i, (messages, cands) in enumerate(steps):
        order = list(brains) if i % 2 == 0 else list(reversed(brains))
        picked = {}
        for name in order:
            t = time.perf_counter()
            out = brains[name].choose(messages, cands, prefix=CHOOSE_PREFIX)
            dt = time.perf_counter() - t
            picked[name] = out.text
            if i >= args.warmup:
                lat[name].append(dt)
        if i >= args.warmup and picked["base"] != picked["adapter"]:
            picks_differ += 1
    load_after = os.getloadavg()[0]

    res = {
        "setup": {
            "model": "gemma3-270m (Q4_K_M)",
            "adapter": str(adapter)
            if args.adapter
            else f"random PEFT LoRA r={args.rank} on {','.join(TARGETS)}, all layers",
            "adapter_mb": adapter.stat().st_size / 2**20,
            "adapter_build_s": build_s,
            "reps": args.reps,
            "warmup": args.warmup,
            "n_seq": base.n_seq,
            "n_threads": os.cpu_count(),
            "prompt_tokens_mean": statistics.mean(prompt_tokens[args.warmup :]),
            "prompt_tokens_range": [min(prompt_tokens), max(prompt_tokens)],
            "candidates_mean": statistics.mean(n_cands),
            "load_avg_1min": [load_before, load_after],
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "(default)"),
        },
        "load_s": load_s,
        "base": summary(lat["base"]),
        "adapter": summary(lat["adapter"]),
        "adapter_over_base_p50": statistics.median(lat["adapter"]) / statistics.median(lat["base"]),
        "adapter_over_base_paired_median": statistics.median(a / b for a, b in zip(lat["adapter"], lat["base"])),
        "picks_differ": picks_differ,
    }

    table = Table(
        title=f"Rank step (LocalBrain.choose), {res['setup']['prompt_tokens_mean']:.0f} prompt tokens, "
        f"{res['setup']['candidates_mean']:.0f} candidates, {args.reps} fresh prompts"
    )
    for c in ("brain", "load s", "p50 ms", "p90 ms", "mean ms", "min ms", "vs base (p50)"):
        table.add_column(c, justify="right")
    for name in brains:
        s = res[name]
        ratio = 1.0 if name == "base" else res["adapter_over_base_p50"]
        table.add_row(
            name,
            f"{load_s[name]:.2f}",
            f"{s['p50_ms']:.0f}",
            f"{s['p90_ms']:.0f}",
            f"{s['mean_ms']:.0f}",
            f"{s['min_ms']:.0f}",
            f"{ratio:.2f}x",
        )
    console.print(table)
    console.print(
        f"paired per-prompt ratio (median): {res['adapter_over_base_paired_median']:.2f}x; adapter "
        f"{res['setup']['adapter_mb']:.1f} MB; picks differ on {picks_differ}/{args.reps} prompts; "
        f"load avg {load_before:.1f} -> {load_after:.1f} on {os.cpu_count()} cores"
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=2))
    console.print(f"wrote {out}")


if __name__ == "__main__":
    main()
