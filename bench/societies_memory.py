"""A society run's estimated memory (`societies.budget`) against its measured peak RSS, per scenario and size.

`societies.run` refuses a run whose estimate is over the memory available, so the estimate must
never be below what a run really takes. Each row runs `python -m societies.run` in its own process
(peak RSS from `wait4`, that process's alone) over the sizes that drive the terms: agents, graph
kind, rounds, recorded agents, the Parquet event buffer, the town's residents.

    python bench/societies_memory.py            # prints the table, writes bench/results/societies_memory.json
    python bench/societies_memory.py --quick    # the first rows only
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from societies.budget import estimate, human  # noqa: E402
from societies.config import SocietyRunConfig  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "societies_memory.json"
ROWS: list[dict[str, str]] = [
    {"scenario": "opinion", "agents": "2", "rounds": "1"},
    {"scenario": "opinion", "agents": "10000", "rounds": "20"},
    {"scenario": "diffusion", "agents": "10000", "rounds": "20"},
    {"scenario": "cooperation", "agents": "1000", "rounds": "10"},
    {"scenario": "public_goods", "agents": "1000", "rounds": "10"},
    {"scenario": "feed", "agents": "10000", "rounds": "10"},
    {"scenario": "town", "agents": "25", "rounds": "16"},
    {"scenario": "opinion", "agents": "1000000", "rounds": "20"},
    {"scenario": "diffusion", "agents": "1000000", "rounds": "20"},
    {"scenario": "diffusion", "agents": "300000", "rounds": "20", "event_log": "parquet"},
    {"scenario": "cooperation", "agents": "100000", "rounds": "10"},
    {"scenario": "public_goods", "agents": "100000", "rounds": "10"},
    {"scenario": "feed", "agents": "100000", "rounds": "20"},
    {"scenario": "town", "agents": "2000", "rounds": "16"},
    {"scenario": "opinion", "agents": "20000", "rounds": "10", "graph.kind": "watts_strogatz"},
    {"scenario": "diffusion", "agents": "20000", "rounds": "10", "graph.kind": "barabasi_albert"},
    {"scenario": "opinion", "agents": "5000", "rounds": "200", "trajectory_agents": "2000"},
    {"scenario": "opinion", "agents": "100", "rounds": "3000", "plots": "false"},
    {"scenario": "opinion", "agents": "2000000", "rounds": "10", "plots": "false"},
    {"scenario": "feed", "agents": "20000", "rounds": "10", "feed.p_post": "0.5", "feed.p_repost": "0.5"},
    {"scenario": "town", "agents": "5000", "rounds": "16", "plots": "false"},
]
QUICK = 7


def measure(keys: dict[str, str], out: Path) -> tuple[float, float]:
    """(peak RSS in bytes, wall seconds) of one `python -m societies.run` with these keys."""
    args = [f"{k}={v}" for k, v in keys.items()] + [f"out={out}", "log_level=WARNING"]
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "societies.run", *args], cwd=ROOT, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"societies.run {' '.join(args)} exited {proc.returncode}")
    return usage.ru_maxrss * 1024.0, time.perf_counter() - t


def config_of(keys: dict[str, str]) -> SocietyRunConfig:
    plain: dict = {"out": "x"}
    for k, v in keys.items():
        head, _, tail = k.partition(".")
        if tail:
            plain.setdefault(head, {})[tail] = v
        else:
            plain[k] = v
    return SocietyRunConfig.model_validate(plain)


def write(rows: list[dict]) -> None:
    """The results file, rewritten after every row (a run cut short keeps what it measured)."""
    ratios = [r["ratio"] for r in rows]
    RESULTS.write_text(
        json.dumps(
            {
                "bench": "societies_memory",
                "python": platform.python_version(),
                "cpus": os.cpu_count(),
                "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "underestimated": sum(x < 1 for x in ratios),
                "min_ratio": min(ratios),
                "max_ratio": max(ratios),
                "rows": rows,
            },
            indent=1,
        )
        + "\n"  # fmt: skip
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rows", type=int, nargs="*", help="only these rows (0-based), merged into the results file")
    args = ap.parse_args()
    rows: list[dict] = []
    if args.rows and RESULTS.exists():  # keep the other rows' measurements
        wanted = [ROWS[i] for i in args.rows]
        rows = [r for r in json.loads(RESULTS.read_text())["rows"] if r["keys"] not in wanted]
    print(f"{'run':<62} {'estimate':>10} {'measured':>10} {'est/meas':>9}")
    with tempfile.TemporaryDirectory(prefix="societies-memory-") as tmp:
        chosen = [ROWS[i] for i in args.rows] if args.rows else ROWS[:QUICK] if args.quick else ROWS
        for i, keys in enumerate(chosen):
            est = estimate(config_of(keys))
            peak, wall = measure(keys, Path(tmp) / f"r{i}")
            ratio = est.total / peak
            name = " ".join(f"{k}={v}" for k, v in keys.items())
            print(f"{name:<62} {human(est.total):>10} {human(peak):>10} {ratio:>8.2f}x")
            rows.append({"keys": keys, "estimate_bytes": est.total, "peak_rss_bytes": int(peak), "ratio": round(ratio, 3),
                         "wall_s": round(wall, 2), "terms": est.terms})  # fmt: skip
            rows.sort(key=lambda r: ROWS.index(r["keys"]) if r["keys"] in ROWS else len(ROWS))
            write(rows)
    ratios = [r["ratio"] for r in rows]
    print(f"{len(rows)} runs; estimate / measured from {min(ratios):.2f}x to {max(ratios):.2f}x; "
          f"under-estimated: {sum(x < 1 for x in ratios)}")  # fmt: skip
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
