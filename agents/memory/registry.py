"""Build memories by name: `make_memory("episodic", path=...)`, `make_memory("working+reflective", brain=b)`.

Options for a single memory go as keyword arguments; for a composite, as one dict per part name
(`make_memory("working+facts", working={"max_items": 20}, facts={"multi_valued": ["likes"]})`), plus an
optional `weights` dict for the budget split. Unknown names and options fail with the valid choices.

Each memory declares itself at its class, with its facts:

    @register_memory("notes", carries_state=True)
    class NotesMemory: ...

`carries_state`: the memory learns across episodes, so a run passes its state from episode to episode
(unless `carry_memory=false`). The project's memories are the modules of `agents/memory/` that use the
decorator; third-party packages name their class in the entry-point group `agentsim.memories`:

    [project.entry-points."agentsim.memories"]
    notes = "my_pkg.memory:NotesMemory"    # a class or function; gets brain= if it has that parameter
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from agents.memory.base import Memory
from agents.memory.composite import CompositeMemory
from agents.plugins import MEMORY_GROUP, PartSpec, PluginError, Registry


@dataclass(frozen=True)
class MemorySpec(PartSpec):
    """A memory's registration: its options model and whether it carries state across episodes."""

    carries_state: bool = False


def _default_spec(name: str, target: Any) -> MemorySpec:
    return MemorySpec(name=name, target=target)


# A factory is called with the memory's options as keyword arguments, plus `brain=` if it has a
# `brain` parameter (memories that summarise, reflect or extract with the agent's model).
MEMORY_REGISTRY: Registry[MemorySpec] = Registry(
    "memory", MEMORY_GROUP, ("agents.memory",), "@register_memory(", _default_spec
)

M = TypeVar("M")


def register_memory(
    name: str, *, options: type[BaseModel] | None = None, carries_state: bool = False
) -> Callable[[M], M]:
    """Declare a memory class (or factory) under `name`, with its options model and facts."""

    def deco(target: M) -> M:
        MEMORY_REGISTRY.add(MemorySpec(name=name, target=target, options=options, carries_state=carries_state))
        return target

    return deco


def carries_state(name: str) -> bool:
    """Whether memory `name` (or any part of a '+'-joined composite) learns across episodes."""
    return any(
        part in MEMORY_REGISTRY and MEMORY_REGISTRY.get(part).carries_state
        for part in (p.strip() for p in name.split("+"))
        if part
    )


def _takes_brain(factory: Callable[..., Memory]) -> bool:
    try:
        return "brain" in inspect.signature(factory).parameters
    except (TypeError, ValueError):  # a builtin or C callable without a signature
        return False


def _build_one(name: str, brain: Any, kwargs: dict[str, Any]) -> Memory:
    try:
        factory = MEMORY_REGISTRY.get(name).target
    except PluginError as e:
        if name in MEMORY_REGISTRY:
            raise  # known but broken plugin: its own message says why
        raise ValueError(
            f"unknown memory {name!r}; valid: {', '.join(memory_names())} (combine with '+', e.g. working+reflective)"
        ) from e
    if _takes_brain(factory):
        kwargs = {"brain": brain, **kwargs}
    try:
        return factory(**kwargs)
    except ValidationError as e:
        bad = "; ".join(f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors())
        raise ValueError(f"invalid options for {name} memory: {bad}") from e
    except TypeError as e:
        raise ValueError(f"invalid options for {name} memory: {e}") from e


def make_memory(name: str, brain: Any = None, **kwargs: Any) -> Memory:
    """Build the memory `name` (or a '+'-joined composite) with its options; ValueError naming what is valid."""
    names = [n.strip() for n in name.split("+") if n.strip()]
    if not names:
        raise ValueError(f"empty memory name; valid: {', '.join(memory_names())}")
    if len(names) == 1:
        nested = kwargs.pop(names[0], None)  # accept the composite-style nested form too
        opts = {**(nested or {}), **kwargs}
        return _build_one(names[0], brain, opts)
    weights = kwargs.pop("weights", None) or {}
    stray = [k for k in kwargs if k not in names]
    if stray:
        raise ValueError(f"options {stray} for {name} must be nested under a part name ({', '.join(names)})")
    unknown_w = [k for k in weights if k not in names]
    if unknown_w:
        raise ValueError(f"weights given for {unknown_w}, which are not parts of {name}")
    parts = [_build_one(n, brain, dict(kwargs.get(n) or {})) for n in names]
    return CompositeMemory(parts, [float(weights.get(n, 1.0)) for n in names])


def memory_names() -> list[str]:
    """Every memory name `make_memory` accepts: built-ins, then installed plugins (group `agentsim.memories`)."""
    return MEMORY_REGISTRY.names()
