"""The held-out table can be extended over more seeds: `bench/policy_heldout.py --combine` merges runs."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def load_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("policy_heldout", ROOT / "bench" / "policy_heldout.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def collect(out: Path, seed: int, max_steps: int) -> Path:
    """Four real scripted-expert WebShop episodes; a short step limit makes a weaker 'policy' to pair against."""
    cmd = [sys.executable, "-m", "agents.collect", "env=webshop", "brain=scripted", "episodes=4", f"seed={seed}"]
    subprocess.run([*cmd, f"max_steps={max_steps}", f"out={out}"], cwd=ROOT, check=True, capture_output=True)
    return out / "trajectories.jsonl"


def heldout_run(run: Path, seed: int, short_steps: int, tmp_path: Path) -> Path:
    """A folder laid out as bench/policy_heldout.py writes one: <policy>-<env>.jsonl per policy."""
    run.mkdir()
    collect(tmp_path / f"expert{seed}", seed, 15).rename(run / "expert-webshop.jsonl")
    collect(tmp_path / f"short{seed}", seed, short_steps).rename(run / "short-webshop.jsonl")
    return run


def test_combine_merges_seed_ranges_and_keeps_each_seed_once(tmp_path: Path) -> None:
    bench = load_bench()
    out = tmp_path / "combined.json"
    # seeds 0-3 with the short policy cut at 3 steps (it never buys), seeds 4-7 at 6 steps (it mostly does)
    first = heldout_run(tmp_path / "first", 0, 3, tmp_path)
    second = heldout_run(tmp_path / "second", 4, 6, tmp_path)
    bench.combine([first, second, first], out)  # the first run twice: its seeds must not count twice
    result = json.loads(out.read_text())
    rows = {(r["env"], r["policy"]): r for r in result["rows"]}
    assert rows[("webshop", "expert")]["episodes"] == 8
    assert rows[("webshop", "short")]["seeds"] == [0, 7]
    pair = next(
        p for p in result["paired"] if p["env"] == "webshop" and {p["minus"], p["policy"]} == {"expert", "short"}
    )
    assert pair["paired_goals"] == 8
    assert pair["ci95"] > 0  # the two halves differ by different amounts
    png = out.with_suffix(".png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
