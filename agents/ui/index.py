"""A SQLite index beside a `trajectories.jsonl`: one row per episode (its byte range and the numbers a table shows).

The store is append-only, so the index remembers how many bytes it has read and, when the file
grows, reads only the new complete lines (a torn last line waits until its newline arrives). A
store that was replaced or shrank (a society rewrites its store at the end) is indexed again.
Pages read a row's byte range and parse that one line: a 100k-episode store never gets loaded.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

INDEX_NAME = "trajectories.index.sqlite"
INDEX_VERSION = "2"
HEAD_BYTES = 4096  # the store's first bytes identify it: a rewritten store starts differently
BATCH_LINES = 2000  # rows written per transaction while catching up
INSTRUCTION_CHARS = 300  # what the episode table shows and the text filter searches

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS episodes (
    row INTEGER PRIMARY KEY,           -- 1.. in file order
    offset INTEGER NOT NULL,
    length INTEGER NOT NULL,
    episode_id TEXT NOT NULL,
    seed INTEGER,
    env TEXT, brain TEXT, model TEXT,
    instruction TEXT,
    success INTEGER, reward REAL, total_reward REAL,
    steps INTEGER, invalid INTEGER, parse_failures INTEGER,
    tokens_in INTEGER, tokens_out INTEGER, wall_s REAL, brain_s REAL,
    truncated INTEGER, truncation_reason TEXT,
    has_prm INTEGER, has_candidates INTEGER,
    started_at REAL, finished_at REAL,
    agent TEXT,                        -- a society's agent id (meta.agent), else NULL
    latest INTEGER NOT NULL DEFAULT 1  -- 1 for the last episode of its seed (a resumed run may repeat a seed)
);
CREATE INDEX IF NOT EXISTS episodes_seed ON episodes(seed);
CREATE INDEX IF NOT EXISTS episodes_id ON episodes(episode_id);
CREATE INDEX IF NOT EXISTS episodes_latest ON episodes(seed) WHERE latest = 1;
CREATE TABLE IF NOT EXISTS totals (    -- running sums, so totals cost nothing on a 100k-episode store
    episodes INTEGER, solved INTEGER, reward REAL, steps INTEGER, tokens_in INTEGER, tokens_out INTEGER,
    with_prm INTEGER
);
"""
TOTALS = "episodes solved reward steps tokens_in tokens_out with_prm".split()

COLUMNS = (
    "row offset length episode_id seed env brain model instruction success reward total_reward steps invalid "
    "parse_failures tokens_in tokens_out wall_s brain_s truncated truncation_reason has_prm has_candidates "
    "started_at finished_at agent"
).split()


@dataclass(frozen=True)
class IndexState:
    """How far the index has read its store, and what it found."""

    episodes: int
    indexed_bytes: int
    store_bytes: int
    skipped_lines: int  # lines that were not an episode (torn by a crash, or not JSON)


def _num(x: Any, default: float = 0.0) -> float:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else default


def _dict(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def row_of(line: bytes, offset: int) -> tuple[Any, ...] | None:
    """The index row of one JSONL line, or None when it is not an episode record."""
    try:
        ep = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(ep, dict) or not isinstance(ep.get("episode_id"), str):
        return None
    out = _dict(ep.get("outcome"))
    st = _dict(ep.get("stats"))
    raw_steps = ep.get("steps")
    steps = [s for s in raw_steps if isinstance(s, dict)] if isinstance(raw_steps, list) else []
    meta = _dict(ep.get("meta"))
    seed = ep.get("seed")
    return (
        offset,
        len(line),
        ep["episode_id"],
        seed if isinstance(seed, int) else None,
        str(ep.get("env", "")),
        str(ep.get("brain", "")),
        str(ep.get("model", "")),
        str(ep.get("instruction", ""))[:INSTRUCTION_CHARS],
        int(bool(out.get("success"))),
        _num(out.get("reward")),
        _num(out.get("total_reward")),
        int(_num(st.get("steps"), len(steps))),
        int(_num(st.get("invalid_actions"))),
        int(_num(st.get("parse_failures"))),
        int(_num(st.get("tokens_in"))),
        int(_num(st.get("tokens_out"))),
        _num(st.get("wall_time_s")),
        _num(st.get("brain_time_s")),
        int(bool(out.get("truncated"))),
        out.get("truncation_reason") if isinstance(out.get("truncation_reason"), str) else None,
        int(any(s.get("prm_score") is not None for s in steps)),
        int(any(s.get("candidates") for s in steps)),
        _num(ep.get("started_at")),
        _num(ep.get("finished_at")),
        str(meta["agent"]) if "agent" in meta else None,
    )


def _head_digest(path: Path, upto: int) -> str:
    """A digest of the store's first bytes (at most `upto`, the part already indexed)."""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read(min(HEAD_BYTES, upto))).hexdigest()[:16]


def _fallback_dir() -> Path:
    d = Path(tempfile.gettempdir()) / f"agentsim-ui-{os.getuid() if hasattr(os, 'getuid') else 'user'}"
    d.mkdir(mode=0o700, exist_ok=True)
    return d


class EpisodeIndex:
    """The index of one store; `refresh()` catches up with the file, `query`/`read_line` answer pages."""

    def __init__(self, store: Path) -> None:
        self.store = store
        self.path = store.with_name(INDEX_NAME)
        if not os.access(store.parent, os.W_OK):  # a read-only run folder: keep the index in a private temp dir
            key = hashlib.sha256(str(store.resolve()).encode()).hexdigest()[:16]
            self.path = _fallback_dir() / f"{key}.sqlite"
        self._lock = threading.Lock()  # one writer per index in this process
        self._thread: threading.Thread | None = None
        self.progress = (0, 0)  # bytes read of bytes to read, in the catch-up under way
        try:
            self._create()
        except sqlite3.DatabaseError as e:  # a damaged index (a crash mid-write, a stray file): it is only a cache
            log.warning("%s is unreadable (%s): building it again", self.path, e)
            for p in (
                self.path,
                self.path.with_name(self.path.name + "-wal"),
                self.path.with_name(self.path.name + "-shm"),
            ):
                p.unlink(missing_ok=True)
            self._create()

    def _create(self) -> None:
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")  # readers never wait for the catch-up (kept in the file)
            db.executescript("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);")
            if self._meta(db).get("version", INDEX_VERSION) != INDEX_VERSION:  # an older layout: rebuild
                db.executescript("DROP TABLE IF EXISTS episodes; DROP TABLE IF EXISTS totals; DELETE FROM meta;")
            db.executescript(SCHEMA)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30)
        try:
            db.execute("PRAGMA synchronous=NORMAL")  # the index can be rebuilt from the store: no fsync per batch
            yield db
            db.commit()
        finally:
            db.close()

    def _meta(self, db: sqlite3.Connection) -> dict[str, str]:
        return dict(db.execute("SELECT key, value FROM meta").fetchall())

    def _reset(self, db: sqlite3.Connection, head: str, inode: int) -> None:
        db.execute("DELETE FROM episodes")
        db.execute("DELETE FROM meta")
        db.execute("DELETE FROM totals")
        db.execute("INSERT INTO totals VALUES (0, 0, 0, 0, 0, 0, 0)")
        for k, v in {"version": INDEX_VERSION, "head": head, "inode": str(inode), "bytes": "0", "skipped": "0"}.items():
            db.execute("INSERT INTO meta VALUES (?, ?)", (k, v))

    def refresh(self) -> IndexState:
        """Index the lines appended since the last call (all of them the first time, or after a rewrite)."""
        with self._lock, self._connect() as db:
            try:
                st = os.stat(self.store)
            except FileNotFoundError:
                return IndexState(0, 0, 0, 0)
            meta = self._meta(db)
            done = int(meta.get("bytes", "0"))
            if not self._unchanged(meta, st):
                if meta:
                    log.info("%s was rewritten: indexing it again", self.store)
                self._reset(db, _head_digest(self.store, 0), st.st_ino)
                done = 0
            if st.st_size > done:
                before, done = done, self._catch_up(db, done, st.st_size)
                if before < HEAD_BYTES:  # the digest covers the first bytes indexed: they grew
                    db.execute("UPDATE meta SET value=? WHERE key='head'", (_head_digest(self.store, done),))
            return self._state(db, st.st_size)

    def _unchanged(self, meta: dict[str, str], st: os.stat_result) -> bool:
        """Whether the store is the one indexed, perhaps grown (same file, same first bytes, not shorter)."""
        done = int(meta.get("bytes", "0"))
        return (
            meta.get("version") == INDEX_VERSION
            and meta.get("inode") == str(st.st_ino)
            and done <= st.st_size
            and meta.get("head") == _head_digest(self.store, done)
        )

    def pending_bytes(self) -> int:
        """Bytes of the store not indexed yet (all of them when the store was replaced)."""
        try:
            st = os.stat(self.store)
        except FileNotFoundError:
            return 0
        with self._connect() as db:
            meta = self._meta(db)
        return st.st_size - (int(meta.get("bytes", "0")) if self._unchanged(meta, st) else 0)

    @property
    def building(self) -> bool:
        """Whether a background catch-up is running."""
        return self._thread is not None and self._thread.is_alive()

    def refresh_in_background(self) -> None:
        """Start catching up in a thread (a big store's first visit), unless one is already running."""
        if self.building:
            return
        self.progress = (0, max(1, self.pending_bytes()))
        self._thread = threading.Thread(
            target=self._refresh_logged, daemon=True, name=f"index {self.store.parent.name}"
        )
        self._thread.start()

    def _refresh_logged(self) -> None:
        try:
            self.refresh()
        except Exception:  # the next request tries again, in the foreground, and reports what went wrong
            log.exception("indexing %s failed", self.store)

    def _catch_up(self, db: sqlite3.Connection, start: int, end: int) -> int:
        """Read complete lines in [start, end); returns the offset after the last complete line."""
        skipped = int(self._meta(db).get("skipped", "0"))
        pos = start
        batch: list[tuple[Any, ...]] = []
        with open(self.store, "rb") as f:
            f.seek(start)
            while pos < end:
                line = f.readline(end - pos)
                if not line.endswith(b"\n"):
                    break  # a line still being written (or torn): index it once it is whole
                if line.strip():
                    row = row_of(line, pos)
                    if row is None:
                        skipped += 1
                    else:
                        batch.append(row)
                pos += len(line)
                if len(batch) >= BATCH_LINES:
                    self.progress = (pos - start, end - start)
                    self._write(db, batch, pos, skipped)
                    batch = []
        self._write(db, batch, pos, skipped)
        return pos

    def _write(self, db: sqlite3.Connection, rows: list[tuple[Any, ...]], pos: int, skipped: int) -> None:
        seed_at = COLUMNS.index("seed") - 1
        last: dict[int, int] = {}  # seed -> its last position in this batch
        for n, r in enumerate(rows):
            if r[seed_at] is not None:
                last[r[seed_at]] = n
        db.executemany("UPDATE episodes SET latest = 0 WHERE seed = ? AND latest = 1", [(k,) for k in last])
        flagged = [(*r, int(r[seed_at] is None or last[r[seed_at]] == n)) for n, r in enumerate(rows)]
        names = [*COLUMNS[1:], "latest"]
        db.executemany(f"INSERT INTO episodes ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})", flagged)
        col = {c: COLUMNS.index(c) - 1 for c in COLUMNS[1:]}
        sums = (
            len(rows),
            sum(r[col["success"]] for r in rows),
            sum(r[col["reward"]] for r in rows),
            sum(r[col["steps"]] for r in rows),
            sum(r[col["tokens_in"]] for r in rows),
            sum(r[col["tokens_out"]] for r in rows),
            sum(r[col["has_prm"]] for r in rows),
        )
        db.execute(f"UPDATE totals SET {', '.join(f'{t} = {t} + ?' for t in TOTALS)}", sums)
        db.execute("UPDATE meta SET value=? WHERE key='bytes'", (str(pos),))
        db.execute("UPDATE meta SET value=? WHERE key='skipped'", (str(skipped),))
        db.commit()

    def _state(self, db: sqlite3.Connection, size: int) -> IndexState:
        meta = self._meta(db)
        n = db.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]
        return IndexState(n, int(meta.get("bytes", "0")), size, int(meta.get("skipped", "0")))

    # -- reading ------------------------------------------------------------------------------------
    def totals(self) -> dict[str, Any]:
        """Episodes, success rate, mean score and steps, token sums, and the first episode's env / brain / model."""
        with self._connect() as db:
            t = dict(zip(TOTALS, db.execute(f"SELECT {', '.join(TOTALS)} FROM totals").fetchone() or (0,) * 7))
            first = db.execute("SELECT env, brain, model FROM episodes ORDER BY row LIMIT 1").fetchone()
        n = t["episodes"]
        return {
            "episodes": n,
            "success_rate": t["solved"] / n if n else None,
            "mean_score": 100 * t["reward"] / n if n else None,
            "mean_steps": t["steps"] / n if n else None,
            "tokens_in": t["tokens_in"],
            "tokens_out": t["tokens_out"],
            "with_prm": t["with_prm"],
            **dict(zip(("env", "brain", "model"), first or ("", "", ""))),
        }

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        """Rows of a read-only SQL statement over `episodes`, as dicts."""
        with self._connect() as db:
            cur = db.execute(sql, params)
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r)) for r in cur.fetchall()]

    def read_line(self, offset: int, length: int) -> dict[str, Any]:
        """The episode stored at that byte range, parsed (ValueError when it no longer holds one)."""
        with open(self.store, "rb") as f:
            f.seek(offset)
            line = f.read(length)
        try:
            ep = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"the store no longer holds an episode at byte {offset} ({e})") from e
        if not isinstance(ep, dict):
            raise ValueError(f"the store's line at byte {offset} is not an episode")
        return ep

    def query_with(self, other: EpisodeIndex, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        """A read-only query over this index's `episodes` and the other's, attached as `b.episodes`."""
        with self._connect() as db:
            db.execute("ATTACH DATABASE ? AS b", (str(other.path),))
            cur = db.execute(sql, params)
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r)) for r in cur.fetchall()]
