"""Pluggable agent memory: one protocol (`base.Memory`), several implementations, built by name.

from agents.memory import make_memory
mem = make_memory("working+reflective", brain=brain)
"""

from agents.memory.base import Memory, MemoryItem, MemoryStateError, TokenCounter
from agents.memory.registry import make_memory, memory_names

__all__ = ["Memory", "MemoryItem", "MemoryStateError", "TokenCounter", "make_memory", "memory_names"]
