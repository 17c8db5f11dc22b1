"""Validation helpers for `load_state`: every memory rejects a corrupt state with a `MemoryStateError` saying what."""

from __future__ import annotations

from collections.abc import Hashable
from functools import cache
from typing import Any, TypeVar, cast

from pydantic import TypeAdapter, ValidationError

from agents.memory.base import MemoryItem, MemoryStateError

T = TypeVar("T")


def check_header(state: Any, kind: str, version: int) -> dict[str, Any]:
    """The common envelope: a dict with the right `kind` and a supported `version`."""
    if not isinstance(state, dict):
        raise MemoryStateError(f"{kind} memory state must be a dict, got {type(state).__name__}")
    if state.get("kind") != kind:
        raise MemoryStateError(
            f"{kind} memory state has kind={state.get('kind')!r}; it was saved by another memory type"
        )
    if state.get("version") != version:
        raise MemoryStateError(
            f"{kind} memory state version {state.get('version')!r} is not supported (expected {version})"
        )
    return state


@cache
def _adapter(kind: Any) -> TypeAdapter[Any]:
    return TypeAdapter(kind)


def parse_model(kind: type[T], raw: Any, where: str) -> T:
    """Validate one part of a state (a pydantic model or a dataclass) and turn its error into a
    `MemoryStateError` naming `where`."""
    try:
        # a class is hashable; mypy does not see that for type[T] with an unbound T
        return _adapter(cast(Hashable, kind)).validate_python(raw)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise MemoryStateError(f"{where} is malformed at '{loc}': {first['msg']}") from e


def parse_items(raw: Any, where: str) -> list[MemoryItem]:
    """A saved list of `MemoryItem`s (their `asdict` form), each validated."""
    if not isinstance(raw, list):
        raise MemoryStateError(f"{where} must be a list, got {type(raw).__name__}")
    return [parse_model(MemoryItem, r, f"{where}[{i}]") for i, r in enumerate(raw)]
