"""Framework overhead vs model time: `python bench/agent_overhead.py [--episodes N] [--llm-steps N]`.

1. Scripted brain on the trivial corridor env: agent steps/s through the whole loop
   (perception + brain + parse + memory + step record), and the per-part cost.
2. Embedded LLMs (Gemma 3 270M, SmolLM2 135M): steps/s ranking actions, tokens/s generating,
   and success on the corridor task with likelihood ranking — which is the better default.
3. The overhead as a share of one embedded-LLM step.
Prints a table and writes bench/results/agent_overhead.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gymnasium as gym  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from agents.action import parse_react  # noqa: E402
from agents.brains.scripted import ScriptedBrain  # noqa: E402
from agents.core import Agent, run_episode  # noqa: E402
from agents.memory.base import MemoryItem  # noqa: E402
from agents.memory.working import WorkingMemory  # noqa: E402
from agents.perception import Perception  # noqa: E402
from tests.toy_env import ENV_ID  # noqa: E402


def per_call_us(fn, n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


def bench_overhead(episodes: int) -> dict:
    # checker off: this bench times the env's own steps, not the checker wrapper around them
    env = gym.make(ENV_ID, disable_env_checker=True, length=12, max_steps=200)
    steps = 0
    t0 = time.perf_counter()
    for seed in range(episodes):
        rec = run_episode(env, Agent(ScriptedBrain(epsilon=0.3), memory=WorkingMemory()), seed=seed, max_steps=200)
        steps += len(rec.steps)
    total = time.perf_counter() - t0
    # env alone, same number of steps (to subtract)
    obs, info = env.reset(seed=0)
    base = env.unwrapped
    t1 = time.perf_counter()
    for i in range(steps):
        obs, r, term, trunc, info = env.step(base.expert_action())
        if term or trunc:
            obs, info = env.reset(seed=i)
    env_time = time.perf_counter() - t1
    per = Perception()
    mem = WorkingMemory()
    for i in range(50):
        mem.add(MemoryItem(text=f"observation {i} " * 10, kind="observation", time=i))
    parts = {
        "perception_us": per_call_us(
            lambda: per.build(
                instruction="Find the key",
                observation=obs,
                available_actions=info["available_actions"],
                action_templates=info["action_templates"],
                memory_context="[action] move[left]\n" * 10,
            ),
            2000,
        ),
        "parse_us": per_call_us(lambda: parse_react("Thought: go on.\nAction: move[right]"), 5000),
        "memory_context_us": per_call_us(lambda: mem.build_context("q", 512, per.count_tokens), 2000),
    }
    rec_one = rec.steps[-1]
    parts["record_us"] = per_call_us(lambda: rec_one.model_copy(deep=True), 2000)
    loop_us = total / steps * 1e6
    return {
        "episodes": episodes,
        "steps": steps,
        "steps_per_s": steps / total,
        "loop_us_per_step": loop_us,
        "env_us_per_step": env_time / steps * 1e6,
        "overhead_us_per_step": loop_us - env_time / steps * 1e6,
        **parts,
    }


def bench_llm(model: str, steps: int, episodes: int) -> dict:
    from agents.brains.local import LocalBrain

    t = time.perf_counter()
    brain = LocalBrain(model=model, n_ctx=2048)
    load_s = time.perf_counter() - t
    # checker off: this bench times the env's own steps, not the checker wrapper around them
    env = gym.make(ENV_ID, disable_env_checker=True)
    lat, n_steps, successes = [], 0, 0
    t0 = time.perf_counter()
    for seed in range(episodes):
        rec = run_episode(env, Agent(brain, memory=WorkingMemory()), seed=seed, max_steps=12)
        lat += [s.latency_s for s in rec.steps]
        n_steps += len(rec.steps)
        successes += rec.outcome.success
    choose_s = time.perf_counter() - t0
    msgs = [{"role": "user", "content": "Write a short paragraph about walking through a corridor to find a key."}]
    gen_tok, gen_s = 0, 0.0
    for _ in range(max(1, steps // 10)):
        out = brain.complete(msgs, max_tokens=64, temperature=0.7)
        gen_tok += out.tokens_out
        gen_s += out.latency_s
    return {
        "model": model,
        "load_s": load_s,
        "choose_steps_per_s": n_steps / choose_s,
        "choose_step_ms_p50": statistics.median(lat) * 1000,
        "gen_tokens_per_s": gen_tok / gen_s if gen_s else 0.0,
        "corridor_success": successes / episodes,
        "corridor_episodes": episodes,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--episodes", type=int, default=300)
    ap.add_argument("--llm-episodes", type=int, default=10)
    ap.add_argument("--llm-steps", type=int, default=40)
    ap.add_argument("--models", default="gemma3-270m,smollm2-135m")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "agent_overhead.json"))
    args = ap.parse_args()
    console = Console()
    over = bench_overhead(args.episodes)
    llms = [bench_llm(m, args.llm_steps, args.llm_episodes) for m in args.models.split(",") if m]
    t = Table(title="Framework overhead (scripted brain, corridor env)")
    t.add_column("metric")
    t.add_column("value", justify="right")
    for k in (
        "steps",
        "steps_per_s",
        "loop_us_per_step",
        "env_us_per_step",
        "overhead_us_per_step",
        "perception_us",
        "parse_us",
        "memory_context_us",
        "record_us",
    ):
        v = over[k]
        t.add_row(k, f"{v:,.1f}" if isinstance(v, float) else str(v))
    console.print(t)
    t2 = Table(title="Embedded LLMs (rank available actions; free generation)")
    for c in ("model", "load s", "rank steps/s", "rank step p50 ms", "gen tok/s", "corridor success", "overhead share"):
        t2.add_column(c, justify="right")
    for r in llms:
        r["overhead_share_of_llm_step"] = over["overhead_us_per_step"] / 1e3 / r["choose_step_ms_p50"]
        t2.add_row(
            r["model"],
            f"{r['load_s']:.2f}",
            f"{r['choose_steps_per_s']:.2f}",
            f"{r['choose_step_ms_p50']:.0f}",
            f"{r['gen_tokens_per_s']:.0f}",
            f"{r['corridor_success']:.0%}",
            f"{r['overhead_share_of_llm_step']:.3%}",
        )
    console.print(t2)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"overhead": over, "llms": llms}, indent=2))
    console.print(f"wrote {out}")


if __name__ == "__main__":
    main()
