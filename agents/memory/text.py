"""Small text helpers shared by the memories: word tokens for lexical matching and item rendering."""

from __future__ import annotations

import re
from typing import Any

from agents.memory.base import MemoryItem

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
STOPWORDS = frozenset(
    "a an the is are was were be been am i you he she it we they me my your his her its our their this that these "
    "those of to in on at for with by from and or but not no do does did what which who whom whose when where why how "
    "as so if then than there here about into over under up down out just also very can could should would will shall "
    "may might must have has had s".split()
)


def words(text: str) -> list[str]:
    """Lower-cased word tokens ("alice's" -> "alice"), stopwords kept."""
    return [w.split("'")[0] for w in _WORD.findall(text.lower())]


def content_words(text: str) -> set[str]:
    """Lower-cased word tokens without stopwords: what lexical overlap is computed on."""
    return {w for w in words(text) if w not in STOPWORDS}


def overlap_score(query: str, text: str) -> float:
    """Share of the query's content words that occur in `text` (0..1); 0 for an empty query."""
    q = content_words(query)
    if not q:
        return 0.0
    return len(q & content_words(text)) / len(q)


def render(item: MemoryItem) -> str:
    """One prompt line for an item."""
    return f"[{item.kind}] {item.text}"


def outcome_text(outcome: dict[str, Any]) -> str:
    """An episode outcome's plain fields as `key=value, ...` (for a prompt or a memory line)."""
    return ", ".join(f"{k}={v}" for k, v in outcome.items() if isinstance(v, (str, int, float, bool)))
