"""Every brain call cached in SQLite, so a replay is bit-identical without calling a model.

The key is a SHA-256 of everything that determines a call's answer: the brain's name and model,
the call kind (`choose` / `complete`), the prompt messages, the candidates, and the sampling
parameters (temperature, prefix, seed, max_tokens, stop, tools). The value is the whole
`BrainOutput` as JSON (text, candidate scores, token counts, even the measured latency), so a
replayed trajectory equals the recorded one field by field.

`CallCache(path, mode)`: `on` reads and writes, `off` does neither, `replay` reads only and raises
`CacheMiss` on a miss (a replay that would have to call a model is a bug, not a slow path).
Entries are committed as they are written (SQLite WAL), so a run killed with `kill -9` keeps every
call it paid for and its resume replays them for free.

`cached(brain, cache)` wraps a brain; the wrapper keeps the abilities the agent checks with
`isinstance` (`ChoosingBrain`, `AsyncChoosingBrain`) only when the wrapped brain has them.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Any, Literal

from agents.brains.base import AsyncChoosingBrain, Brain, BrainOutput, CandidateScore, ChoosingBrain, Message, ToolCall

CACHE_FILE = "llm_cache.sqlite"
CacheMode = Literal["on", "off", "replay"]


class CacheMiss(RuntimeError):
    """A replay asked for a call that is not in the cache."""


def call_key(brain: Brain, kind: str, messages: list[Message], candidates: list[str] | None, params: dict) -> str:
    """The cache key of one call: hash of brain, model, kind, messages, candidates and sampling parameters."""
    blob = json.dumps(
        {
            "brain": getattr(brain, "name", type(brain).__name__),
            "model": getattr(brain, "model", ""),
            "kind": kind,
            "messages": messages,
            "candidates": candidates,
            "params": params,
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def output_to_json(out: BrainOutput) -> str:
    return json.dumps(asdict(out))


def output_from_json(text: str) -> BrainOutput:
    d = json.loads(text)
    d["tool_calls"] = [ToolCall(**t) for t in d.get("tool_calls") or []]
    if d.get("candidates") is not None:
        d["candidates"] = [CandidateScore(**c) for c in d["candidates"]]
    return BrainOutput(**d)


class CallCache:
    """A SQLite table key -> BrainOutput JSON; thread-safe (brain calls run in worker threads)."""

    def __init__(self, path: Path | str | None, mode: CacheMode = "on") -> None:
        if mode not in ("on", "off", "replay"):
            raise ValueError(f"cache mode must be on, off or replay; got {mode!r}")
        self.mode = mode
        self.hits = self.misses = self.calls = 0  # calls = calls that reached the brain
        self._lock = threading.Lock()
        self.db: sqlite3.Connection | None = None
        if mode != "off":
            if path is None:
                raise ValueError("a cache needs a path unless mode=off")
            self.db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, output TEXT NOT NULL)")

    def get(self, key: str) -> BrainOutput | None:
        if self.db is None:
            return None
        with self._lock:
            row = self.db.execute("SELECT output FROM calls WHERE key = ?", (key,)).fetchone()
            if row is not None:
                self.hits += 1
                return output_from_json(row[0])
            self.misses += 1
        if self.mode == "replay":
            raise CacheMiss(
                f"cache=replay: call {key[:12]} is not in the cache (the run differs from the recorded one)"
            )
        return None

    def put(self, key: str, out: BrainOutput) -> None:
        with self._lock:
            self.calls += 1
            if self.db is not None:
                self.db.execute("INSERT OR REPLACE INTO calls VALUES (?, ?)", (key, output_to_json(out)))

    def __len__(self) -> int:
        if self.db is None:
            return 0
        with self._lock:
            return int(self.db.execute("SELECT COUNT(*) FROM calls").fetchone()[0])

    def stats(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses, "brain_calls": self.calls}

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None


class CachedBrain:
    """A brain whose `complete`/`acomplete` go through a `CallCache`."""

    def __init__(self, inner: Brain, cache: CallCache) -> None:
        self.inner = inner
        self.cache = cache
        self.name = inner.name
        self.model = inner.model
        self.can_write_text = bool(getattr(inner, "can_write_text", True))
        self.temperature = getattr(inner, "temperature", 0.0)

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def _key(self, kind: str, messages: list[Message], candidates: list[str] | None, params: dict[str, Any]) -> str:
        return call_key(self.inner, kind, messages, candidates, params)

    def complete(self, messages: list[Message], **kw: Any) -> BrainOutput:
        key = self._key("complete", messages, None, kw)
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        out = self.inner.complete(messages, **kw)
        self.cache.put(key, out)
        return out

    async def acomplete(self, messages: list[Message], **kw: Any) -> BrainOutput:
        key = self._key("complete", messages, None, kw)
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        out = await self.inner.acomplete(messages, **kw)
        self.cache.put(key, out)
        return out


class CachedChoosingBrain(CachedBrain):
    """`CachedBrain` plus `choose`/`achoose` (the wrapped brain ranks actions)."""

    def choose(
        self,
        messages: list[Message],
        candidates: list[str],
        *,
        temperature: float = 0.0,
        prefix: str = "",
        seed: int | None = None,
    ) -> BrainOutput:
        assert isinstance(self.inner, ChoosingBrain)
        params = {"temperature": temperature, "prefix": prefix, "seed": seed}
        key = self._key("choose", messages, candidates, params)
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        out = self.inner.choose(messages, candidates, temperature=temperature, prefix=prefix, seed=seed)
        self.cache.put(key, out)
        return out

    async def achoose(
        self,
        messages: list[Message],
        candidates: list[str],
        *,
        temperature: float = 0.0,
        prefix: str = "",
        seed: int | None = None,
    ) -> BrainOutput:
        params = {"temperature": temperature, "prefix": prefix, "seed": seed}
        key = self._key("choose", messages, candidates, params)
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        if isinstance(self.inner, AsyncChoosingBrain):
            out = await self.inner.achoose(messages, candidates, temperature=temperature, prefix=prefix, seed=seed)
        else:
            assert isinstance(self.inner, ChoosingBrain)
            out = await asyncio.to_thread(
                self.inner.choose, messages, candidates, temperature=temperature, prefix=prefix, seed=seed
            )
        self.cache.put(key, out)
        return out


def cached(brain: Brain, cache: CallCache) -> Brain:
    """`brain` behind `cache`, keeping only the abilities it has (the agent detects them with isinstance)."""
    if isinstance(brain, ChoosingBrain):
        return CachedChoosingBrain(brain, cache)
    return CachedBrain(brain, cache)
