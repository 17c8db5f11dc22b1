"""How fast the runs UI opens and answers on big stores: `python bench/ui_bench.py [--sizes 1000 100000]`.

For each size a synthetic store (a real scripted WebShop episode, repeated with new ids, seeds and
outcomes) is written into a temp dir (never committed), then:

- index build: the first visit, reading every line once into the SQLite index;
- open: a restarted UI (a new index object) caught up with an unchanged store: what every later
  visit costs; beside it, reading the whole store with `TrajectoryStore` (what the UI avoids);
- catch-up: 100 episodes appended, then one refresh;
- pages over a real loopback socket (median of 5): the run list, a run's first page, its last
  page, a filtered page, an episode, the comparison of the run with a copy of itself, the live poll.

Prints a table and writes bench/results/ui_bench.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx
from rich.console import Console
from rich.table import Table

from agents.trajectories.store import TrajectoryStore
from agents.ui.index import EpisodeIndex
from tests.ui.conftest import Server, agents_run

REPEATS = 5


def template_line(tmp: Path) -> str:
    """One real episode line from a scripted WebShop run (prompts dropped, as many collections do)."""
    out = agents_run(tmp / "template", 1)
    ep = next(iter(TrajectoryStore(out / "trajectories.jsonl")))
    ep = ep.model_copy(update={"steps": [s.model_copy(update={"messages": None}) for s in ep.steps]})
    return ep.model_dump_json()


def write_store(path: Path, n: int, template: str) -> int:
    """n episodes with distinct ids and seeds, every third one failed; returns the bytes written."""
    head, _, tail = template.partition('"episode_id":"webshop-0"')
    tail = tail.replace('"seed":0', '"seed":{seed}', 1)
    failed = tail.replace('"success":true', '"success":false')
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        for i in range(n):
            body = (failed if i % 3 == 0 else tail).replace('"seed":{seed}', f'"seed":{i}', 1)
            f.write(f'{head}"episode_id":"webshop-{i}"{body}\n')
    return path.stat().st_size


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def median_ms(client: httpx.Client, path: str, params: dict) -> float:
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        r = client.get(path, params=params)
        times.append(time.perf_counter() - t0)
        assert r.status_code == 200, (path, params, r.status_code, r.text[:300])
    return 1000 * statistics.median(times)


def bench_size(n: int, template: str, tmp: Path, full_read: bool) -> dict:
    root = tmp / f"runs{n}"
    store = root / "big" / "trajectories.jsonl"
    size = write_store(store, n, template)
    shutil.copytree(root / "big", root / "copy")
    row: dict = {"episodes": n, "store_mb": round(size / 1e6, 1)}
    row["index_build_s"] = timed(lambda: EpisodeIndex(store).refresh())
    EpisodeIndex(root / "copy" / "trajectories.jsonl").refresh()
    opens = [timed(lambda: EpisodeIndex(store).refresh()) for _ in range(REPEATS)]
    row["open_s"] = statistics.median(opens)
    if full_read:
        row["full_read_s"] = timed(lambda: sum(1 for _ in TrajectoryStore(store).read()))
    with open(store, "a") as f:
        f.write("".join(template.replace('"webshop-0"', f'"new-{i}"') + "\n" for i in range(100)))
    row["catch_up_100_s"] = timed(lambda: EpisodeIndex(store).refresh())
    last_page = (n + 100 + 49) // 50
    pages = {
        "run list": ("/", {}),
        "run page 1": ("/run", {"run": "big"}),
        "run last page": ("/run", {"run": "big", "page": last_page}),
        "run filtered": ("/run", {"run": "big", "outcome": "failed", "q": "webshop-99", "sort": "reward"}),
        "episode": ("/episode", {"run": "big", "ep": f"webshop-{n // 2}"}),
        "compare": ("/compare", {"a": "big", "b": "copy"}),
        "live poll": ("/api/progress", {"run": "big", "after": n}),
    }
    with Server(root) as s, httpx.Client(base_url=s.url, timeout=120) as c:
        c.get("/")  # both indexes exist already; this warms the process
        row["pages_ms"] = {name: round(median_ms(c, p, q), 1) for name, (p, q) in pages.items()}
    shutil.rmtree(root)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 100_000])
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "ui_bench.json"))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ui-bench-") as d:
        tmp = Path(d)
        template = template_line(tmp)
        rows = [bench_size(n, template, tmp, full_read=True) for n in a.sizes]
    t = Table(title="agents.ui on synthetic stores (one real scripted WebShop episode, repeated)")
    t.add_column("measure")
    for r in rows:
        t.add_column(f"{r['episodes']:,} episodes ({r['store_mb']} MB)", justify="right")
    t.add_row("index build (first visit)", *[f"{r['index_build_s']:.2f} s" for r in rows])
    t.add_row("open (restart, store unchanged)", *[f"{1000 * r['open_s']:.1f} ms" for r in rows])
    t.add_row("read the whole store (what the UI avoids)", *[f"{r['full_read_s']:.2f} s" for r in rows])
    t.add_row("  ratio whole read / open", *[f"{r['full_read_s'] / r['open_s']:,.0f}x" for r in rows])
    t.add_row("catch up 100 appended episodes", *[f"{1000 * r['catch_up_100_s']:.1f} ms" for r in rows])
    for name in rows[0]["pages_ms"]:
        t.add_row(f"page: {name}", *[f"{r['pages_ms'][name]:.1f} ms" for r in rows])
    Console().print(t)
    result = {
        "bench": "ui_bench",
        "command": f"python bench/ui_bench.py --sizes {' '.join(map(str, a.sizes))}",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "repeats": REPEATS,
        "note": "open = a new EpisodeIndex + refresh on an indexed, unchanged store; pages = median wall ms of an "
        "HTTP GET over loopback (uvicorn in a thread of the bench process); compare = the run vs a copy of itself",
        "sizes": rows,
    }
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(result, indent=1))
    print(f"wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
