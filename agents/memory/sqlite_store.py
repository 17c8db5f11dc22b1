"""SQLite persistence for episodic memories: rows with their embeddings, so memory survives restarts.

One table of memories (text, kind, time, importance, meta JSON, float32 embedding blob) and a small meta
table that pins the schema version and the embedder (mixing embeddings of two models would silently
break retrieval, so opening a store with another embedder is an error).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from agents.memory.base import MemoryItem, MemoryStateError

SCHEMA_VERSION = 1


@dataclass
class StoredRow:
    id: int
    item: MemoryItem
    embedding: np.ndarray


class SQLiteStore:
    def __init__(self, path: str | Path, embedder_name: str, dim: int) -> None:
        self.path = str(path)
        self.dim = dim
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        try:
            self.conn = sqlite3.connect(self.path, check_same_thread=False)
            self.conn.execute("PRAGMA journal_mode=WAL" if self.path != ":memory:" else "PRAGMA journal_mode=MEMORY")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self._init_schema(embedder_name)
        except sqlite3.DatabaseError as e:
            raise MemoryStateError(f"episodic store {self.path} is not a readable SQLite database: {e}") from e

    def _init_schema(self, embedder_name: str) -> None:
        c = self.conn
        with c:
            c.execute("CREATE TABLE IF NOT EXISTS store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            c.execute(
                "CREATE TABLE IF NOT EXISTS memories (id INTEGER PRIMARY KEY, text TEXT NOT NULL, kind TEXT NOT NULL,"
                " time REAL NOT NULL, importance REAL NOT NULL, meta TEXT NOT NULL, embedding BLOB NOT NULL)"
            )
        meta = dict(c.execute("SELECT key, value FROM store_meta").fetchall())
        want = {"schema_version": str(SCHEMA_VERSION), "embedder": embedder_name, "dim": str(self.dim)}
        if not meta:
            with c:
                c.executemany("INSERT INTO store_meta VALUES (?, ?)", list(want.items()))
            return
        for key, value in want.items():
            if meta.get(key) != value:
                raise MemoryStateError(
                    f"episodic store {self.path} has {key}={meta.get(key)!r} but this memory uses "
                    f"{value!r}; use another path or the same embedder"
                )

    def insert(self, items: Sequence[MemoryItem], embeddings: np.ndarray) -> list[int]:
        """Insert rows in one transaction; returns their ids in order."""
        if len(items) != len(embeddings):
            raise ValueError("items and embeddings differ in length")
        emb = np.ascontiguousarray(embeddings, dtype=np.float32)
        ids: list[int] = []
        with self.conn:
            cur = self.conn.cursor()
            for item, vec in zip(items, emb):
                cur.execute(
                    "INSERT INTO memories (text, kind, time, importance, meta, embedding) VALUES (?,?,?,?,?,?)",
                    (
                        item.text,
                        item.kind,
                        float(item.time),
                        float(item.importance),
                        json.dumps(item.meta, default=str),
                        vec.tobytes(),
                    ),
                )
                assert cur.lastrowid is not None  # set by every successful INSERT
                ids.append(cur.lastrowid)
        return ids

    def rows(self, batch: int = 10_000) -> Iterator[StoredRow]:
        """All rows in id order, checking every blob (a truncated blob means a damaged file)."""
        cur = self.conn.execute("SELECT id, text, kind, time, importance, meta, embedding FROM memories ORDER BY id")
        while chunk := cur.fetchmany(batch):
            for rid, text, kind, time, imp, meta, blob in chunk:
                if not isinstance(blob, bytes) or len(blob) != 4 * self.dim:
                    raise MemoryStateError(
                        f"episodic store {self.path}: row {rid} has an embedding of "
                        f"{len(blob) if isinstance(blob, bytes) else type(blob).__name__} bytes, "
                        f"expected {4 * self.dim}"
                    )
                try:
                    meta_d = json.loads(meta)
                except json.JSONDecodeError as e:
                    raise MemoryStateError(f"episodic store {self.path}: row {rid} has invalid meta JSON: {e}") from e
                yield StoredRow(rid, MemoryItem(text, kind, time, imp, meta_d), np.frombuffer(blob, dtype=np.float32))

    def get(self, ids: Sequence[int]) -> dict[int, MemoryItem]:
        if not ids:
            return {}
        out: dict[int, MemoryItem] = {}
        for s in range(0, len(ids), 500):
            part = [int(i) for i in ids[s : s + 500]]
            q = f"SELECT id, text, kind, time, importance, meta FROM memories WHERE id IN ({','.join('?' * len(part))})"
            for rid, text, kind, time, imp, meta in self.conn.execute(q, part):
                out[rid] = MemoryItem(text, kind, time, imp, json.loads(meta))
        return out

    def clear(self) -> None:
        with self.conn:
            self.conn.execute("DELETE FROM memories")

    def close(self) -> None:
        self.conn.close()
