"""Episodic memory: every observation/action/event with a MiniLM embedding, persisted in SQLite,
retrieved by weighted recency + importance + relevance.

Adds are buffered and embedded in batches (one model call per `batch_size` items, or before any read).
Opening the same `path` again restores every memory (rows and embeddings are reloaded into the index).
"""

from __future__ import annotations

import base64
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from agents.memory.base import MemoryItem, MemoryStateError, TokenCounter, names_to_config
from agents.memory.budget import pack_text
from agents.memory.embeddings import Embedder, get_embedder
from agents.memory.registry import register_memory
from agents.memory.scoring import ScoreWeights
from agents.memory.sqlite_store import SQLiteStore
from agents.memory.state import check_header, parse_model
from agents.memory.text import outcome_text
from agents.memory.vector_index import VectorMatrix

log = logging.getLogger(__name__)
STATE_VERSION = 1


class EpisodicConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = ":memory:"  # SQLite file; ':memory:' keeps nothing across processes
    embedder: Literal["minilm", "hashing"] = "minilm"
    embed_backend: Literal["auto", "onnx", "torch"] | None = None  # MiniLM runtime; None = env or auto
    relevance_weight: float = 1.0
    recency_weight: float = 0.2
    importance_weight: float = 0.1
    half_life: float = Field(500.0, gt=0)  # in clock units
    clock: Literal["seq", "time"] = "seq"  # seq = insertion order; time = MemoryItem.time
    batch_size: int = Field(64, ge=1)
    context_k: int = Field(8, ge=1)  # memories put into the prompt by build_context
    log_episodes: bool = True  # store episode start/end as memories
    # Retrieval index (vector_index): "auto"/"sq8" = 8-bit faiss candidates + exact rescoring above
    # index_min_rows rows (same results as "exact", the full float32 scan, just faster); needs faiss-cpu.
    index: Literal["auto", "exact", "sq8"] = "auto"
    index_min_rows: int = Field(20_000, ge=0)


class EpisodicState(BaseModel):
    config: EpisodicConfig
    embedder: str
    count: int = Field(ge=0)
    episode: int = Field(ge=0)
    items: list[MemoryItem] | None = None  # inlined only for an in-memory store
    embeddings_b64: str | None = None


@register_memory("episodic")
class EpisodicMemory:
    name = "episodic"

    def __init__(
        self, config: EpisodicConfig | None = None, embedder: Embedder | str | None = None, **kwargs: Any
    ) -> None:
        [given_embedder] = names_to_config(kwargs, embedder=embedder)
        self.config = config or EpisodicConfig(**kwargs)
        c = self.config
        self.embedder: Embedder = given_embedder or get_embedder(c.embedder, c.embed_backend)
        self.weights = ScoreWeights(c.relevance_weight, c.recency_weight, c.importance_weight, c.half_life)
        self.store = SQLiteStore(c.path, self.embedder.name, self.embedder.dim)
        self.index = self._new_index()
        self._pending: list[MemoryItem] = []
        self._seq = 0.0
        self._episode = 0
        self.last_injected = ""
        self._reload()

    def _new_index(self) -> VectorMatrix:
        return VectorMatrix(self.embedder.dim, index=self.config.index, min_rows=self.config.index_min_rows)

    # -- persistence --------------------------------------------------------------------------
    def _reload(self) -> None:
        self.index.clear()
        self._seq = 0.0
        ids, vecs, clock, imp = [], [], [], []
        for row in self.store.rows():
            self._seq += 1
            ids.append(row.id)
            vecs.append(row.embedding)
            clock.append(self._clock_of(row.item))
            imp.append(row.item.importance)
            self._episode = max(self._episode, int(row.item.meta.get("episode", 0) or 0))
        if ids:
            self.index.add(np.asarray(ids), np.vstack(vecs), np.asarray(clock), np.asarray(imp, dtype=np.float32))
            log.info("episodic memory: restored %d memories from %s", len(ids), self.config.path)

    def _clock_of(self, item: MemoryItem) -> float:
        return float(item.time) if self.config.clock == "time" else float(item.meta.get("seq", self._seq))

    # -- writing ------------------------------------------------------------------------------
    def add(self, item: MemoryItem) -> None:
        self._pending.append(item)
        if len(self._pending) >= self.config.batch_size:
            self.flush()

    def add_many(self, items: list[MemoryItem]) -> None:
        self._pending.extend(items)
        self.flush()

    def flush(self) -> None:
        """Embed and store buffered items (one batched model call per `batch_size`)."""
        if not self._pending:
            return
        items, self._pending = self._pending, []
        for s in range(0, len(items), self.config.batch_size * 16):
            self._insert(items[s : s + self.config.batch_size * 16])

    def _insert(self, items: list[MemoryItem], vecs: np.ndarray | None = None) -> None:
        stamped = []
        for it in items:
            self._seq += 1
            meta = {**it.meta, "seq": self._seq}
            meta.setdefault("episode", self._episode)
            stamped.append(replace(it, meta=meta))
        if vecs is None:
            vecs = self.embedder.embed([it.text for it in stamped])
        ids = self.store.insert(stamped, vecs)
        clock = np.asarray([self._clock_of(it) for it in stamped])
        imp = np.asarray([it.importance for it in stamped], dtype=np.float32)
        self.index.add(np.asarray(ids), vecs, clock, imp)

    def add_embedded(self, items: list[MemoryItem], vecs: np.ndarray) -> None:
        """Store items whose embeddings were computed elsewhere (same embedder), e.g. in a bulk import."""
        self.flush()
        self._insert(items, np.asarray(vecs, dtype=np.float32))

    # -- reading ------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self.index.n + len(self._pending)

    def retrieve(self, query: str, k: int = 5) -> list[MemoryItem]:
        self.flush()
        if k <= 0 or self.index.n == 0:
            return []
        return self.retrieve_vector(self.embedder.embed([query])[0], k)

    def retrieve_vector(self, q: np.ndarray, k: int = 5) -> list[MemoryItem]:
        """Retrieval for an already-embedded query (same embedder)."""
        self.flush()
        if k <= 0 or self.index.n == 0:
            return []
        hits = self.index.search(q, k, self.weights)  # exact top-k of `combined` over every memory
        ids = self.index.ids[hits.rows]
        rows = self.store.get(ids.tolist())
        out = []
        for rid, score, sim in zip(ids, hits.scores, hits.sims):
            item = rows[int(rid)]
            item.meta.update(memory_id=int(rid), score=float(score), relevance=float(sim))
            out.append(item)
        return out

    def build_context(self, query: str, budget_tokens: int, count_tokens: TokenCounter) -> str:
        found = self.retrieve(query, self.config.context_k)  # best first = packing priority
        lines = [f"[{it.kind} #{int(it.meta.get('seq', 0))}] {it.text}" for it in found]
        # chronological reads better than score order
        self.last_injected = pack_text(
            lines, budget_tokens, count_tokens, "Relevant memories:", order=lambda i: found[i].meta.get("seq", 0)
        )
        return self.last_injected

    # -- episodes -----------------------------------------------------------------------------
    def on_episode_start(self, instruction: str) -> None:
        self._episode += 1
        if self.config.log_episodes:
            self.add(
                MemoryItem(
                    f"Episode {self._episode} started. Task: {instruction}",
                    kind="episode_start",
                    importance=0.5,
                    meta={"episode": self._episode},
                )
            )

    def on_episode_end(self, outcome: dict[str, Any]) -> None:
        if self.config.log_episodes:
            self.add(
                MemoryItem(
                    f"Episode {self._episode} ended: {outcome_text(outcome)}",
                    kind="outcome",
                    importance=1.0,
                    meta={"episode": self._episode},
                )
            )
        self.flush()

    # -- state --------------------------------------------------------------------------------
    def save_state(self) -> dict[str, Any]:
        """A file-backed store is referenced by path (the file *is* the state); an in-memory one is inlined."""
        self.flush()
        state: dict[str, Any] = {
            "version": STATE_VERSION,
            "kind": self.name,
            "config": self.config.model_dump(),
            "embedder": self.embedder.name,
            "count": self.index.n,
            "episode": self._episode,
        }
        if self.config.path == ":memory:":
            rows = list(self.store.rows())
            state["items"] = [
                {
                    "text": r.item.text,
                    "kind": r.item.kind,
                    "time": r.item.time,
                    "importance": r.item.importance,
                    "meta": r.item.meta,
                }
                for r in rows
            ]
            emb = np.vstack([r.embedding for r in rows]) if rows else np.zeros((0, self.embedder.dim), np.float32)
            state["embeddings_b64"] = base64.b64encode(emb.astype("<f4").tobytes()).decode()
        return state

    def load_state(self, state: dict[str, Any]) -> None:
        check_header(state, self.name, STATE_VERSION)
        st = parse_model(EpisodicState, state, "episodic memory state")
        if st.embedder != self.embedder.name:
            raise MemoryStateError(
                f"episodic memory state was embedded with {st.embedder!r}, this memory uses {self.embedder.name!r}"
            )
        config = st.config
        if config.path == ":memory:":
            if st.items is None or st.embeddings_b64 is None:
                raise MemoryStateError("episodic memory state of an in-memory store lacks 'items'/'embeddings_b64'")
            items = list(st.items)
            try:
                raw = base64.b64decode(st.embeddings_b64, validate=True)
                emb = np.frombuffer(raw, dtype="<f4").reshape(len(items), self.embedder.dim).astype(np.float32)
            except ValueError as e:
                raise MemoryStateError(
                    f"episodic memory state: 'embeddings_b64' does not hold {len(items)} x "
                    f"{self.embedder.dim} float32 values: {e}"
                ) from e
            if len(items) != st.count:
                raise MemoryStateError(
                    f"episodic memory state: 'count' is {st.count} but {len(items)} items are stored"
                )
            self.close()
            self.config = config
            self.store = SQLiteStore(":memory:", self.embedder.name, self.embedder.dim)
            if items:
                self.store.insert(items, emb)
        else:
            if not Path(config.path).is_file():
                raise MemoryStateError(f"episodic memory state refers to store {config.path}, which does not exist")
            self.close()
            self.config = config
            self.store = SQLiteStore(config.path, self.embedder.name, self.embedder.dim)
        self._pending = []
        self.index = self._new_index()  # the loaded config may choose another index
        self._reload()
        if self.index.n < st.count:
            raise MemoryStateError(
                f"episodic store {config.path} holds {self.index.n} memories but the state was "
                f"saved with {st.count}; the file was truncated or replaced"
            )
        self.weights = ScoreWeights(
            config.relevance_weight, config.recency_weight, config.importance_weight, config.half_life
        )
        self._episode = st.episode

    def clear(self) -> None:
        self._pending = []
        self.store.clear()
        self.index.clear()
        self._seq = 0.0
        self.last_injected = ""

    def close(self) -> None:
        self.flush()
        self.store.close()
