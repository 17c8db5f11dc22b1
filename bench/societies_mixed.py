"""LLM agents beside Deffuant agents: one seeded opinion society, played all-Deffuant and with LLM seats.

The same society twice (same seed, so the same Watts-Strogatz graph, starting opinions and
partner draws; Deffuant agents use no randomness, so only the seats' choices differ):

- `deffuant`: every agent follows Deffuant's bounded-confidence rule (threshold 0.2, mu 0.5);
- `mixed`: the same, but `--llm-seats` seats (drawn by the seed) are `agents.core.agent.Agent`s on
  the embedded model (`brain=local`: Gemma 3 270M GGUF, llama.cpp; it ranks the listed actions
  `keep` / `compromise`; `cache=on`, so a rerun into the same `--out` replays the calls).

Per round and at the end, side by side: polarization, major clusters, the modularity of the graph
split by opinion cluster (echo chambers), neighbour-opinion assortativity, and the mean opinion shift
|x_t - x_0| of the seat agents against the rule agents (in the all-Deffuant run the "seats" are the
same agents, played by the rule: the control). For the LLM seats also: what they chose, and how
often that was what Deffuant would have done with the same partner. LLM agent-steps/s is the seats'
decision time only (not the model load).

    python bench/societies_mixed.py               # table; bench/results/societies_mixed.json and .png
                                                  # (15 rounds: 36 min on 2 cores at load 5-7; see docs)
    python bench/societies_mixed.py --rounds 5 --llm-seats 4 --out /tmp/mixed
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "societies_mixed.json"
PLOT = RESULTS.with_suffix(".png")
log = logging.getLogger("bench.societies_mixed")
CURVES = ("polarization", "clusters", "modularity", "opinion_assortativity")
PROMPT_TOKENS = 2048  # a seat's prompt budget (agent.perception.budget_tokens)


def run_config(out: Path, args: argparse.Namespace, llm: bool) -> Any:
    """The run's `SocietyRunConfig`; the two runs differ only in the brain."""
    from agents.config import validate_config
    from societies.config import SocietyRunConfig

    # one cached prompt (KV slot) per seat, so each seat's growing transcript is evaluated only from its new turn;
    # fewer slots than seats would evict every prompt before its seat comes round again (LRU over a cycle)
    local = {
        "name": "local",
        "n_threads": args.threads,
        "temperature": args.temperature,
        "kv_slots": args.llm_seats,
        "n_seq": args.llm_seats + 4,  # + llama's own sequence + the scored candidates
        "n_ctx": PROMPT_TOKENS * (args.llm_seats + 1),
    }
    brain = local if llm else {"name": "rule"}
    return validate_config(
        SocietyRunConfig,
        {
            "out": str(out),
            "scenario": "opinion",
            "agents": args.agents,
            "rounds": args.rounds,
            "seed": args.seed,
            "graph": {"kind": "watts_strogatz", "degree": args.degree, "rewire": args.rewire},
            "opinion": {"model": "deffuant", "threshold": args.threshold, "mu": 0.5},
            "brain": brain,
            "llm_agents": args.llm_seats,
            "cache": "on",
            "max_concurrency": 1,  # one llama.cpp context: calls run one at a time anyway
            "trajectory_agents": 0,  # the seats are recorded regardless
            "agent": {"slot_fill": "generate", "perception": {"budget_tokens": PROMPT_TOKENS}},
            "plots": False,
        },
    )


def play(cfg: Any, seats: np.ndarray, threshold: float, label: str) -> dict[str, Any]:
    """Play one run round by round, recording the curves, the shifts and (with brain seats) the seats' choices."""
    from societies.run import SocietyRun
    from societies.scenarios.opinion import COMPROMISE, KEEP, STATE

    t0 = time.perf_counter()
    run = SocietyRun(cfg)
    load_s = time.perf_counter() - t0
    sc = run.sc
    is_seat = np.zeros(sc.n, dtype=bool)
    is_seat[seats] = True
    x0 = sc.x.copy()
    m0 = sc.metrics()
    rounds: list[dict[str, Any]] = [
        {"round": 0, **{k: m0.get(k) for k in CURVES}, "shift_seats": 0.0, "shift_rule": 0.0}
    ]
    choices = {"keep": 0, "compromise": 0, "opinion": 0, "no move": 0}
    agree = asked = 0
    try:
        for _ in tqdm(range(cfg.rounds), desc=label, unit="round", leave=False):
            if run.done:
                break
            active = seats[sc.is_active[seats]]
            partner = sc.partner[active]
            close = (partner >= 0) & (np.abs(sc.x[active] - sc.x[np.maximum(partner, 0)]) < threshold)
            result = run.play_round()
            code = dict(zip(result.moved.idx.tolist(), result.moved.code.tolist()))
            for i, c in zip(active.tolist(), close.tolist()):
                move = code.get(i, 0)
                choices[{KEEP: "keep", COMPROMISE: "compromise", STATE: "opinion"}.get(move, "no move")] += 1
                asked += 1
                agree += move == (COMPROMISE if c else KEEP)
            m = sc.metrics()
            shift = np.abs(sc.x - x0)
            rounds.append(
                {
                    "round": result.round,
                    **{k: m.get(k) for k in CURVES},
                    "shift_seats": float(shift[is_seat].mean()),
                    "shift_rule": float(shift[~is_seat].mean()),
                }
            )
        summary = run.finish()
    finally:
        run.close()
    out: dict[str, Any] = {
        "rounds": rounds,
        "final": rounds[-1],
        "seat_opinions": {"start": x0[seats].round(4).tolist(), "end": sc.x[seats].round(4).tolist()},
        "build_s": round(load_s, 2),
        "run_s": summary["run_s"],
    }
    if "brain" in summary:
        out["brain"] = summary["brain"]
        out["seat_choices"] = choices
        out["seat_agrees_with_deffuant"] = round(agree / asked, 3) if asked else None
    return out


def print_table(rule: dict[str, Any], mixed: dict[str, Any] | None, seats: int) -> None:
    """Per round, the two runs side by side (D = all Deffuant, M = mixed)."""
    head = (
        f"{'round':>5} | {'polarization D/M':>17} | {'clusters D/M':>12} | {'modularity D/M':>15} | "
        f"{'assort. D/M':>13} | {'shift seats D/M':>15} | {'shift rule D/M':>15}"
    )
    print(head)
    print("-" * len(head))
    other = mixed["rounds"] if mixed else [None] * len(rule["rounds"])
    for a, b in zip(rule["rounds"], other):

        def pair(key: str, fmt: str = ".3f") -> str:
            va = _fmt(a[key], fmt)
            return f"{va} / {_fmt(b[key], fmt) if b else '-'}"

        print(
            f"{a['round']:>5} | {pair('polarization'):>17} | {pair('clusters', '.0f'):>12} | "
            f"{pair('modularity'):>15} | {pair('opinion_assortativity'):>13} | {pair('shift_seats'):>15} | "
            f"{pair('shift_rule'):>15}"
        )
    if mixed and "brain" in mixed:
        b = mixed["brain"]
        print(
            f"\n{seats} LLM seats: {b['agent_steps']} agent-steps in {b['decide_s']:.1f} s = "
            f"{b['agent_steps_per_s']} agent-steps/s (model load and build {mixed['build_s']:.1f} s); "
            f"choices {mixed['seat_choices']}; same move as Deffuant {mixed['seat_agrees_with_deffuant']:.0%}; "
            f"cache {b['cache']}"
        )


def _fmt(v: float | None, fmt: str) -> str:
    return "nan" if v is None or (isinstance(v, float) and np.isnan(v)) else format(v, fmt)


def plot(rule: dict[str, Any], mixed: dict[str, Any] | None, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [*CURVES, "shift"]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.0 * len(panels), 3.4))
    for ax, key in zip(axes, panels):
        for run, name, colour in ((rule, "all Deffuant", "tab:blue"), (mixed, "LLM seats", "tab:red")):
            if run is None:
                continue
            r = [p["round"] for p in run["rounds"]]
            if key == "shift":
                ax.plot(r, [p["shift_seats"] for p in run["rounds"]], color=colour, ls="--", label=f"{name}: seats")
                ax.plot(r, [p["shift_rule"] for p in run["rounds"]], color=colour, label=f"{name}: rule agents")
            else:
                ax.plot(r, [np.nan if p[key] is None else p[key] for p in run["rounds"]], color=colour, label=name)
        ax.set_title("mean |x - x0|" if key == "shift" else key)
        ax.set_xlabel("round")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", type=int, default=60)
    ap.add_argument("--llm-seats", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threshold", type=float, default=0.2)
    ap.add_argument("--degree", type=float, default=6.0)
    ap.add_argument("--rewire", type=float, default=0.1)
    ap.add_argument("--threads", type=int, default=2, help="llama.cpp threads")
    ap.add_argument("--temperature", type=float, default=0.0, help="the seats' sampling (seeded; 0 = argmax)")
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "societies_mixed", help="run folders (LLM call cache)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    for noisy in ("societies.run", "societies.seats", "agents"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    from societies.seats import choose_seats

    seats = choose_seats(args.agents, 0.0, args.llm_seats, args.seed)
    load_before = os.getloadavg()
    log.info("all-Deffuant run")
    rule = play(run_config(args.out / "deffuant", args, llm=False), seats, args.threshold, "deffuant")
    mixed: dict[str, Any] | None = None
    error: str | None = None
    log.info("mixed run: %d seats on the embedded model", args.llm_seats)
    try:
        mixed = play(run_config(args.out / "mixed", args, llm=True), seats, args.threshold, "mixed")
    except Exception as e:  # a model that cannot load is reported as it is, never replaced by made-up numbers
        error = f"{type(e).__name__}: {e}"
        log.error("the mixed run failed: %s\n%s", error, traceback.format_exc())
    print_table(rule, mixed, args.llm_seats)
    title = (
        f"opinion, {args.agents} agents on Watts-Strogatz (k {args.degree:g}, p {args.rewire:g}), Deffuant "
        f"threshold {args.threshold:g}; {args.llm_seats} LLM seats vs all Deffuant (seed {args.seed})"
    )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    plot(rule, mixed, PLOT, title)
    RESULTS.write_text(
        json.dumps(
            {
                "setup": {**{k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}},
                "model": "gemma3-270m (GGUF, llama.cpp, choose = rank the listed actions)",
                "seats": seats.tolist(),
                "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                "load_average_before_after": [load_before, os.getloadavg()],
                "deffuant": rule,
                "mixed": mixed,
                "error": error,
            },
            indent=1,
        )
    )
    print(f"\nwrote {RESULTS.relative_to(ROOT)} and {PLOT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
