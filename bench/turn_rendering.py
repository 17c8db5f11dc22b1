"""Can the prompt be cut without retraining? `python bench/turn_rendering.py [--episodes N] [--env E]`.

A WebShop step evaluates ~375 new prompt tokens, and three parts of a turn look redundant: the observation
restates the task (already in the system turn), the action list repeats what the page names, and an item page
is shown again unchanged after every option click. This replays the scripted expert's episodes (fresh seeds)
with each part cut from every turn, past and present, and asks the shipped adapter for the env to rank the
listed actions at temperature 0: how often its top pick is the expert's action (the quantity behaviour cloning
trained), the expert action's log-probability gap to the top pick, and the new turn's tokens (the cost a KV
cache pays per step). A cut that keeps the top-1 rate is free speed; one that loses it needs an adapter
retrained on that rendering. Prints a table; writes bench/results/turn_rendering.json.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402
from rich.progress import track  # noqa: E402
from rich.table import Table  # noqa: E402

from agents.brains.local import LocalBrain  # noqa: E402
from agents.catalog import DEFAULT_ADAPTER, ENV_ADAPTERS  # noqa: E402
from agents.core.agent import CHOOSE_PREFIX  # noqa: E402
from agents.engine import collect  # noqa: E402
from agents.trajectories import EpisodeRecord, TrajectoryStore  # noqa: E402
from bench.candidate_sharing import ENVS  # noqa: E402

ACTIONS_HEAD = "\n\nAvailable actions:\n"
Cut = Callable[[str, str, str | None], str]  # (user turn, task, previous raw user turn) -> the turn shown


def task_not_echoed(turn: str, task: str, prev: str | None) -> str:
    return turn.replace(task, "(the task above)") if len(task) > 20 else turn


def named_actions_not_listed(turn: str, task: str, prev: str | None) -> str:
    """List only the actions whose argument the observation does not already name (templates stay)."""
    obs, _, listed = turn.partition(ACTIONS_HEAD)
    if not listed:
        return turn
    keep = []
    for line in listed.strip("\n").split("\n"):
        m = re.match(r"^- \w+\[(.*)\]$", line)
        if m and m.group(1) != "..." and m.group(1).lower() in obs.lower():
            continue
        keep.append(line)
    return obs + ("\n\nOther actions:\n" + "\n".join(keep) + "\n" if keep else "\n\n")


def repeated_page_elided(turn: str, task: str, prev: str | None) -> str:
    return "Observation: unchanged.\n\n" if prev is not None and turn == prev else turn


VARIANTS: dict[str, list[Cut]] = {
    "as shipped": [],
    "task not echoed": [task_not_echoed],
    "page-named actions not listed": [named_actions_not_listed],
    "repeated page elided": [repeated_page_elided],
    "all three": [task_not_echoed, named_actions_not_listed, repeated_page_elided],
}


def render(messages: list[dict], task: str, cuts: list[Cut]) -> list[dict]:
    out, prev = [], None
    for m in messages:
        content = m["content"]
        if m["role"] == "user":
            raw = content
            for cut in cuts:
                content = cut(content, task, prev)
            prev = raw
        out.append({"role": m["role"], "content": content})
    return out


def expert_episodes(env: str, episodes: int, out: Path) -> list[EpisodeRecord]:
    cfg = {"env": {"name": env, "id": env, **ENVS[env]}, "brain": {"name": "scripted"}, "episodes": episodes}
    collect({**cfg, "out": str(out), "progress": False, "seed": 500}, Console(stderr=True, quiet=True))
    return sorted(TrajectoryStore(out / "trajectories.jsonl").read(), key=lambda e: e.seed)


def measure(brain: LocalBrain, episodes: list[EpisodeRecord], env: str) -> dict[str, dict]:
    rows: dict[str, dict] = {v: {"steps": 0, "top1": 0, "gap": [], "new_tokens": []} for v in VARIANTS}
    for ep in track(episodes, description=env):
        for name, cuts in VARIANTS.items():  # one variant's whole episode at a time: its KV prefix is reused
            r = rows[name]
            for st in ep.steps:
                cands = [c.text for c in st.candidates or []]
                if not st.messages or len(cands) < 2 or st.action not in cands:
                    continue
                msgs = render(st.messages, ep.instruction, cuts)
                out = brain.choose(msgs, cands, prefix=CHOOSE_PREFIX)
                lps = {c.text.removeprefix(CHOOSE_PREFIX).strip(): c.logprob for c in out.candidates}
                r["steps"] += 1
                r["top1"] += out.text.removeprefix(CHOOSE_PREFIX).strip() == st.action
                r["gap"].append(lps[st.action] - max(lps.values()))
                r["new_tokens"].append(len(brain.tokenize(msgs[-1]["content"])))
    return {
        name: {
            "steps": r["steps"],
            "expert_top1": r["top1"] / max(1, r["steps"]),
            "expert_logprob_gap": statistics.mean(r["gap"]),
            "new_turn_tokens": statistics.mean(r["new_tokens"]),
        }
        for name, r in rows.items()
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=12, help="scripted-expert episodes per env to replay")
    ap.add_argument("--env", action="append", choices=sorted(ENVS), help="default: webshop")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "turn_rendering.json"))
    args = ap.parse_args(argv)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for env in args.env or ["webshop"]:
            adapter = ENV_ADAPTERS.get(env, DEFAULT_ADAPTER)
            brain = LocalBrain(n_ctx=4096, seed=0, adapter=adapter, temperature=0.0)
            results[env] = {
                "adapter": adapter,
                "rows": measure(brain, expert_episodes(env, args.episodes, Path(tmp) / env), env),
            }
    t = Table(title="Cutting parts of every turn, shipped adapter, expert states (temperature 0)")
    for col in ("env", "rendering", "steps", "expert top-1", "expert gap", "new-turn tokens"):
        t.add_column(col, justify="right")
    for env, res in results.items():
        ref = res["rows"]["as shipped"]
        for name, r in res["rows"].items():
            t.add_row(
                env,
                name,
                f"{r['steps']}",
                f"{r['expert_top1']:.3f}",
                f"{r['expert_logprob_gap']:.2f}",
                f"{r['new_turn_tokens']:.0f} ({ref['new_turn_tokens'] / r['new_turn_tokens']:.2f}× fewer)",
            )
    Console().print(t)
    Path(args.out).write_text(json.dumps({"episodes": args.episodes, "results": results}, indent=2))


if __name__ == "__main__":
    main()
