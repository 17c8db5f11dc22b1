"""How busy collection keeps the embedded LLM: collection tokens/s vs the model's solo tokens/s.

    nice python bench/collect_llm_bench.py [--episodes 6] [--max-steps 6] [--concurrency 1 4]

1. Collect WebShop episodes with `brain=local` (gemma3-270m, in-process llama.cpp) through the
   real collector at each concurrency; tokens/s = (prompt + scored/generated tokens) / wall.
2. Solo: replay exactly the same brain calls (same prompts, same candidate lists) on a fresh
   model in a tight loop, no env, no agent loop; tokens/s of the model alone.
The ratio says how much of the model's capacity collection uses. Writes
bench/results/collect_llm.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "bench" / "results" / "collect_llm.json"
log = logging.getLogger("collect_llm_bench")


def compose(overrides: list[str]) -> dict:
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(str(ROOT / "agents" / "conf"), version_base="1.3"):
        cfg = hydra_compose("collect", overrides=overrides)
    return OmegaConf.to_container(cfg, resolve=True)  # type: ignore[return-value]


def replay(brain, episodes) -> dict:
    """Re-issue every recorded brain call in order; the model's tokens/s with nothing else running."""
    from agents.core.agent import CHOOSE_PREFIX

    tokens = calls = 0
    t0 = time.perf_counter()
    for ep in episodes:
        for step in ep.steps:
            if step.candidates:
                out = brain.choose(
                    step.messages,
                    [c.text for c in step.candidates],
                    temperature=0.0,
                    prefix=CHOOSE_PREFIX,
                    seed=ep.seed * 1000 + step.index,
                )
            else:
                out = brain.complete(step.messages, max_tokens=256)
            tokens += out.tokens_in + out.tokens_out
            calls += 1
    wall = time.perf_counter() - t0
    return {"calls": calls, "tokens": tokens, "wall_s": wall, "tokens_per_s": tokens / wall}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--episodes", type=int, default=6)
    p.add_argument("--max-steps", type=int, default=6)
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 4])
    p.add_argument("--num-products", type=int, default=10_000)
    a = p.parse_args()
    logging.basicConfig(level=logging.INFO)
    os.environ.setdefault("AGENTSIM_CACHE", str(Path(tempfile.gettempdir()) / "agentsim-bench-cache"))
    from rich.console import Console

    from agents.brains.local import LocalBrain
    from agents.collect import collect
    from agents.trajectories import TrajectoryStore

    rows, recorded = [], None
    with tempfile.TemporaryDirectory() as d:
        for c in a.concurrency:
            out = Path(d) / f"c{c}"
            cfg = compose(
                [
                    "env=webshop",
                    f"+env.kwargs.num_products={a.num_products}",
                    "brain=local",
                    "memory=none",
                    f"episodes={a.episodes}",
                    f"max_steps={a.max_steps}",
                    f"concurrency={c}",
                    f"out={out}",
                    "progress=false",
                ]
            )
            r = collect(cfg, console=Console(stderr=True, quiet=True))
            eps = list(TrajectoryStore(out / "trajectories.jsonl").read())
            recorded = recorded or eps
            rows.append(
                {
                    "concurrency": c,
                    "episodes": r.completed,
                    "steps": r.summary.mean_steps * r.completed,
                    "tokens": r.summary.tokens_in + r.summary.tokens_out,
                    "wall_s": r.summary.wall_time_s,
                    "tokens_per_s": r.tokens_per_s,
                    "success_rate": r.summary.success_rate,
                }
            )
            log.info("concurrency %d: %.0f tokens/s", c, r.tokens_per_s)
    solo = replay(LocalBrain(model="gemma3-270m"), recorded)
    for row in rows:
        row["of_solo"] = row["tokens_per_s"] / solo["tokens_per_s"]
    result = {
        "benchmark": "collection with the embedded LLM (gemma3-270m, llama.cpp) vs the model alone",
        "env": "webshop",
        "num_products": a.num_products,
        "episodes": a.episodes,
        "max_steps": a.max_steps,
        "cpus": os.cpu_count(),
        "solo": solo,
        "rows": rows,
        "time": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2))

    from rich.table import Table

    t = Table(
        title=f"Embedded LLM: collection vs solo tokens/s (WebShop, {a.episodes} episodes x <= {a.max_steps} steps)"
    )
    for col in ("run", "episodes", "tokens", "wall s", "tokens/s", "of solo"):
        t.add_column(col, justify="right")
    t.add_row(
        "model alone (replay)",
        "-",
        f"{solo['tokens']:,}",
        f"{solo['wall_s']:.1f}",
        f"{solo['tokens_per_s']:,.0f}",
        "100%",
    )
    for r in rows:
        t.add_row(
            f"collect, concurrency {r['concurrency']}",
            str(r["episodes"]),
            f"{r['tokens']:,}",
            f"{r['wall_s']:.1f}",
            f"{r['tokens_per_s']:,.0f}",
            f"{r['of_solo']:.0%}",
        )
    Console(width=160).print(t)
    print(f"results: {RESULTS}")


if __name__ == "__main__":
    main()
