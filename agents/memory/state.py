"""Validation helpers for `load_state`: every memory rejects a corrupt state with a `MemoryStateError` saying what."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from agents.memory.base import MemoryItem, MemoryStateError

M = TypeVar("M", bound=BaseModel)


def check_header(state: Any, kind: str, version: int) -> dict[str, Any]:
    """The common envelope: a dict with the right `kind` and a supported `version`."""
    if not isinstance(state, dict):
        raise MemoryStateError(f"{kind} memory state must be a dict, got {type(state).__name__}")
    if state.get("kind") != kind:
        raise MemoryStateError(f"{kind} memory state has kind={state.get('kind')!r}; it was saved by another memory type")
    if state.get("version") != version:
        raise MemoryStateError(f"{kind} memory state version {state.get('version')!r} is not supported (expected {version})")
    return state


def parse_model(model: type[M], raw: Any, where: str) -> M:
    """Validate one part of a state with pydantic and turn its error into a `MemoryStateError` naming `where`."""
    try:
        return model.model_validate(raw)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise MemoryStateError(f"{where} is malformed at '{loc}': {first['msg']}") from e


class ItemModel(BaseModel):
    """The wire form of a `MemoryItem` inside a saved state."""

    text: str
    kind: str = "event"
    time: float = 0.0
    importance: float = 0.0
    meta: dict[str, Any] = {}

    def to_item(self) -> MemoryItem:
        return MemoryItem(text=self.text, kind=self.kind, time=self.time, importance=self.importance, meta=dict(self.meta))


def parse_items(raw: Any, where: str) -> list[MemoryItem]:
    if not isinstance(raw, list):
        raise MemoryStateError(f"{where} must be a list, got {type(raw).__name__}")
    return [parse_model(ItemModel, r, f"{where}[{i}]").to_item() for i, r in enumerate(raw)]
