"""Recall suite runner: feeds the generated sessions to each memory, then asks every question.

Per memory: recall@k of the turn that states the current answer (from `retrieve`), and answer accuracy of
the model-free reader that sees only `build_context` output within a token budget. Baselines: BM25 over
all turns (bm25s) and the full history in context (no budget).
"""

from __future__ import annotations

import logging
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.brains.base import approx_tokens
from agents.memory import MemoryItem, make_memory
from agents.memory.base import TokenCounter
from bench.memory_reader import answer
from bench.memory_suite import Question, Suite, Turn

log = logging.getLogger(__name__)
KS = (1, 5, 10)


def to_item(t: Turn) -> MemoryItem:
    return MemoryItem(
        t.line(),
        kind="dialogue",
        time=float(t.id + 1),
        meta={"speaker": t.speaker, "turn_id": t.id, "session": t.session},
    )


class BM25Baseline:
    """BM25 over every turn; context = the top turns, oldest first, within the budget."""

    name = "bm25 (baseline)"

    def __init__(self, context_k: int = 10) -> None:
        self.context_k = context_k
        self.turns: list[Turn] = []
        self._ret = None

    def ingest(self, turns: list[Turn]) -> None:
        import bm25s

        self.turns = turns
        self._ret = bm25s.BM25()
        self._ret.index(
            bm25s.tokenize([t.line() for t in turns], stopwords="en", show_progress=False), show_progress=False
        )

    def _top(self, query: str, k: int) -> list[Turn]:
        import bm25s

        docs, _ = self._ret.retrieve(
            bm25s.tokenize([query], stopwords="en", show_progress=False), k=k, show_progress=False
        )
        return [self.turns[int(i)] for i in docs[0]]

    def retrieve_ids(self, query: str, k: int) -> list[int]:
        return [t.id for t in self._top(query, k)]

    def context(self, query: str, budget: int, count: TokenCounter) -> str:
        lines, used = [], 0
        for t in self._top(query, self.context_k):
            cost = count(t.line()) + 1
            if used + cost <= budget:
                lines.append(t)
                used += cost
        return "\n".join(t.line() for t in sorted(lines, key=lambda t: t.id))


@dataclass
class RecallRow:
    memory: str
    recall: dict[int, float]
    accuracy: float
    accuracy_updated: float
    stale_answers: int
    context_tokens: float
    ingest_s: float
    query_ms: float
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _hit(items: list[MemoryItem], q: Question) -> bool:
    for it in items:
        if it.meta.get("turn_id") == q.target_turn:
            return True
        if it.kind == "summary" and q.answer.lower() in it.text.lower() and q.subject in it.text:
            return True
    return False


def _score(
    name: str,
    suite: Suite,
    retrieve_hits: Callable[[Question, int], bool],
    context: Callable[[str], str],
    ingest_s: float,
    notes: str = "",
) -> RecallRow:
    recall = {k: 0 for k in KS}
    correct = correct_upd = stale = 0
    tokens: list[int] = []
    t0 = time.perf_counter()
    for q in suite.questions:
        for k in KS:
            recall[k] += retrieve_hits(q, k)
        ctx = context(q.text)
        tokens.append(approx_tokens(ctx))
        got = (answer(ctx, q.subject, q.relation) or "").lower()
        correct += got == q.answer.lower()
        if q.updated:
            correct_upd += got == q.answer.lower()
            stale += bool(q.old_answer) and got == q.old_answer.lower()
    per_q = (time.perf_counter() - t0) / len(suite.questions) / (len(KS) + 1) * 1000
    n, n_upd = len(suite.questions), max(1, sum(q.updated for q in suite.questions))
    return RecallRow(
        name,
        {k: v / n for k, v in recall.items()},
        correct / n,
        correct_upd / n_upd,
        stale,
        statistics.mean(tokens),
        ingest_s,
        per_q,
        notes,
    )


def run_recall(suite: Suite, budget: int = 512, workdir: Path | None = None) -> tuple[list[RecallRow], dict]:
    workdir = workdir or Path(tempfile.mkdtemp(prefix="membench-"))
    items = [to_item(t) for t in suite.turns]
    rows: list[RecallRow] = []
    extra: dict[str, Any] = {}
    configs: list[tuple[str, str, dict]] = [
        ("working", "working", {"max_items": len(items)}),
        ("summary (extractive)", "summary", {"window_items": 40, "fold_items": 20, "summary_max_tokens": 256}),
        ("episodic (MiniLM)", "episodic", {"path": str(workdir / "recall.db"), "context_k": 10}),
        (
            "episodic, relevance only",
            "episodic",
            {"path": str(workdir / "recall_rel.db"), "context_k": 10, "recency_weight": 0.0, "importance_weight": 0.0},
        ),
        ("facts (rule extractor)", "facts", {}),
        ("episodic+facts", "episodic+facts", {"episodic": {"context_k": 10}}),
    ]
    for label, name, opts in configs:
        mem = make_memory(name, **opts)
        t0 = time.perf_counter()
        if hasattr(mem, "add_many"):
            mem.add_many(items)
        else:
            for it in items:
                mem.add(it)
        if hasattr(mem, "flush"):
            mem.flush()
        for part in getattr(mem, "parts", []):
            if hasattr(part, "flush"):
                part.flush()
        ingest = time.perf_counter() - t0
        if label == "episodic (MiniLM)":
            extra["suite_embed_per_s"] = len(items) / ingest
            extra["suite_store_bytes"] = Path(opts["path"]).stat().st_size
        rows.append(
            _score(
                label,
                suite,
                lambda q, k, m=mem: _hit(m.retrieve(q.text, k), q),
                lambda text, m=mem: m.build_context(text, budget, approx_tokens),
                ingest,
            )
        )
        log.info("recall: %s done", label)
    bm = BM25Baseline()
    t0 = time.perf_counter()
    bm.ingest(suite.turns)
    rows.append(
        _score(
            bm.name,
            suite,
            lambda q, k: q.target_turn in bm.retrieve_ids(q.text, k),
            lambda text: bm.context(text, budget, approx_tokens),
            time.perf_counter() - t0,
        )
    )
    full = "\n".join(t.line() for t in suite.turns)
    rows.append(
        _score(
            "full context (baseline)",
            suite,
            lambda q, k: True,
            lambda text: full,
            0.0,
            notes="no budget: whole history in the prompt; recall is 1 by construction",
        )
    )
    return rows, extra
