"""The held-out table can be extended over more seeds: `bench/policy_heldout.py --combine` merges runs."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"


def load_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("policy_heldout", ROOT / "bench" / "policy_heldout.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_combine_merges_seed_ranges_and_keeps_each_seed_once(tmp_path: Path) -> None:
    bench = load_bench()
    out = tmp_path / "combined.json"
    first, second = RESULTS / "policy_heldout", RESULTS / "policy_heldout_seeds30"
    bench.combine([first, second, first], out)  # the first run twice: its seeds must not count twice
    result = json.loads(out.read_text())
    rows = {(r["env"], r["policy"]): r for r in result["rows"]}
    n_first = sum(1 for line in (first / "sft-webshop.jsonl").open() if line.strip())
    n_second = sum(1 for line in (second / "sft-webshop.jsonl").open() if line.strip())
    assert rows[("webshop", "sft")]["episodes"] == n_first + n_second
    assert rows[("webshop", "sft")]["seeds"] == [0, n_first + n_second - 1]
    pair = next(p for p in result["paired"] if p["env"] == "webshop" and {p["minus"], p["policy"]} == {"base", "sft"})
    assert pair["paired_goals"] == n_first + n_second
    assert pair["ci95"] > 0
    png = out.with_suffix(".png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
