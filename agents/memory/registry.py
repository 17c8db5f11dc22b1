"""Build memories by name: `make_memory("episodic", path=...)`, `make_memory("working+reflective", brain=b)`.

Options for a single memory go as keyword arguments; for a composite, as one dict per part name
(`make_memory("working+facts", working={"max_items": 20}, facts={"multi_valued": ["likes"]})`), plus an
optional `weights` dict for the budget split. Unknown names and options fail with the valid choices.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from agents.memory.base import Memory
from agents.memory.composite import CompositeMemory


def _working(brain: Any, **kw: Any) -> Memory:
    from agents.memory.working import WorkingMemory

    return WorkingMemory(**kw)


def _summary(brain: Any, **kw: Any) -> Memory:
    from agents.memory.summary import SummaryMemory

    return SummaryMemory(brain=brain, **kw)


def _episodic(brain: Any, **kw: Any) -> Memory:
    from agents.memory.episodic import EpisodicMemory

    return EpisodicMemory(**kw)


def _reflective(brain: Any, **kw: Any) -> Memory:
    from agents.memory.reflective import ReflectiveMemory

    return ReflectiveMemory(brain=brain, **kw)


def _facts(brain: Any, **kw: Any) -> Memory:
    from agents.memory.facts import FactsMemory

    return FactsMemory(brain=brain, **kw)


BUILDERS: dict[str, Callable[..., Memory]] = {
    "working": _working, "summary": _summary, "episodic": _episodic, "reflective": _reflective, "facts": _facts,
}


def _build_one(name: str, brain: Any, kwargs: dict[str, Any]) -> Memory:
    if name not in BUILDERS:
        raise ValueError(f"unknown memory {name!r}; valid: {', '.join(BUILDERS)} (combine with '+', e.g. working+reflective)")
    try:
        return BUILDERS[name](brain, **kwargs)
    except ValidationError as e:
        bad = "; ".join(f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors())
        raise ValueError(f"invalid options for {name} memory: {bad}") from e
    except TypeError as e:
        raise ValueError(f"invalid options for {name} memory: {e}") from e


def make_memory(name: str, brain: Any = None, **kwargs: Any) -> Memory:
    names = [n.strip() for n in name.split("+") if n.strip()]
    if not names:
        raise ValueError(f"empty memory name; valid: {', '.join(BUILDERS)}")
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
    return list(BUILDERS)
