"""Sliding-window working memory: the most recent items that fit the token budget."""

from __future__ import annotations

from collections import deque
from dataclasses import asdict
from typing import Any

from agents.memory.base import MemoryItem, MemoryStateError, TokenCounter
from agents.memory.registry import register_memory
from agents.memory.state import parse_items

STATE_VERSION = 1


@register_memory("working")
class WorkingMemory:
    """Keeps the last `max_items` items; `build_context` packs the newest ones into the budget.

    Retrieval is recency only (the query is ignored): this is the baseline every other memory
    is measured against.
    """

    name = "working"

    def __init__(self, max_items: int = 50) -> None:
        if max_items < 1:
            raise ValueError(f"max_items must be >= 1, got {max_items}")
        self.max_items = max_items
        self.items: deque[MemoryItem] = deque(maxlen=max_items)
        self.last_injected = ""

    def add(self, item: MemoryItem) -> None:
        self.items.append(item)

    def retrieve(self, query: str, k: int = 5) -> list[MemoryItem]:
        return list(self.items)[-k:] if k > 0 else []

    def build_context(self, query: str, budget_tokens: int, count_tokens: TokenCounter) -> str:
        lines: list[str] = []
        used = 0
        for item in reversed(self.items):
            line = f"[{item.kind}] {item.text}"
            cost = count_tokens(line) + 1
            if used + cost > budget_tokens:
                break
            lines.append(line)
            used += cost
        self.last_injected = "\n".join(reversed(lines))
        return self.last_injected

    def on_episode_start(self, instruction: str) -> None:
        self.items.clear()
        self.last_injected = ""

    def on_episode_end(self, outcome: dict[str, Any]) -> None:
        pass

    def save_state(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "kind": self.name,
            "max_items": self.max_items,
            "items": [asdict(i) for i in self.items],
        }

    def load_state(self, state: dict[str, Any]) -> None:
        if not isinstance(state, dict) or state.get("kind") != self.name:
            raise MemoryStateError(
                f"working memory state must be a dict with kind='working', got {type(state).__name__} "
                f"with kind={state.get('kind') if isinstance(state, dict) else None!r}"
            )
        if state.get("version") != STATE_VERSION:
            raise MemoryStateError(
                f"working memory state version {state.get('version')!r} is not supported (expected {STATE_VERSION})"
            )
        items = parse_items(state.get("items", []), "working memory state 'items'")
        max_items = state.get("max_items", self.max_items)
        if not isinstance(max_items, int) or max_items < 1:
            raise MemoryStateError(f"working memory state: 'max_items' must be an int >= 1, got {max_items!r}")
        self.max_items = max_items
        self.items = deque(items, maxlen=self.max_items)

    def clear(self) -> None:
        self.items.clear()
        self.last_injected = ""
