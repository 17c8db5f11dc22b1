"""What a decode costs when other prompts are resident in llama.cpp's unified KV cache.

    nice python bench/unified_kv_cost.py [--context 1200] [--tail 64] [--residents 0 1 3 7] [--reps 4]

Why: `agents.collect` at concurrency 8 with `brain=local` took 2.2x the wall time of concurrency 1 on
the same episodes, with `brain.kv_slots=8` (each episode's prompt kept in its own sequence) as with 0
(each episode's prompt evicting the others'). With kv_slots=0 the cause is plain: every step evaluates
its whole prompt again. With slots it is not re-evaluation; the suspect is attention: in a unified
KV cache every decoded token attends over the cells in use by *all* sequences (masked, but computed),
so eight resident 1,200-token prompts make each new token's attention ~8x longer.

The measurement: sequence 0 holds a `--context`-token prompt; `k` other sequences hold prompts of the
same length (different text); we time (a) decoding a `--tail`-token step after sequence 0's prompt and
(b) scoring 20 candidate actions on top of it, for each k, interleaved over `--reps` rounds. Prints a
table (time and the ratio to k=0) and writes bench/results/unified_kv_cost.json.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "bench" / "results" / "unified_kv_cost.json"
log = logging.getLogger("unified_kv_cost")

WORDS = (
    "instruction i need a pair of womens running shoes in size 8 that are machine washable and under 50 dollars "
    "search results page 1 of 5 b0 lightweight trail runner mesh breathable 39.99 b1 cushioned walking sneaker "
    "memory foam 45.00 b2 waterproof hiking boot leather 89.99 size 6 7 8 9 10 color black white navy teal "
    "description features reviews buy now back to search next prev click search"
).split()


def text_of(seed: int, n_words: int) -> str:
    """A WebShop-like text, different per seed (so resident prompts share no prefix with sequence 0's)."""
    import random

    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--context", type=int, default=1200, help="tokens each resident prompt (and sequence 0's) holds")
    p.add_argument("--tail", type=int, default=64, help="tokens a step adds after sequence 0's prompt")
    p.add_argument("--residents", type=int, nargs="+", default=[0, 1, 3, 7])
    p.add_argument("--reps", type=int, default=4)
    p.add_argument("--model", default="gemma3-270m")
    a = p.parse_args()
    logging.basicConfig(level=logging.INFO)
    from rich.console import Console
    from rich.table import Table

    from agents.brains.local import LocalBrain

    most = max(a.residents)
    brain = LocalBrain(model=a.model, n_ctx=max(4096, (most + 3) * (a.context + a.tail + 64)), n_seq=most + 8)
    rt = brain.runtime

    def tokens(seed: int, n: int) -> list[int]:
        toks = brain.tokenize(text_of(seed, n))
        while len(toks) < n:
            toks += brain.tokenize(" " + text_of(seed + 1000, n))
        return toks[:n]

    base = tokens(0, a.context)
    tail = tokens(1, a.tail)
    cands = [tokens(100 + i, 8) for i in range(20)]
    residents = [tokens(10 + s, a.context) for s in range(most)]
    rt.decode_batch([(0, 0, base, False)])
    scratch = list(range(1 + most, brain.n_seq))

    def fill(k: int) -> None:
        """Make exactly sequences 1..k hold their resident prompts."""
        for s in range(1, most + 1):
            have = rt.seq_length(s)
            if s <= k and have == 0:
                rt.decode_batch([(s, 0, residents[s - 1], False)])
            elif s > k and have:
                rt.drop_sequence(s)

    def step_time() -> float:
        t0 = time.perf_counter()
        rt.decode_batch([(0, a.context, tail, False)])
        dt = time.perf_counter() - t0
        rt.forget_after(a.context, 0)
        return dt

    def rank_time() -> float:
        t0 = time.perf_counter()
        for lo in range(0, len(cands), len(scratch)):
            group = cands[lo : lo + len(scratch)]
            rt.score_shared([(0, a.context, c) for c in group], first_seq=scratch[0])
            for s in scratch[: len(group)]:
                rt.drop_sequence(s)
        return time.perf_counter() - t0

    times: dict[int, dict[str, list[float]]] = {k: {"step": [], "rank": []} for k in a.residents}
    order = sorted(a.residents)
    for rep in range(a.reps):
        for k in order if rep % 2 == 0 else order[::-1]:  # up, then down: load drift hits every k alike
            fill(k)
            times[k]["step"].append(step_time())
            times[k]["rank"].append(rank_time())
        log.info("round %d/%d done", rep + 1, a.reps)

    rows = []
    s0 = statistics.median(times[order[0]]["step"])
    r0 = statistics.median(times[order[0]]["rank"])
    for k in order:
        s, r = statistics.median(times[k]["step"]), statistics.median(times[k]["rank"])
        rows.append(
            {
                "resident_prompts": k,
                "kv_cells_in_use": (k + 1) * a.context,
                "step_s": s,
                "rank_s": r,
                "step_vs_none": s / s0,
                "rank_vs_none": r / r0,
                "step_samples": times[k]["step"],
                "rank_samples": times[k]["rank"],
            }
        )
    result = {
        "benchmark": "decode cost with other prompts resident in llama.cpp's unified KV cache",
        "model": a.model,
        "context_tokens": a.context,
        "tail_tokens": a.tail,
        "candidates": len(cands),
        "reps": a.reps,
        "cpus": os.cpu_count(),
        "rows": rows,
        "time": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2))
    t = Table(
        title=f"{a.tail}-token step and 20-candidate ranking after a {a.context}-token prompt (median of {a.reps})"
    )
    for col in ("other prompts resident", "KV cells in use", "step s", "x none", "ranking s", "x none"):
        t.add_column(col, justify="right")
    for r in rows:
        t.add_row(
            str(r["resident_prompts"]),
            f"{r['kv_cells_in_use']:,}",
            f"{r['step_s']:.3f}",
            f"{r['step_vs_none']:.2f}",
            f"{r['rank_s']:.3f}",
            f"{r['rank_vs_none']:.2f}",
        )
    Console(width=140).print(t)
    print(f"results: {RESULTS}")


if __name__ == "__main__":
    main()
