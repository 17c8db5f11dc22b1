"""Held-out success of the embedded policy before and after training:
`python bench/policy_heldout.py --policy base= --policy sft=runs/sft/adapter.gguf [--webshop N] [--faulttree N]`;
`python bench/policy_heldout.py --combine DIR [DIR ...]` merges episode files of several runs (extending a
table over more seeds, or runs split across processes) into one table with paired score differences.

Every policy plays the same held-out goals (WebShop's test split; fault trees' test split), seeds
fixed, with the main job's agent settings (transcript layout, ranked choice, sampling at the brain's
temperature), episodes interleaved across policies so machine noise hits them alike. Reports success,
mean score, steps, and step latency p50 per policy and env; writes
bench/results/policy_heldout.json and the episodes to bench/results/policy_heldout/<policy>-<env>.jsonl.
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
from rich.progress import Progress  # noqa: E402
from rich.table import Table  # noqa: E402

from agents.brains.local import LocalBrain  # noqa: E402
from agents.config import EnvConfig  # noqa: E402
from agents.core import run_episode  # noqa: E402
from agents.core.factory import build_agent, make_env  # noqa: E402
from agents.resolve import resolve_agent, resolve_env  # noqa: E402
from agents.trajectories.schema import EpisodeRecord  # noqa: E402
from bench.stats import ci95, wilson95  # noqa: E402

ENVS: dict[str, dict[str, Any]] = {
    "webshop": {"name": "webshop", "id": "agentsim/WebShop-v0", "max_steps": 15, "kwargs": {"split": "test"}},
    "faulttree": {"name": "faulttree", "id": "agentsim/FaultTree-v0", "max_steps": 40, "kwargs": {"split": "test"}},
}


def parse_policy(text: str) -> tuple[str, str | None]:
    name, _, adapter = text.partition("=")
    if not name:
        raise SystemExit(f"--policy wants name=adapter.gguf (or name= for the base model), got {text!r}")
    return name, adapter or None


def summarize(recs: list[EpisodeRecord]) -> dict[str, float]:
    lat = [s.latency_s for r in recs for s in r.steps]
    return {
        "episodes": len(recs),
        "success": sum(r.outcome.success for r in recs) / len(recs),
        "mean_score": 100 * statistics.mean(r.outcome.reward for r in recs),
        "mean_steps": statistics.mean(len(r.steps) for r in recs),
        "invalid_rate": sum(r.stats.invalid_actions + r.stats.parse_failures for r in recs) / max(1, len(lat)),
        "step_p50_s": statistics.median(lat) if lat else 0.0,
        "step_mean_s": statistics.mean(lat) if lat else 0.0,
        # what a policy costs per goal: a faster step can be eaten by more steps
        "model_s_per_episode": sum(lat) / len(recs),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--policy", action="append", default=[], help="name=path/to/adapter.gguf; name= is the base model")
    ap.add_argument("--webshop", type=int, default=100, help="held-out WebShop goals (test split)")
    ap.add_argument("--faulttree", type=int, default=100, help="held-out fault-tree entries (test split)")
    ap.add_argument("--first-seed", type=int, default=0, help="seeds first-seed .. first-seed+n-1 (extend a table)")
    ap.add_argument("--temperature", type=float, default=0.7, help="the main job's default (brain.temperature)")
    ap.add_argument(
        "--policy-temperature",
        action="append",
        default=[],
        metavar="NAME=T",
        help="policy NAME samples at T instead of --temperature (0 = argmax; the same adapter at two temperatures)",
    )
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads per brain (default: all cores)")
    ap.add_argument(
        "--merged",
        action="append",
        default=[],
        metavar="NAME",
        help="serve policy NAME's adapter merged into the weights",
    )
    ap.add_argument(
        "--compact",
        action="append",
        default=[],
        metavar="NAME",
        help="policy NAME sees compact turns (agent.perception.turn_style=compact; its adapter trained on them)",
    )
    ap.add_argument(
        "--sum",
        action="append",
        default=[],
        metavar="NAME",
        help="policy NAME ranks actions by summed logprob (brain score=sum), not the mean per token",
    )
    ap.add_argument(
        "--budget",
        action="append",
        default=[],
        metavar="NAME=TOKENS",
        help="policy NAME's prompt budget (agent.perception.budget_tokens; e.g. keep a fault tree whole)",
    )
    ap.add_argument(
        "--perception",
        action="append",
        default=[],
        metavar="NAME:KEY=VALUE",
        help="another perception option for policy NAME (e.g. d2:field_separator=' [SEP] ')",
    )
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "policy_heldout.json"))
    ap.add_argument(
        "--combine", nargs="+", metavar="DIR", help="merge <policy>-<env>.jsonl episode files; no new episodes"
    )
    args = ap.parse_args()
    if args.combine:
        combine([Path(d) for d in args.combine], Path(args.out))
        return
    policies = [parse_policy(p) for p in (args.policy or ["base="])]
    counts = {"webshop": args.webshop, "faulttree": args.faulttree}

    ranking = {name: "sum" if name in args.sum else "mean" for name, _ in policies}
    temperatures = {name: float(t) for name, t in (spec.split("=", 1) for spec in args.policy_temperature)}
    if set(temperatures) - {name for name, _ in policies}:
        ap.error(f"--policy-temperature names {sorted(set(temperatures) - {n for n, _ in policies})}, not a --policy")
    brains = {
        name: LocalBrain(
            adapter=adapter,
            temperature=temperatures.get(name, args.temperature),
            n_threads=args.threads,
            merge_adapter=name in args.merged,
            score=ranking[name],
        )
        for name, adapter in policies
    }
    budgets = {name: int(tokens) for name, tokens in (b.split("=", 1) for b in args.budget)}
    unknown = set(budgets) - set(brains)
    if unknown:
        ap.error(f"--budget names {sorted(unknown)}, not a --policy")

    extra: dict[str, dict[str, Any]] = {}
    for spec in args.perception:
        name, _, setting = spec.partition(":")
        key, eq, value = setting.partition("=")
        if name not in brains or not eq:
            ap.error(f"--perception {spec!r}: expected NAME:KEY=VALUE with NAME a --policy")
        extra.setdefault(name, {})[key] = int(value) if value.isdigit() else value

    def perception(name: str) -> dict[str, Any]:
        p: dict[str, Any] = {"turn_style": "compact"} if name in args.compact else {}
        if name in budgets:
            p["budget_tokens"] = budgets[name]
        return {**p, **extra.get(name, {})}

    agents = {
        name: build_agent(brain, resolve_agent({"perception": perception(name)} if perception(name) else {}), None)
        for name, brain in brains.items()
    }
    evaluated: dict[tuple[str, str], int] = {}  # prompt tokens llama.cpp evaluated (after KV-cache reuse)
    out_json = Path(args.out).with_suffix(".json")  # --out name or name.json: episodes go to name/
    out_dir = out_json.with_suffix("")
    out_dir.mkdir(parents=True, exist_ok=True)
    records: dict[tuple[str, str], list[EpisodeRecord]] = {}
    t0 = time.perf_counter()
    with Progress(console=Console(stderr=True)) as bar:
        for env_name, n in counts.items():
            if n <= 0:
                continue
            env = make_env(resolve_env(EnvConfig.model_validate(ENVS[env_name])))
            task = bar.add_task(env_name, total=n * len(policies))
            files = {name: (out_dir / f"{name}-{env_name}.jsonl").open("w") for name in agents}
            for seed in range(args.first_seed, args.first_seed + n):
                for name, agent in agents.items():
                    before = brains[name].runtime.prompt_tokens_evaluated
                    rec = run_episode(env, agent, seed=seed)
                    key = (name, env_name)
                    evaluated[key] = evaluated.get(key, 0) + brains[name].runtime.prompt_tokens_evaluated - before
                    records.setdefault(key, []).append(rec)
                    files[name].write(rec.model_dump_json() + "\n")
                    files[name].flush()
                    bar.advance(task)
            for f in files.values():
                f.close()
            env.close()

    rows = [
        {
            "env": env_name,
            "policy": name,
            "adapter": dict(policies)[name],
            "turn_style": "compact" if name in args.compact else "full",
            "budget_tokens": budgets.get(name),
            "perception": extra.get(name, {}),
            "score": ranking[name],
            "temperature": temperatures.get(name, args.temperature),
            **summarize(recs),
            "evaluated_per_step": evaluated[(name, env_name)] / max(1, sum(len(r.steps) for r in recs)),
        }
        for (name, env_name), recs in records.items()
    ]
    title = f"Held-out episodes, Gemma 3 270M (temperature {args.temperature}), seeds from {args.first_seed}"
    print_rows(title, rows)
    out_json.write_text(json.dumps({"wall_s": time.perf_counter() - t0, "rows": rows}, indent=2))
    Console().print(f"wrote {out_json}")


def print_rows(title: str, rows: list[dict[str, Any]]) -> None:
    table = Table(title=title)
    cols = ("env", "policy", "episodes", "success", "mean score", "steps", "invalid", "step p50 s", "evaluated / step")
    for col in cols:
        table.add_column(col, justify="left" if col in ("env", "policy") else "right")
    for row in rows:
        table.add_row(
            row["env"],
            row["policy"],
            str(row["episodes"]),
            f"{100 * row['success']:.1f}%"
            + (
                f" [{100 * row['success_ci95'][0]:.0f}, {100 * row['success_ci95'][1]:.0f}]"
                if "success_ci95" in row
                else ""
            ),
            f"{row['mean_score']:.1f}" + (f" ± {row['score_ci95']:.1f}" if "score_ci95" in row else ""),
            f"{row['mean_steps']:.1f}",
            f"{100 * row['invalid_rate']:.1f}%",
            f"{row['step_p50_s']:.2f}",
            f"{row['evaluated_per_step']:.0f}" if "evaluated_per_step" in row else "",
        )
    Console().print(table)


def combine(dirs: list[Path], out: Path) -> None:
    """One table from the episode files of several runs; an (env, policy, seed) seen twice is kept once."""
    episodes: dict[tuple[str, str], dict[int, EpisodeRecord]] = {}
    for d in dirs:
        for path in sorted(d.glob("*-*.jsonl")):
            policy, _, env_name = path.stem.rpartition("-")
            with path.open() as f:
                for line in f:
                    if line.strip():
                        rec = EpisodeRecord.model_validate_json(line)
                        episodes.setdefault((env_name, policy), {}).setdefault(rec.seed or 0, rec)
    if not episodes:
        raise SystemExit(f"no <policy>-<env>.jsonl episode files in {', '.join(map(str, dirs))}")
    rows: list[dict[str, Any]] = []
    for (env_name, policy), by_seed in sorted(episodes.items(), key=lambda kv: kv[0][0]):  # policies as first met
        recs = [by_seed[s] for s in sorted(by_seed)]
        _, ci = ci95([100 * r.outcome.reward for r in recs])
        rows.append(
            {
                "env": env_name,
                "policy": policy,
                "seeds": [min(by_seed), max(by_seed)],
                **summarize(recs),
                "score_ci95": ci,
                "success_ci95": wilson95(sum(r.outcome.success for r in recs), len(recs)),
            }
        )
    pairs = []
    for env_name in sorted({e for e, _ in episodes}):
        names = sorted(p for e, p in episodes if e == env_name)
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                common = sorted(set(episodes[(env_name, a)]) & set(episodes[(env_name, b)]))
                if not common:
                    continue
                pa, pb = episodes[(env_name, a)], episodes[(env_name, b)]
                mean, ci = ci95([100 * (pb[s].outcome.reward - pa[s].outcome.reward) for s in common])
                success_diff, success_ci = ci95(
                    [float(pb[s].outcome.success) - float(pa[s].outcome.success) for s in common]
                )
                pairs.append(
                    {
                        "env": env_name,
                        "minus": a,
                        "policy": b,
                        "paired_goals": len(common),
                        "score_diff": mean,
                        "ci95": ci,
                        "success_diff": success_diff,
                        "success_ci95": success_ci,
                    }
                )
    print_rows(f"Held-out episodes combined from {len(dirs)} runs", rows)
    for p in pairs:
        Console().print(
            f"{p['env']}: {p['policy']} - {p['minus']} = {p['score_diff']:+.1f} ± {p['ci95']:.1f} score, "
            f"{100 * p['success_diff']:+.1f} ± {100 * p['success_ci95']:.1f} points success (95%, {p['paired_goals']} paired goals)"
        )
    out.write_text(json.dumps({"combined_from": [str(d) for d in dirs], "rows": rows, "paired": pairs}, indent=2))
    plot_rows(rows, out.with_suffix(".png"))
    Console().print(f"wrote {out} and {out.with_suffix('.png')}")


def plot_rows(rows: list[dict[str, Any]], path: Path) -> None:
    """Mean score (with its 95% interval) and success per policy, one panel per env."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    envs = sorted({r["env"] for r in rows})
    fig, axes = plt.subplots(1, len(envs), figsize=(5 * len(envs), 4), squeeze=False)
    for ax, env_name in zip(axes[0], envs):
        sel = [r for r in rows if r["env"] == env_name]
        xs = range(len(sel))
        ax.bar(
            [x - 0.2 for x in xs],
            [r["mean_score"] for r in sel],
            0.4,
            yerr=[r.get("score_ci95", 0.0) for r in sel],
            capsize=4,
            label="mean score (95% interval)",
        )
        ax.bar([x + 0.2 for x in xs], [100 * r["success"] for r in sel], 0.4, label="success %")
        ax.set_xticks(list(xs), [f"{r['policy']}\n({r['episodes']} goals)" for r in sel])
        ax.set(title=f"{env_name}, held-out goals", ylabel="score / success (0-100)", ylim=(0, 100))
        ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
