"""Facts memory: a (subject, relation) -> value store with an explicit contradiction policy.

Policy: a relation is single-valued unless listed in `multi_valued`. A new value for a (subject, relation)
*supersedes* the current one — the old fact is kept in the history with the time it was valid until —
and retrieval returns the current value only (its history is attached in `meta['history']`). A fact that
arrives late (its time is older than the current one's) goes straight into the history. Repeating the
current value just confirms it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from agents.memory.base import MemoryItem, MemoryStateError, TokenCounter, brain_or_rule, names_to_config
from agents.memory.budget import pack_text
from agents.memory.embeddings import Embedder, embedder_or_lexical
from agents.memory.fact_extract import BrainExtractor, Extractor, RuleExtractor, Triple, normalize_relation
from agents.memory.registry import register_memory
from agents.memory.state import check_header, parse_model
from agents.memory.text import overlap_score

STATE_VERSION = 1


class FactsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    multi_valued: list[str] = Field(default_factory=list)  # relations that hold several values at once
    extractor: Literal["auto", "rule", "brain", "none"] = (
        "rule"  # brain: one LLM call per add (opt in); auto = brain if given
    )
    embedder: Literal["minilm", "hashing", "lexical"] = "lexical"
    context_k: int = Field(10, ge=1)
    show_history: bool = True  # mention the superseded value in the prompt ("was X until t")


@dataclass
class Fact:
    subject: str
    relation: str
    value: str
    time: float  # when it became true (as told)
    until: float | None = None  # when it was superseded; None = current
    source: Any = None  # e.g. the turn id that stated it
    confirmations: int = 1

    @property
    def key(self) -> tuple[str, str]:
        return self.subject.lower(), self.relation.lower()

    def text(self) -> str:
        return f"{self.subject} {self.relation}: {self.value}"


class FactsState(BaseModel):
    config: FactsConfig
    seq: float
    current: list[Fact]
    history: list[Fact]


@dataclass
class AssertResult:
    status: Literal["new", "confirmed", "superseded", "historical", "added"]
    fact: Fact
    previous: Fact | None = None


@dataclass
class FactTable:
    """Current facts by key plus the superseded history; the policy lives in `assert_fact`."""

    multi_valued: set[str] = field(default_factory=set)
    current: dict[tuple[str, str], list[Fact]] = field(default_factory=dict)
    history: list[Fact] = field(default_factory=list)

    def assert_fact(self, fact: Fact) -> AssertResult:
        cur = self.current.setdefault(fact.key, [])
        same = next((f for f in cur if f.value.lower() == fact.value.lower()), None)
        if same:
            same.confirmations += 1
            return AssertResult("confirmed", same)
        if fact.relation.lower() in self.multi_valued:
            cur.append(fact)
            return AssertResult("added", fact)
        if cur and fact.time < cur[0].time:  # told late: it was true before the current value
            fact.until = cur[0].time
            self.history.append(fact)
            return AssertResult("historical", fact, cur[0])
        previous = cur[0] if cur else None
        if previous:
            previous.until = fact.time
            self.history.append(previous)
        self.current[fact.key] = [fact]
        return AssertResult("superseded" if previous else "new", fact, previous)

    def facts(self) -> list[Fact]:
        return [f for fs in self.current.values() for f in fs]

    def history_of(self, subject: str, relation: str) -> list[Fact]:
        key = (subject.lower(), normalize_relation(relation))
        past = [f for f in self.history if f.key == key]
        return sorted(past + self.current.get(key, []), key=lambda f: f.time)


@register_memory("facts", carries_state=True)
class FactsMemory:
    name = "facts"

    def __init__(
        self,
        brain: Any = None,
        config: FactsConfig | None = None,
        extractor: Extractor | None = None,
        embedder: Embedder | str | None = None,
        **kwargs: Any,
    ) -> None:
        given_embedder, extractor = names_to_config(kwargs, embedder=embedder, extractor=extractor)
        self.config = config or FactsConfig(**kwargs)
        c = self.config
        if extractor is None and c.extractor != "none":
            extractor = brain_or_rule(c.extractor, brain, BrainExtractor, RuleExtractor, "facts memory with extractor")
        self.extractor = extractor
        self.embedder = embedder_or_lexical(given_embedder, c.embedder)
        self.table = FactTable(multi_valued={normalize_relation(r) for r in c.multi_valued})
        self._seq = 0.0
        self.last_injected = ""

    # -- writing ------------------------------------------------------------------------------
    def assert_fact(
        self, subject: str, relation: str, value: str, time: float | None = None, source: Any = None
    ) -> AssertResult:
        self._seq += 1
        t = self._seq if time is None else float(time)
        return self.table.assert_fact(
            Fact(subject.strip(), normalize_relation(relation), value.strip(), t, source=source)
        )

    def add(self, item: MemoryItem) -> list[AssertResult]:  # type: ignore[override]
        """Explicit triples in meta['facts'] (list of {subject, relation, value}) win; else the extractor reads the text."""
        raw = item.meta.get("facts")
        if raw is not None:
            triples = [Triple(str(f["subject"]), str(f["relation"]), str(f["value"])) for f in raw]
        elif self.extractor is not None:
            triples = self.extractor.extract(item.text, item.meta.get("speaker"))
        else:
            triples = []
        time = item.time if item.time else None
        source = item.meta.get("turn_id")
        return [self.assert_fact(t.subject, t.relation, t.value, time, source) for t in triples]

    # -- reading ------------------------------------------------------------------------------
    def _relevance(self, query: str, facts: list[Fact]) -> np.ndarray:
        if self.embedder is None:
            # key words matter most: "where does Alice live" should find (Alice, lives in), whatever the value
            return np.asarray(
                [
                    overlap_score(query, f"{f.subject} {f.relation}") + 0.25 * overlap_score(query, f.value)
                    for f in facts
                ],
                dtype=np.float32,
            )
        vecs = self.embedder.embed([f.text() for f in facts])
        return vecs @ self.embedder.embed([query])[0]

    def _item(self, f: Fact) -> MemoryItem:
        hist = [h for h in self.table.history if h.key == f.key]
        meta = {
            "subject": f.subject,
            "relation": f.relation,
            "value": f.value,
            "since": f.time,
            "source": f.source,
            "history": [{"value": h.value, "time": h.time, "until": h.until, "source": h.source} for h in hist],
        }
        if f.source is not None:
            meta["turn_id"] = f.source
        return MemoryItem(f.text(), kind="fact", time=f.time, importance=1.0, meta=meta)

    def retrieve(self, query: str, k: int = 5) -> list[MemoryItem]:
        facts = self.table.facts()
        if k <= 0 or not facts:
            return []
        rel = self._relevance(query, facts)
        order = sorted(range(len(facts)), key=lambda i: (-float(rel[i]), -facts[i].time))[:k]
        return [self._item(facts[i]) for i in order if rel[i] > 0 or self.embedder is not None]

    def history(self, subject: str, relation: str) -> list[Fact]:
        """Every value (subject, relation) ever had, oldest first; the last one is current."""
        return self.table.history_of(subject, relation)

    def build_context(self, query: str, budget_tokens: int, count_tokens: TokenCounter) -> str:
        lines = []
        for it in self.retrieve(query, self.config.context_k):
            line = f"- {it.text} (since t={it.meta['since']:g})"
            if self.config.show_history and it.meta["history"]:
                last = it.meta["history"][-1]
                line += f"; earlier: {last['value']} (until t={last['until']:g})"
            lines.append(line)
        self.last_injected = pack_text(lines, budget_tokens, count_tokens, "Known facts (current values):")
        return self.last_injected

    def on_episode_start(self, instruction: str) -> None:
        pass

    def on_episode_end(self, outcome: dict[str, Any]) -> None:
        pass

    # -- state --------------------------------------------------------------------------------
    def save_state(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "kind": self.name,
            "config": self.config.model_dump(),
            "seq": self._seq,
            "current": [asdict(f) for f in self.table.facts()],
            "history": [asdict(f) for f in self.table.history],
        }

    def load_state(self, state: dict[str, Any]) -> None:
        check_header(state, self.name, STATE_VERSION)
        st = parse_model(FactsState, state, "facts memory state")
        table = FactTable(multi_valued={normalize_relation(r) for r in st.config.multi_valued})
        for i, f in enumerate(st.current):
            if f.until is not None:
                raise MemoryStateError(
                    f"facts memory state: current[{i}] has until={f.until}; a current fact cannot be superseded"
                )
            table.current.setdefault(f.key, []).append(f)
        table.history = list(st.history)
        self.config, self.table, self._seq = st.config, table, st.seq

    def clear(self) -> None:
        self.table = FactTable(multi_valued=self.table.multi_valued)
        self._seq = 0.0
        self.last_injected = ""
