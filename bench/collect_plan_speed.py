"""The end of a collection: matching the stored episodes against the plan, before and after issue 43's fix.

`run_engine` ends by keeping the stored episodes the plan wants (`ep.episode_id in plan.wanted_ids`).
`wanted_ids` was a property that rebuilt the set of every wanted id on each test, so finishing a run
of n episodes cost n set builds of n ids: quadratic. It is now built once (`cached_property`). Here
both are timed on the same plan and ids (the old one is the property's own function, called per test):

    python bench/collect_plan_speed.py [--episodes 10000]   # prints the table, writes bench/results/collect_plan_speed.json
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agents.collect.plan import Plan  # noqa: E402
from agents.collect.worker import episode_id  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "collect_plan_speed.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, nargs="+", default=[1000, 10_000])
    args = ap.parse_args()
    rows = []
    for n in args.episodes:
        seeds = list(range(n))
        stored = [episode_id("webshop", s) for s in seeds]
        plan = Plan("webshop", seeds, [], "x")
        t = time.perf_counter()
        old = [i for i in stored if i in Plan.wanted_ids.func(plan)]  # type: ignore[attr-defined]
        old_s = time.perf_counter() - t
        t = time.perf_counter()
        new = [i for i in stored if i in plan.wanted_ids]
        new_s = time.perf_counter() - t
        assert old == new
        rows.append({"episodes": n, "before_s": round(old_s, 4), "after_s": round(new_s, 5),
                     "speedup": round(old_s / max(new_s, 1e-9))})  # fmt: skip
    print(f"{'episodes':>9} {'before (s)':>11} {'after (s)':>10} {'ratio':>8}")
    for r in rows:
        print(f"{r['episodes']:>9,} {r['before_s']:>11.3f} {r['after_s']:>10.4f} {r['speedup']:>7,}x")
    RESULTS.write_text(
        json.dumps({"bench": "collect_plan_speed", "python": platform.python_version(), "rows": rows}, indent=1) + "\n"
    )
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
