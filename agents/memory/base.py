"""The memory protocol every memory implementation keeps.

A memory stores `MemoryItem`s (observations, actions, events, lessons, facts), retrieves the
most relevant for a query, and builds a context string within a token budget for the
perception module. It can save/load its state (JSON-able dict) so an agent's memory survives
restarts, and records what it injected into the last prompt (`last_injected`), which the
episode loop stores in the trajectory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, runtime_checkable

TokenCounter = Callable[[str], int]


@dataclass
class MemoryItem:
    text: str
    kind: str = "event"  # observation | action | event | lesson | fact | summary | ...
    time: float = 0.0  # step counter or wall time; monotone within an agent
    importance: float = 0.0  # 0..1
    meta: dict[str, Any] = field(default_factory=dict)


class MemoryStateError(ValueError):
    """A saved memory state is corrupt or from an incompatible version; message says what and where."""


@runtime_checkable
class Memory(Protocol):
    name: str
    last_injected: str

    def add(self, item: MemoryItem) -> None: ...

    def retrieve(self, query: str, k: int = 5) -> list[MemoryItem]: ...

    def build_context(self, query: str, budget_tokens: int, count_tokens: TokenCounter) -> str:
        """Text to put into the prompt, at most `budget_tokens`; also sets `last_injected`."""
        ...

    def on_episode_start(self, instruction: str) -> None: ...

    def on_episode_end(self, outcome: dict[str, Any]) -> None: ...

    def save_state(self) -> dict[str, Any]: ...

    def load_state(self, state: dict[str, Any]) -> None: ...

    def clear(self) -> None: ...


def names_to_config(kwargs: dict[str, Any], **parts: Any) -> list[Any]:
    """A part given by name (`embedder="minilm"`, `reflector="rule"`) is a config field, moved into `kwargs`;
    an object is used as is. Returns the parts in order, None where a name was given."""
    out = []
    for field, value in parts.items():
        if isinstance(value, str):
            kwargs[field], value = value, None
        out.append(value)
    return out
