"""The memory protocol every memory implementation keeps.

A memory stores `MemoryItem`s (observations, actions, events, lessons, facts), retrieves the
most relevant for a query, and builds a context string within a token budget for the
perception module. It can save/load its state (JSON-able dict) so an agent's memory survives
restarts, and records what it injected into the last prompt (`last_injected`), which the
episode loop stores in the trajectory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

TokenCounter = Callable[[str], int]
T = TypeVar("T")
U = TypeVar("U")


@dataclass
class MemoryItem:
    """One thing remembered (an observation, action, lesson, fact, ...) with its time, importance and metadata."""

    text: str
    kind: str = "event"  # observation | action | event | lesson | fact | summary | ...
    time: float = 0.0  # step counter or wall time; monotone within an agent
    importance: float = 0.0  # 0..1
    meta: dict[str, Any] = field(default_factory=dict)


class MemoryStateError(ValueError):
    """A saved memory state is corrupt or from an incompatible version; message says what and where."""


@runtime_checkable
class Memory(Protocol):
    """What every memory does: store items, retrieve them, and build a budgeted prompt context; state is JSON-able."""

    name: str
    last_injected: str

    def add(self, item: MemoryItem) -> None:
        """Store one item (the agent calls this for each observation and action)."""
        ...

    def retrieve(self, query: str, k: int = 5) -> list[MemoryItem]:
        """The `k` items most relevant to `query`, best first."""
        ...

    def build_context(self, query: str, budget_tokens: int, count_tokens: TokenCounter) -> str:
        """Text to put into the prompt, at most `budget_tokens`; also sets `last_injected`."""
        ...

    def on_episode_start(self, instruction: str) -> None:
        """A new episode begins with this task (e.g. reset the working window)."""
        ...

    def on_episode_end(self, outcome: dict[str, Any]) -> None:
        """The episode ended with this outcome (e.g. reflect on it, store it as an episode)."""
        ...

    def save_state(self) -> dict[str, Any]:
        """The whole state as a JSON-able dict (with `kind` and `version`), so memory survives restarts."""
        ...

    def load_state(self, state: dict[str, Any]) -> None:
        """Replace the state with one from `save_state`; MemoryStateError if it is corrupt or another kind's."""
        ...

    def clear(self) -> None:
        """Forget everything."""
        ...


def names_to_config(kwargs: dict[str, Any], **parts: Any) -> list[Any]:
    """A part given by name (`embedder="minilm"`, `reflector="rule"`) is a config field, moved into `kwargs`;
    an object is used as is. Returns the parts in order, None where a name was given."""
    out = []
    for key, value in parts.items():
        if isinstance(value, str):
            kwargs[key], value = value, None
        out.append(value)
    return out


def brain_or_rule(setting: str, brain: Any, with_brain: Callable[[Any], T], rule: Callable[[], U], what: str) -> T | U:
    """The brain-backed helper (reflector, extractor) or the rule-based one, by `setting`: `brain`, `rule`, or
    `auto` (the brain-backed one when a brain is given). `what` names the setting in the error."""
    if setting == "brain" and brain is None:
        raise ValueError(f"{what}='brain' needs a brain")
    return with_brain(brain) if brain is not None and setting != "rule" else rule()


def require_complete(brain: Any) -> Any:
    """`brain`, checked to have `complete(messages, ...)`, which summarizers, reflectors and extractors call."""
    if not hasattr(brain, "complete"):
        raise TypeError(f"brain must have complete(messages, ...), got {type(brain).__name__}")
    return brain


def ask(brain: Any, system: str, user: str, *, max_tokens: int, temperature: float = 0.0) -> str:
    """One system + user exchange with `brain`; the reply's text ("" when there is none)."""
    out = brain.complete(
        [{"role": "system", "content": system}, {"role": "user", "content": user}],
        temperature=temperature,
        max_tokens=max_tokens,
    )
    return out.text or ""
