"""A memory that keeps the last few items as notes: the smallest thing that keeps the memory contract."""

from __future__ import annotations

from typing import Any

from agents.memory.base import MemoryItem, MemoryStateError, TokenCounter
from agents.memory.registry import register_memory


@register_memory("notes", carries_state=True)  # notes persist across episodes
class NotesMemory:
    """The last `max_notes` items, newest last; no retrieval model."""

    name = "notes"

    def __init__(self, max_notes: int = 5, brain: Any = None) -> None:
        if max_notes < 1:
            raise ValueError(f"max_notes must be >= 1, got {max_notes}")
        self.max_notes, self.brain = max_notes, brain
        self.notes: list[str] = []
        self.last_injected = ""

    def add(self, item: MemoryItem) -> None:
        """Keep the item's text, dropping the oldest beyond max_notes."""
        self.notes = (self.notes + [item.text])[-self.max_notes :]

    def retrieve(self, query: str, k: int = 5) -> list[MemoryItem]:
        """The newest k notes."""
        return [MemoryItem(t, kind="note") for t in self.notes[-k:]]

    def build_context(self, query: str, budget_tokens: int, count_tokens: TokenCounter) -> str:
        """Newest notes that fit the budget, oldest first."""
        kept: list[str] = []
        for note in reversed(self.notes):
            if count_tokens("\n".join([note, *kept])) > budget_tokens:
                break
            kept.insert(0, note)
        self.last_injected = "\n".join(kept)
        return self.last_injected

    def on_episode_start(self, instruction: str) -> None:
        """Nothing to do: notes persist across episodes."""

    def on_episode_end(self, outcome: dict[str, Any]) -> None:
        """Nothing to do."""

    def save_state(self) -> dict[str, Any]:
        """The notes, JSON-able."""
        return {"kind": "notes", "version": 1, "notes": list(self.notes)}

    def load_state(self, state: dict[str, Any]) -> None:
        """Restore notes saved by `save_state`."""
        if not isinstance(state, dict) or state.get("kind") != "notes" or not isinstance(state.get("notes"), list):
            raise MemoryStateError(f"notes memory: not a notes state: {str(state)[:80]}")
        self.notes = [str(n) for n in state["notes"]][-self.max_notes :]

    def clear(self) -> None:
        """Forget every note."""
        self.notes = []
        self.last_injected = ""
