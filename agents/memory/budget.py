"""Pack text lines into a token budget (the one rule every `build_context` follows)."""

from __future__ import annotations

from collections.abc import Iterable

from agents.memory.base import TokenCounter


def pack_lines(lines: Iterable[str], budget_tokens: int, count_tokens: TokenCounter, header: str = "") -> list[str]:
    """Take lines in the given (priority) order while they fit; a line that does not fit is skipped.

    Skipping (instead of stopping) lets a short, high-value line after a long one still get in. The header,
    if any, is charged first and only emitted when at least one line fits.
    """
    if budget_tokens <= 0:
        return []
    used = count_tokens(header) + 1 if header else 0
    out: list[str] = []
    for line in lines:
        cost = count_tokens(line) + 1  # +1 for the newline
        if used + cost > budget_tokens:
            continue
        out.append(line)
        used += cost
    if header and out:
        return [header, *out]
    return out


def pack_indices(lines: list[str], budget_tokens: int, count_tokens: TokenCounter, header: str = "") -> list[int]:
    """Like `pack_lines` but returns the indices of the lines that fit (so callers can reorder them)."""
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
