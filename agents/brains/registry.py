"""Build a brain from its config name: local (default), openai, scripted."""

from __future__ import annotations

from typing import Any

from agents.brains.base import Brain

BRAINS = ("local", "openai", "scripted")


def make_brain(name: str, **cfg: Any) -> Brain:
    if name == "local":
        from agents.brains.local import LocalBrain

        return LocalBrain(**cfg)
    if name == "openai":
        from agents.brains.openai_brain import OpenAIBrain

        return OpenAIBrain(**cfg)
    if name == "scripted":
        from agents.brains.scripted import ScriptedBrain

        return ScriptedBrain(**cfg)
    raise ValueError(f"unknown brain {name!r}; valid brains: {', '.join(BRAINS)}")
