"""Does a per-step evidence signal tell the episodes a self-improvement round keeps from lucky ones?
`python bench/policy_evidence.py --store runs/evol/round1/explore-faulttree --store data/expert-faulttree
[--prm faulttree=DIR]`

An AgentEvol round keeps explored episodes by outcome alone, and on fault trees the kept ones were early
diagnoses that happened to be right. Two signals that need no human labels are measured per episode:
expert agreement (`agents.policy.evidence`: the share of steps whose action was the env's scripted expert's
choice in that state) and, with `--prm ENV=DIR`, the promise at the last step of that env's PRM (`prm.dense.annotate`). For each
store: successes against failures, and the bar each signal would need to reject the failures.
Writes bench/results/policy_evidence.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from agents.policy.evidence import expert_agreement  # noqa: E402
from agents.policy.sft_data import read_episodes  # noqa: E402


def summarize(values: list[float]) -> dict[str, float]:
    a = np.asarray(values, dtype=float)
    if not len(a):
        return {"n": 0}
    return {"n": len(a), "mean": float(a.mean()), "min": float(a.min()), "max": float(a.max())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", action="append", required=True, help="a trajectory store (run folder or .jsonl)")
    ap.add_argument(
        "--prm", action="append", default=[], help="ENV=DIR: a PRM saved by prm.train that scores that env's episodes"
    )
    ap.add_argument("--max-episodes", type=int, default=200, help="per store")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "policy_evidence.json"))
    args = ap.parse_args()
    scorers = {}
    for spec in args.prm:
        env_name, sep, path = spec.partition("=")
        if not sep:
            raise SystemExit(f"--prm {spec!r}: expected ENV=DIR, e.g. faulttree=runs/prm-ft/best")
        from prm.model import PRMModel
        from prm.scoring import PRMScorer

        scorers[env_name] = PRMScorer(PRMModel.from_pretrained(path), batch_size=16)
    table = Table(title="Evidence per episode: successes against failures")
    for c in ("store", "episodes", "successes", "agreement (success)", "agreement (failure)", "PRM last (s / f)"):
        table.add_column(c, justify="left" if c == "store" else "right")
    result: dict = {"prm": dict(s.partition("=")[::2] for s in args.prm), "stores": {}}
    for store in args.store:
        eps = list(read_episodes([store]))[: args.max_episodes]
        agree = [expert_agreement(ep).share for ep in eps]
        success = [ep.outcome.success for ep in eps]
        row: dict = {
            "episodes": len(eps),
            "agreement_success": summarize([a for a, s in zip(agree, success) if s]),
            "agreement_failure": summarize([a for a, s in zip(agree, success) if not s]),
            "per_episode": [
                {"id": ep.episode_id, "reward": ep.outcome.reward, "success": s, "steps": len(ep.steps), "agreement": a}
                for ep, a, s in zip(eps, agree, success)
            ],
        }
        prm_cell = "-"
        scorer = scorers.get(eps[0].env) if eps else None
        if scorer is not None:
            from prm.dense import annotate

            last = [ep.steps[-1].prm_score for ep in annotate(scorer, eps)]
            for r, q in zip(row["per_episode"], last):
                r["prm_last"] = q
            row["prm_last_success"] = summarize([q for q, s in zip(last, success) if s and q is not None])
            row["prm_last_failure"] = summarize([q for q, s in zip(last, success) if not s and q is not None])
            ps, pf = row["prm_last_success"], row["prm_last_failure"]
            prm_cell = f"{ps.get('mean', float('nan')):.3f} / {pf.get('mean', float('nan')):.3f}"
        result["stores"][store] = row
        a_s, a_f = row["agreement_success"], row["agreement_failure"]
        table.add_row(
            "/".join(Path(store).parts[-2:]),
            str(len(eps)),
            str(sum(success)),
            f"{a_s.get('mean', float('nan')):.2f} [{a_s.get('min', float('nan')):.2f}, {a_s.get('max', float('nan')):.2f}]",
            f"{a_f.get('mean', float('nan')):.2f} [{a_f.get('min', float('nan')):.2f}, {a_f.get('max', float('nan')):.2f}]",
            prm_cell,
        )
    Console().print(table)
    Path(args.out).write_text(json.dumps(result, indent=2))
    Console().print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
