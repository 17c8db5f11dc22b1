"""How the summary memory compresses turns that fell out of its window.

`BrainSummarizer` asks any brain (the embedded llama.cpp one included) to fold new events into the running
summary. `ExtractiveSummarizer` needs no model: it keeps the events' own sentences, newest first within a
size cap — weaker, but deterministic and free, for runs without a brain.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from agents.memory.base import MemoryItem, ask, require_complete
from agents.memory.text import render

log = logging.getLogger(__name__)

SYSTEM = (
    "You maintain a concise running summary of what an agent has seen and done. Keep every concrete fact "
    "(names, numbers, places, preferences, decisions, errors). When a fact changed, keep only its newest value. "
    "Write plain sentences, no preamble."
)


class Summarizer(Protocol):
    """Folds events into a running summary."""

    def summarize(self, previous: str, events: list[MemoryItem]) -> str: ...


class BrainSummarizer:
    """A running summary rewritten by a brain; extractive when the brain returns nothing."""

    def __init__(self, brain: Any, max_tokens: int = 256, temperature: float = 0.0) -> None:
        self.brain = require_complete(brain)
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.calls = 0

    def summarize(self, previous: str, events: list[MemoryItem]) -> str:
        new = "\n".join(render(e) for e in events)
        user = f"Current summary:\n{previous or '(empty)'}\n\nNew events:\n{new}\n\nWrite the updated summary."
        text = ask(self.brain, SYSTEM, user, max_tokens=self.max_tokens, temperature=self.temperature).strip()
        self.calls += 1
        if not text:
            log.warning("summary brain returned empty text; keeping the events extractively")
            return ExtractiveSummarizer().summarize(previous, events)
        return text


class ExtractiveSummarizer:
    """Concatenate event texts, dropping the oldest sentences once over `max_chars`."""

    def __init__(self, max_chars: int = 2000) -> None:
        self.max_chars = max_chars

    def summarize(self, previous: str, events: list[MemoryItem]) -> str:
        lines = [ln for ln in previous.split("\n") if ln] + [e.text.strip() for e in events if e.text.strip()]
        kept: list[str] = []
        size = 0
        for ln in reversed(lines):
            if size + len(ln) + 1 > self.max_chars:
                break
            kept.append(ln)
            size += len(ln) + 1
        return "\n".join(reversed(kept))
