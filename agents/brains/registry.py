"""Build a brain from its config name: local (default), openai, scripted, or a plugin's.

Third-party packages add brains through the entry-point group `agentsim.brains`; the value
names a callable taking the brain config's options as keyword arguments (usually the class):

    [project.entry-points."agentsim.brains"]
    echo = "my_pkg.brains:EchoBrain"
"""

from __future__ import annotations

from typing import Any

from agents.brains.base import Brain
from agents.plugins import BRAIN_GROUP, PluginError, Registry

BRAIN_REGISTRY: Registry[Brain] = Registry("brain", BRAIN_GROUP)
BRAIN_REGISTRY.register("local", "agents.brains.local:LocalBrain")
BRAIN_REGISTRY.register("openai", "agents.brains.openai_brain:OpenAIBrain")
BRAIN_REGISTRY.register("scripted", "agents.brains.scripted:ScriptedBrain")

BRAINS = ("local", "openai", "scripted")  # the built-ins; `brain_names()` adds installed plugins


def brain_names() -> list[str]:
    """Every brain name `make_brain` accepts: built-ins, then installed plugins."""
    return BRAIN_REGISTRY.names()


def make_brain(name: str, **cfg: Any) -> Brain:
    """Build the brain registered as `name` with its options; ValueError listing the valid names if unknown."""
    try:
        factory = BRAIN_REGISTRY.get(name)
    except PluginError as e:
        if name in BRAIN_REGISTRY:
            raise
        raise ValueError(f"unknown brain {name!r}; valid brains: {', '.join(brain_names())}") from e
    return factory(**cfg)
