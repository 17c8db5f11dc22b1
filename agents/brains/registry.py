"""The brain registry: each brain declares itself at its class, with its options and facts.

    @register_brain("echo", in_process=False)
    class EchoBrain: ...

`options`: a pydantic model of what `brain.<key>=` may set and its defaults (the one place a brain's
config defaults live: `brain=<name>` presets are made from it); None: the class's keyword parameters.
`in_process`: the brain's model runs in this process, on its cores (one episode in flight per model
by default, threads split between a pool's instances).

The project's brains are the modules of `agents/brains/` that use the decorator; third-party packages
name their brain class in the entry-point group `agentsim.brains` (see `agents/plugins.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from agents.brains.base import Brain
from agents.plugins import BRAIN_GROUP, PartSpec, PluginError, Registry


@dataclass(frozen=True)
class BrainSpec(PartSpec):
    """A brain's registration: its options model and whether its model runs in this process."""

    in_process: bool = False


def _default_spec(name: str, target: Any) -> BrainSpec:
    return BrainSpec(name=name, target=target)


BRAIN_REGISTRY: Registry[BrainSpec] = Registry(
    "brain", BRAIN_GROUP, ("agents.brains",), "@register_brain(", _default_spec
)

B = TypeVar("B")


def register_brain(name: str, *, options: type[BaseModel] | None = None, in_process: bool = False) -> Callable[[B], B]:
    """Declare a brain class (or factory) under `name`, with its options model and facts."""

    def deco(target: B) -> B:
        BRAIN_REGISTRY.add(BrainSpec(name=name, target=target, options=options, in_process=in_process))
        return target

    return deco


def brain_names() -> list[str]:
    """Every brain name `make_brain` accepts: built-ins, then installed plugins."""
    return BRAIN_REGISTRY.names()


def brain_spec(name: str) -> BrainSpec:
    """The spec of brain `name`; ValueError listing the valid names if unknown (PluginError if it fails to load)."""
    try:
        return BRAIN_REGISTRY.get(name)
    except PluginError as e:
        if name in BRAIN_REGISTRY:
            raise
        raise ValueError(f"unknown brain {name!r}; valid brains: {', '.join(brain_names())}") from e


def in_process(name: str) -> bool:
    """Whether brain `name` runs its model in this process (False for a name that is not registered)."""
    return name in BRAIN_REGISTRY and BRAIN_REGISTRY.get(name).in_process


def make_brain(name: str, **cfg: Any) -> Brain:
    """Build the brain registered as `name` with its options; ValueError listing the valid names if unknown."""
    return brain_spec(name).target(**cfg)  # type: ignore[no-any-return]
