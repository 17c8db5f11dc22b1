"""Cheap deterministic test brains for society runs (registered as `counting` by `register()`)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import threading
import time
from typing import Any

from agents.brains.base import BrainOutput, CandidateScore, Message, approx_tokens
from agents.brains.registry import BRAIN_REGISTRY
from envs.contract import SLOT


class CountingBrain:
    """Ranks candidates by a hash of (prompt, candidate, seed): deterministic, prompt-sensitive, and counted.

    `calls` counts every call that reached a brain of this class; `in_flight`/`max_in_flight` show how
    many async calls overlapped; `delay_s` makes a run slow enough to be killed mid-way."""

    name = "counting"
    model = "hash-v1"
    can_write_text = True
    calls = 0
    in_flight = 0
    max_in_flight = 0

    def __init__(self, delay_s: float = 0.0, async_delay_s: float = 0.0, seed: int = 0) -> None:
        self.delay_s = delay_s or float(os.environ.get("AGENTSIM_TEST_BRAIN_DELAY", 0))  # a run slow enough to kill
        self.async_delay_s, self.seed = async_delay_s, seed
        self.temperature = 0.0
        self._lock = threading.Lock()  # as a model-backed brain holds: it cannot be deep-copied

    @classmethod
    def reset_counts(cls) -> None:
        cls.calls = cls.in_flight = cls.max_in_flight = 0

    def count_tokens(self, text: str) -> int:
        return approx_tokens(text)

    def _score(self, messages: list[Message], cand: str, seed: int | None) -> float:
        h = hashlib.sha256(json.dumps([messages, cand, seed]).encode()).digest()
        return int.from_bytes(h[:4], "big") / 2**32

    def choose(
        self,
        messages: list[Message],
        candidates: list[str],
        *,
        temperature: float = 0.0,
        prefix: str = "",
        seed: int | None = None,
    ) -> BrainOutput:
        type(self).calls += 1
        if self.delay_s:
            time.sleep(self.delay_s)
        concrete = [c for c in candidates if SLOT not in c] or candidates
        scores = [
            CandidateScore(c, -self._score(messages, c, seed), 1, -self._score(messages, c, seed)) for c in concrete
        ]
        best = max(scores, key=lambda s: s.score).text
        if SLOT in best:
            best = best.replace(SLOT, "0.5")
        return BrainOutput(text=prefix + best, tokens_in=10, tokens_out=1, candidates=scores, model=self.model)

    async def achoose(self, messages: list[Message], candidates: list[str], **kw: Any) -> BrainOutput:
        cls = type(self)
        cls.in_flight += 1
        cls.max_in_flight = max(cls.max_in_flight, cls.in_flight)
        try:
            if self.async_delay_s:
                await asyncio.sleep(self.async_delay_s)
            return self.choose(messages, candidates, **kw)
        finally:
            cls.in_flight -= 1

    def complete(self, messages: list[Message], **kw: Any) -> BrainOutput:
        type(self).calls += 1
        h = hashlib.sha256(json.dumps(messages).encode()).hexdigest()[:8]
        return BrainOutput(text=f"I am a hash brain; my answer is {h}.", tokens_in=10, tokens_out=8, model=self.model)

    async def acomplete(self, messages: list[Message], **kw: Any) -> BrainOutput:
        return self.complete(messages, **kw)


def register() -> None:
    BRAIN_REGISTRY.register("counting", "tests.societies.brains:CountingBrain")
