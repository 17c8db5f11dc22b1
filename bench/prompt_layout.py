"""Prompt layout vs the embedded model's cost per step: `python bench/prompt_layout.py [--episodes N]`.

The same WebShop goals under several layouts, episodes interleaved so machine noise hits all alike:
- `single + working memory` (the layout before the transcript): one user turn rebuilt every step,
  the last observations in a sliding memory window between the task and the observation;
- `transcript` (the default) at the default prompt budget, and at a larger one.
`--turns ADAPTER` adds the turn styles, each with the adapter trained on it: full turns with the
shipped behaviour-cloned adapter, compact turns (`agent.perception.turn_style=compact`) with ADAPTER, as they
are and with WebShop's ` [SEP] ` field separators as line breaks (`agent.perception.field_separator`).
Per step: prompt tokens llama.cpp actually evaluated (after KV-cache prefix reuse), the prompt's
length, and the brain's latency. Prints a table with ratios to the old layout and writes
bench/results/prompt_layout.json (or --out).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402
from rich.progress import track  # noqa: E402
from rich.table import Table  # noqa: E402

from agents.brains.local import LocalBrain  # noqa: E402
from agents.catalog import DEFAULT_ADAPTER  # noqa: E402
from agents.config import EnvConfig, MemoryConfig  # noqa: E402
from agents.core import run_episode  # noqa: E402
from agents.core.agent import Agent, Decision  # noqa: E402
from agents.core.factory import build_agent, build_memory, make_env  # noqa: E402
from agents.resolve import resolve_agent  # noqa: E402

WEBSHOP_FIELDS = " [SEP] "
LAYOUTS: dict[str, dict[str, Any]] = {
    "single + working memory (before)": {
        "agent": {"perception": {"layout": "single", "budget_tokens": 2048}},
        "memory": {"name": "working"},
    },
    "transcript, budget 2048 (default)": {"agent": {"perception": {"layout": "transcript", "budget_tokens": 2048}}},
    "transcript, budget 3072": {"agent": {"perception": {"layout": "transcript", "budget_tokens": 3072}}},
}


class Metered:
    """Wraps `agent.decide` to record, per step, prompt tokens evaluated and latency."""

    def __init__(self, agent: Agent, brain: LocalBrain) -> None:
        self.agent, self.brain = agent, brain
        self.evaluated: list[int] = []
        self.latency: list[float] = []
        self.prompt_len: list[int] = []
        inner = agent.decide

        def decide(observation: str, info: dict[str, Any]) -> Decision:
            before = brain.runtime.prompt_tokens_evaluated
            d = inner(observation, info)
            self.evaluated.append(brain.runtime.prompt_tokens_evaluated - before)
            self.latency.append(d.output.latency_s)
            self.prompt_len.append(len(brain.tokenize(brain.prompt_text(d.percept.messages))))
            return d

        agent.decide = decide  # type: ignore[method-assign]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--episodes", type=int, default=8)
    ap.add_argument("--max-steps", type=int, default=15)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--turns", metavar="ADAPTER", help="compare full vs compact turns, compact with this adapter")
    ap.add_argument("--split", default=None, help="WebShop goal split (default: the env's)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "prompt_layout.json"))
    args = ap.parse_args()

    layouts = dict(LAYOUTS)
    if args.turns:
        layouts = {
            "single + working memory (before)": LAYOUTS["single + working memory (before)"],
            f"transcript, full turns + {DEFAULT_ADAPTER}": {"agent": {}, "adapter": DEFAULT_ADAPTER},
            f"transcript, compact turns + {Path(args.turns).name}": {
                "agent": {"perception": {"turn_style": "compact"}},
                "adapter": args.turns,
            },
            f"compact turns, fields on lines + {Path(args.turns).name}": {
                "agent": {"perception": {"turn_style": "compact", "field_separator": WEBSHOP_FIELDS}},
                "adapter": args.turns,
            },
        }
    brains: dict[str | None, LocalBrain] = {}
    env_kwargs = {"split": args.split} if args.split else {}
    env = make_env(
        EnvConfig(name="webshop", id="agentsim/WebShop-v0", kwargs=env_kwargs), max_episode_steps=args.max_steps
    )
    meters: dict[str, Metered] = {}
    scores: dict[str, list[float]] = {name: [] for name in layouts}
    successes: dict[str, list[bool]] = {name: [] for name in layouts}
    for name, spec in layouts.items():
        adapter = spec.get("adapter")
        if adapter not in brains:
            brains[adapter] = LocalBrain(temperature=0.7, adapter=adapter)
        brain = brains[adapter]
        memory = build_memory(MemoryConfig.model_validate(spec["memory"]), brain) if spec.get("memory") else None
        meters[name] = Metered(build_agent(brain, resolve_agent(spec["agent"]), memory), brain)
    t0 = time.perf_counter()
    for seed in track(range(args.first_seed, args.first_seed + args.episodes), description="goals"):
        for name, m in meters.items():
            rec = run_episode(env, m.agent, seed=seed)
            scores[name].append(rec.outcome.reward)
            successes[name].append(rec.outcome.success)
    wall = time.perf_counter() - t0

    base = next(iter(meters.values()))
    base_eval, base_p50 = statistics.mean(base.evaluated), statistics.median(base.latency)
    table = Table(title=f"Prompt layout: WebShop, Gemma 3 270M, {args.episodes} goals each, interleaved")
    cols = (
        "layout",
        "steps",
        "prompt tokens",
        "evaluated / step",
        "fewer ×",
        "step p50 s",
        "faster ×",
        "score",
        "success",
    )
    for col in cols:
        table.add_column(col, justify="left" if col == "layout" else "right")
    rows = []
    for name, m in meters.items():
        row = {
            "layout": name,
            "steps": len(m.evaluated),
            "prompt_tokens_mean": statistics.mean(m.prompt_len),
            "evaluated_per_step_mean": statistics.mean(m.evaluated),
            "evaluated_per_step_p50": statistics.median(m.evaluated),
            "fewer_x": base_eval / statistics.mean(m.evaluated),
            "step_p50_s": statistics.median(m.latency),
            "step_mean_s": statistics.mean(m.latency),
            "faster_x": base_p50 / statistics.median(m.latency),
            "mean_score": statistics.mean(scores[name]),
            "success_rate": statistics.mean(successes[name]),
            "scores": scores[name],
        }
        rows.append(row)
        table.add_row(
            name,
            str(row["steps"]),
            f"{row['prompt_tokens_mean']:.0f}",
            f"{row['evaluated_per_step_mean']:.0f}",
            f"{row['fewer_x']:.2f}",
            f"{row['step_p50_s']:.2f}",
            f"{row['faster_x']:.2f}",
            f"{row['mean_score']:.2f}",
            f"{row['success_rate']:.2f}",
        )
    Console().print(table)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"episodes": args.episodes, "first_seed": args.first_seed, "split": args.split, "wall_s": wall}
    out.write_text(json.dumps({**meta, "rows": rows}, indent=2))
    Console().print(f"wrote {out}")


if __name__ == "__main__":
    main()
