"""Pack text lines into a token budget (the one rule every `build_context` follows)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agents.memory.base import TokenCounter


def pack_indices(lines: list[str], budget_tokens: int, count_tokens: TokenCounter, header: str = "") -> list[int]:
    """Indices of the lines, in the given (priority) order, that fit the budget (callers may reorder them).

    A line that does not fit is skipped rather than ending the scan, so a short, high-value line after a long one
    still gets in. The header, if any, is charged first (callers emit it only when at least one line fits).
    """
    if budget_tokens <= 0:
        return []
    used = count_tokens(header) + 1 if header else 0
    kept: list[int] = []
    for i, line in enumerate(lines):
        cost = count_tokens(line) + 1
        if used + cost <= budget_tokens:
            kept.append(i)
            used += cost
    return kept


def pack_text(
    lines: list[str],
    budget_tokens: int,
    count_tokens: TokenCounter,
    header: str,
    order: Callable[[int], Any] | None = None,
) -> str:
    """The header and the lines that fit (`pack_indices`), one a line, in priority order or sorted by `order`
    (a key on line indices); "" when no line fits."""
    kept = pack_indices(lines, budget_tokens, count_tokens, header=header)
    if order is not None:
        kept.sort(key=order)
    return "\n".join([header, *(lines[i] for i in kept)]) if kept else ""
