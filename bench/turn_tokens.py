"""What a turn style costs per step, without a model: `python bench/turn_tokens.py [--episodes N]`.

The scripted expert (epsilon noise, seeded) plays the same held-out goals of each env with full and with compact
turns (`agent.perception.turn_style`); every step's prompt is tokenized with the embedded model's tokenizer.
Per step: the prompt's length and the tokens a KV cache that holds the previous step's prompt must evaluate
(those after the longest common prefix) -- the cost llama.cpp pays, measured on the rendering alone, so the
policy cannot confound it (bench/prompt_layout.py and bench/policy_heldout.py measure it with the LLM acting).
Prints a table; writes bench/results/turn_tokens.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from agents.brains.chat_templates import gemma  # noqa: E402
from agents.brains.llama.slot_table import common_prefix  # noqa: E402
from agents.brains.scripted import ScriptedBrain  # noqa: E402
from agents.config import EnvConfig  # noqa: E402
from agents.core import run_episode  # noqa: E402
from agents.core.factory import build_agent, make_env  # noqa: E402
from agents.policy.hf_model import inference_tokenizer  # noqa: E402
from agents.resolve import resolve_agent, resolve_env  # noqa: E402
from bench.policy_heldout import ENVS  # noqa: E402  (the held-out settings: same envs, splits, step limits)

STYLES = ("full", "compact")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=30, help="held-out goals per env (seeds 0..N-1)")
    ap.add_argument("--epsilon", type=float, default=0.2, help="the expert's noise (random valid actions)")
    ap.add_argument("--budget", type=int, default=2048, help="agent.perception.budget_tokens (the default: 2048)")
    ap.add_argument("--env", action="append", choices=sorted(ENVS), help="env(s) to run (default: all)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "turn_tokens.json"))
    args = ap.parse_args()
    llm = inference_tokenizer()

    def tok(text: str) -> list[int]:
        return llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    rows = []
    for env_name in args.env or list(ENVS):
        env_cfg = ENVS[env_name]
        env = make_env(resolve_env(EnvConfig.model_validate(env_cfg)))
        per: dict[str, dict[str, list[float]]] = {s: {"evaluated": [], "prompt": []} for s in STYLES}
        for seed in range(args.episodes):
            for style in STYLES:
                agent = build_agent(
                    ScriptedBrain(args.epsilon, seed=seed),
                    resolve_agent({"perception": {"turn_style": style, "budget_tokens": args.budget}}),
                    None,
                )
                rec = run_episode(env, agent, seed=seed, max_steps=env_cfg["max_steps"])
                prev: list[int] = []
                for step in rec.steps:
                    ids = tok(gemma(step.messages))
                    per[style]["evaluated"].append(len(ids) - common_prefix(prev, ids))
                    per[style]["prompt"].append(len(ids))
                    prev = ids
        env.close()
        base = statistics.mean(per["full"]["evaluated"])
        for style in STYLES:
            ev = per[style]["evaluated"]
            rows.append(
                {
                    "env": env_name,
                    "turn_style": style,
                    "steps": len(ev),
                    "evaluated_mean": statistics.mean(ev),
                    "evaluated_p50": statistics.median(ev),
                    "prompt_mean": statistics.mean(per[style]["prompt"]),
                    "fewer_x": base / statistics.mean(ev),
                }
            )
    table = Table(
        title=f"Prompt tokens a step evaluates (KV cache holding the last prompt); budget {args.budget}, "
        f"expert eps={args.epsilon}"
    )
    for c in ("env", "turns", "steps", "evaluated / step", "p50", "prompt tokens", "fewer x"):
        table.add_column(c, justify="left" if c in ("env", "turns") else "right")
    for r in rows:
        table.add_row(
            r["env"],
            r["turn_style"],
            str(r["steps"]),
            f"{r['evaluated_mean']:.0f}",
            f"{r['evaluated_p50']:.0f}",
            f"{r['prompt_mean']:.0f}",
            f"{r['fewer_x']:.2f}",
        )
    Console().print(table)
    Path(args.out).write_text(json.dumps({"config": vars(args), "rows": rows}, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
