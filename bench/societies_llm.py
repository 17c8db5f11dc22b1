"""LLM agents in a society: agent-steps/s of brain seats, one at a time vs batched async, in one run.

Every seat is an `agents.core.agent.Agent` on the embedded model (`brain=local`, Gemma 3 270M
GGUF via llama.cpp, ranking the listed actions). The same seeded society is played once per
mode, in this one process, with the call cache off (so every mode pays for every call):

- `sequential`: `max_concurrency=1`, the seats decide one after another on the sync path, one
  cached prompt (`kv_slots=0`, the brain's default): each seat's prompt re-evaluates from where
  it leaves the previous seat's;
- `sequential, kv slots`: the same with `brain.kv_slots=<agents>`: each seat's transcript stays in
  its own KV sequence, so a seat's next turn evaluates only what is new;
- `async x8, batched`: the seats' calls gathered with asyncio under a semaphore of 8 on one model
  instance; `LocalBrain.achoose` batches calls that arrive together (`batch_window_ms`);
- `async x8, batched + kv slots`: both: a round's new prompt tails go in one llama.cpp decode, and
  every seat's candidates in as few as fit;
- `async x8, pool 2`: two model instances with one thread each, so two seats decode at once;
- `replay`: the async run replayed from its call cache (`cache=replay`): no model call at all.

The model's solo limit is measured in the same process: one prompt of 512 tokens evaluated in
one decode (prompt tokens/s), and one token at a time (generation tokens/s). A row's `tok/s` is
the logical prompt + candidate tokens its seats were served per second of decision time.

Modes are interleaved and repeated (`--repeats`, order rotated each time) on a shared machine, each run in
a process of its own; a row is the repeat with the least decision time, and every repeat's time is in the JSON.
Only the seats' decision time counts (`decide_s`: prompts, brain calls, parsing), not the model
load (a warm-up load and decode comes first). `same actions` compares each mode's moves with the sequential run's.

    python bench/societies_llm.py                 # prints the table, writes bench/results/societies_llm.json
    python bench/societies_llm.py --agents 6 --rounds 2 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import shutil
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "societies_llm.json"
log = logging.getLogger("bench.societies_llm")


def play(out: Path, scenario: str, agents: int, rounds: int, **kw: Any) -> dict[str, Any]:
    """One run in a fresh process: runs in one process disturbed each other (a batched run took 76 s after
    other modes, 41-45 s in a process of its own, for the same tokens), so no mode inherits another's state."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(play_here, out, scenario, agents, rounds, **kw).result()


def play_here(out: Path, scenario: str, agents: int, rounds: int, **kw: Any) -> dict[str, Any]:
    from agents.config import validate_config
    from societies.config import SocietyRunConfig
    from societies.run import run_society

    cfg = validate_config(
        SocietyRunConfig,
        {
            "out": str(out),
            "scenario": scenario,
            "agents": agents,
            "rounds": rounds,
            "seed": 0,
            "plots": False,
            "trajectory_agents": 0,
            "brain": {"name": "local", "n_ctx": 8192, "temperature": 0.0, **kw.pop("brain", {})},  # room for every slot
            "cooperation": {"match_length": 4},
            **kw,
        },
    )
    t0 = time.perf_counter()
    s = run_society(cfg)
    s["total_s"] = time.perf_counter() - t0
    with sqlite3.connect(out / "events.sqlite") as db:
        s["moves"] = db.execute("SELECT round, agent, action, value FROM events ORDER BY round, agent").fetchall()
    return s


def warm_up_and_solo_limit() -> dict[str, float]:
    """Load the model once and decode once (so the first timed mode does not pay for reading the file), then
    the model's solo speed: a 512-token prompt in one decode, and 64 tokens decoded one at a time (best of 3)."""
    from agents.brains.local import LocalBrain

    brain = LocalBrain(n_ctx=2048)
    brain.choose([{"role": "user", "content": "Say yes or no."}], ["yes", "no"], prefix="Action: ")
    rt = brain.runtime
    text = " ".join(f"agent {i} sees rain and keeps its opinion" for i in range(200))
    tokens = brain.tokenize(text)[:512]
    prompt_s, gen_s = [], []
    for _ in range(3):
        rt.forget_after(0)
        t0 = time.perf_counter()
        rt.eval_after(0, tokens)
        prompt_s.append(time.perf_counter() - t0)
        rt.forget_after(0)
        t0 = time.perf_counter()
        for j, t in enumerate(tokens[:64]):
            rt.decode_rows([t], j)
        gen_s.append(time.perf_counter() - t0)
    del brain
    return {"prompt_tokens_per_s": round(len(tokens) / min(prompt_s), 1), "gen_tokens_per_s": round(64 / min(gen_s), 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--scenarios", nargs="+", default=["cooperation", "opinion"])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    cores = os.cpu_count() or 1
    slots = {"brain": {"kv_slots": min(args.agents, 14)}}  # n_seq 16: the rest score candidates
    modes: list[tuple[str, dict[str, Any]]] = [
        ("sequential", {"max_concurrency": 1, "cache": "off"}),
        ("sequential, kv slots", {"max_concurrency": 1, "cache": "off", **slots}),
        ("async x8, batched", {"max_concurrency": 8, "cache": "off"}),
        ("async x8, batched + kv slots", {"max_concurrency": 8, "cache": "off", **slots}),
        ("async x8, pool 2", {"max_concurrency": 8, "brain_pool": 2, "cache": "off"}),
    ]
    solo = warm_up_and_solo_limit()
    log.warning("solo limit: %s", solo)
    load_before = os.getloadavg()
    rows = []
    for scenario in args.scenarios:
        tmp = Path(tempfile.mkdtemp(prefix="societies_llm_"))
        try:
            runs: dict[str, list[dict[str, Any]]] = {label: [] for label, _ in modes}
            for rep in range(args.repeats):  # modes interleaved, order rotated: a busy neighbour hits all of them
                for label, kw in modes[rep % len(modes) :] + modes[: rep % len(modes)]:
                    name = f"{label}-{rep}".replace(" ", "_").replace(",", "")
                    runs[label].append(play(tmp / name, scenario, args.agents, args.rounds, **kw))
            base = best(runs["sequential"])
            for label, _ in modes:
                rows.append(row(scenario, label, best(runs[label]), base, runs[label], runs["sequential"]))
            # replay: a cached run, then the same run from its cache alone
            cached = tmp / "cached"
            play(cached, scenario, args.agents, args.rounds, max_concurrency=8, brain_pool=2)
            s = play(cached, scenario, args.agents, args.rounds, max_concurrency=8, brain_pool=2, cache="replay")
            rows.append(row(scenario, "replay from cache", s, base, [s], runs["sequential"]))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print_table(rows)
    print(
        f"\nsolo limit of the model here: {solo['prompt_tokens_per_s']:.0f} prompt tokens/s (512 in one decode), "
        f"{solo['gen_tokens_per_s']:.0f} tokens/s one at a time"
    )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "machine": {"cpus": cores, "python": platform.python_version(), "platform": platform.platform()},
                "model": "gemma3-270m (GGUF, llama.cpp, choose = rank the listed actions)",
                "agents": args.agents,
                "rounds": args.rounds,
                "repeats": args.repeats,
                "solo_limit": solo,
                "load_average_before_after": [load_before, os.getloadavg()],
                "rows": rows,
            },
            indent=1,
        )
    )
    print(f"\nwrote {RESULTS.relative_to(ROOT)}")


def best(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The repeat with the least decision time (the one a busy machine disturbed least)."""
    return min(runs, key=lambda s: s["brain"]["decide_s"])


def median(runs: list[dict[str, Any]]) -> float:
    return float(statistics.median(r["brain"]["decide_s"] for r in runs))


def row(
    scenario: str, label: str, s: dict[str, Any], base: dict[str, Any], runs: list[dict], base_runs: list[dict]
) -> dict[str, Any]:
    b, bb = s["brain"], base["brain"]
    same = sum(x == y for x, y in zip(s["moves"], base["moves"]))
    return {
        "scenario": scenario,
        "mode": label,
        "agent_steps": b["agent_steps"],
        "decide_s": b["decide_s"],
        "agent_steps_per_s": b["agent_steps_per_s"],
        "speedup": round(bb["decide_s"] / b["decide_s"], 2) if b["decide_s"] else None,
        "tokens_per_s": round((b["tokens_in"] + b["tokens_out"]) / b["decide_s"], 1) if b["decide_s"] else None,
        "brain_calls": b["cache"]["brain_calls"],
        "same_actions": f"{same}/{len(base['moves'])}",
        "decide_s_all_repeats": [r["brain"]["decide_s"] for r in runs],
        "speedup_of_medians": round(median(base_runs) / median(runs), 2) if base_runs else None,
        "final_metrics": s["final_metrics"],
    }


def print_table(rows: list[dict[str, Any]]) -> None:
    head = (
        f"{'scenario':<12} {'mode':<29} {'steps':>5} {'decide s':>9} {'steps/s':>8} {'speed-up':>8} "
        f"{'(medians)':>9} {'tok/s':>8} {'calls':>5}  same actions"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r['scenario']:<12} {r['mode']:<29} {r['agent_steps']:>5} {r['decide_s']:>9.2f} "
            f"{r['agent_steps_per_s']:>8.1f} {r['speedup']:>7.2f}x {r['speedup_of_medians']:>8.2f}x "
            f"{r['tokens_per_s']:>8.0f} {r['brain_calls']:>5}  "
            f"{r['same_actions']}"
        )


if __name__ == "__main__":
    main()
