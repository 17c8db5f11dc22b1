"""Memory benchmark, one command: `python bench/memory_bench.py [--quick] [--only recall,speed,index,experience]`.

1. Recall (LoCoMo-style generated suite): recall@k of the answering turn and reader accuracy per memory
   type, with BM25 and full-context baselines; accuracy on updated facts and stale answers.
2. Speed: episodic add/retrieve latency at 10k and 100k memories for the old path (torch MiniLM + exact
   scan) and the default one (onnxruntime MiniLM + 8-bit candidates, exact rescoring), side by side;
   restart time, store size, how often the candidate bound fell back to a full scan; MiniLM sentences/s
   and single-query latency per backend. `--only speed` runs just this (~2 minutes).
3. Vector index comparison (numpy vs faiss vs sqlite-vec) at 10k and 100k.
4. Experiential memory: repeated WebShop (or fault-tree) tasks with and without reflective memory.
Prints rich tables and writes bench/results/memory.json.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import platform
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from agents.memory.embeddings import MiniLMEmbedder, get_embedder  # noqa: E402
from bench.memory_recall import KS, run_recall  # noqa: E402
from bench.memory_speed import Variant, embed_throughput, query_latency, run_index_comparison, run_speed  # noqa: E402
from bench.memory_suite import generate  # noqa: E402

log = logging.getLogger("memory_bench")
OUT = ROOT / "bench" / "results" / "memory.json"


def fmt(x: float, d: int = 2) -> str:
    return "—" if isinstance(x, float) and math.isnan(x) else f"{x:.{d}f}"


def recall_table(rows) -> Table:
    t = Table(title="Long-horizon recall (reader sees only what memory returned)")
    for c in [
        "memory",
        *(f"R@{k}" for k in KS),
        "answer acc",
        "acc (updated)",
        "stale",
        "ctx tokens",
        "ingest s",
        "ms/query",
    ]:
        t.add_column(c, justify="left" if c == "memory" else "right")
    for r in rows:
        t.add_row(
            r.memory,
            *(fmt(r.recall[k]) for k in KS),
            fmt(r.accuracy),
            fmt(r.accuracy_updated),
            str(r.stale_answers),
            fmt(r.context_tokens, 0),
            fmt(r.ingest_s),
            fmt(r.query_ms, 1),
        )
    return t


def speed_table(rows) -> Table:
    t = Table(title="Episodic memory speed (retrieve = query text -> top-10 memories, end to end)")
    for c in [
        "path",
        "memories",
        "bulk add/s",
        "add ms (w/ embed)",
        "retrieve p50 ms",
        "p95",
        "search p50 ms",
        "p95",
        "fallback",
        "reopen s",
        "store MB",
    ]:
        t.add_column(c, justify="left" if c == "path" else "right")
    for r in rows:
        t.add_row(
            r.path,
            f"{r.n:,}",
            f"{r.bulk_add_per_s:,.0f}",
            fmt(r.add_ms_with_embedding),
            fmt(r.retrieve_p50_ms),
            fmt(r.retrieve_p95_ms),
            fmt(r.search_p50_ms),
            fmt(r.search_p95_ms),
            f"{r.searches['fallback']}/{r.searches['quantized'] + r.searches['fallback']}"
            if r.searches["quantized"] + r.searches["fallback"]
            else "—",
            fmt(r.reopen_s),
            fmt(r.store_mb, 1),
        )
    return t


def embed_table(embed: dict) -> Table:
    t = Table(title="MiniLM backends (1 thread)")
    for c in ["backend", "batched sentences/s", "query p50 ms", "query p95 ms"]:
        t.add_column(c, justify="left" if c == "backend" else "right")
    for name, e in embed.items():
        t.add_row(name, f"{e['sentences_per_s']:.0f}", fmt(e["query_p50_ms"]), fmt(e["query_p95_ms"]))
    return t


def index_table(rows) -> Table:
    t = Table(title="Vector index, top-10 of 384-d vectors")
    for c in ["backend", "n", "build s", "p50 ms", "p95 ms", "recall@10", "note"]:
        t.add_column(c, justify="left" if c in ("backend", "note") else "right")
    for r in rows:
        t.add_row(r.backend, f"{r.n:,}", fmt(r.build_s), fmt(r.p50_ms), fmt(r.p95_ms), fmt(r.recall_at_10), r.note)
    return t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    ap.add_argument("--only", default="recall,speed,index,experience")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--exp-env", choices=["webshop", "faulttree"], default="webshop", help="experiential part: env")
    ap.add_argument("--exp-tasks", type=int, default=2, help="experiential part: tasks (each repeated)")
    ap.add_argument("--exp-reps", type=int, default=3, help="experiential part: attempts per task")
    ap.add_argument("--exp-steps", type=int, default=15, help="experiential part: max steps per attempt")
    ap.add_argument(
        "--exp-reflector",
        choices=["rule", "auto"],
        default="rule",
        help="lessons by rule, or by the brain (auto) with the rule as fallback",
    )
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    for noisy in ("httpx", "transformers", "agents.memory.episodic", "faiss.loader"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    only = set(args.only.split(","))
    console = Console(width=170)
    result: dict = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "date": time.strftime("%Y-%m-%d"),
        "quick": args.quick,
        "load_avg_start": os.getloadavg(),
    }
    work = Path(tempfile.mkdtemp(prefix="membench-"))
    embedder = get_embedder("minilm")
    if "recall" in only:
        suite = generate(sessions=12 if args.quick else 50, turns_per_session=40)
        rows, extra = run_recall(suite, budget=512, workdir=work)
        console.print(recall_table(rows))
        result["recall"] = {
            "turns": len(suite.turns),
            "questions": len(suite.questions),
            "updated_questions": sum(q.updated for q in suite.questions),
            "budget_tokens": 512,
            **extra,
            "rows": [asdict(r) for r in rows],
        }
    if "speed" in only:
        sizes = (2_000, 10_000) if args.quick else (10_000, 100_000)
        load = os.getloadavg()
        sentences = [t.line() for t in generate(sessions=26, turns_per_session=40, seed=5).turns][:1024]
        old_emb = MiniLMEmbedder(backend="torch")
        embed = {}
        for name, emb in (("torch", old_emb), ("default", embedder)):
            sps = embed_throughput(emb, sentences)
            embed[f"{name} ({emb.backend_used})" if name == "default" else name] = {
                "sentences_per_s": sps,
                **{f"query_{k}": v for k, v in query_latency(emb).items()},
            }
        console.print(embed_table(embed))
        variants = [
            Variant("old: torch + exact scan", old_emb, "exact"),
            Variant(f"new: {embedder.backend_used} + sq8 candidates", embedder, "auto"),
        ]
        rows = run_speed(variants, work, sizes)
        console.print(speed_table(rows))
        result["speed"] = {
            "embed": embed,
            "rows": [asdict(r) for r in rows],
            "goal": "retrieve p50 <= 10 ms at 100k",
            "load_avg_start": load,
            "load_avg_end": os.getloadavg(),
        }
    if "index" in only:
        rows = run_index_comparison((2_000, 10_000) if args.quick else (10_000, 100_000))
        console.print(index_table(rows))
        result["index"] = [asdict(r) for r in rows]
    if "experience" in only:
        try:
            from bench.memory_experience import experience_table, run_experience
        except ImportError as e:
            result["experience"] = {"status": f"not run: {e}"}
        else:
            exp = run_experience(
                quick=args.quick,
                seeds=tuple(range(args.exp_tasks)),
                reps=args.exp_reps,
                max_steps=args.exp_steps,
                env=args.exp_env,
                reflector=args.exp_reflector,
            )
            console.print(experience_table(exp))
            result["experience"] = exp
    result["load_avg_end"] = os.getloadavg()  # other work on the machine inflates latencies: see these
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists() and only != {"recall", "speed", "index", "experience"}:  # a partial run updates its sections
        try:
            previous = json.loads(out.read_text())
        except json.JSONDecodeError:
            previous = {}
        result = {**previous, **result}
    out.write_text(json.dumps(result, indent=2, default=str))
    console.print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
