"""A brain that always picks the first candidate action: the smallest thing that keeps the brain contract."""

from __future__ import annotations

import asyncio
from typing import Any

from agents.brains.base import BrainOutput, CandidateScore, Message, approx_tokens


class FirstChoiceBrain:
    """Ranks candidates by their order; generates `Action: <first>` when asked for free text."""

    name = "first"
    can_write_text = False

    def __init__(self, prefer: str = "") -> None:
        self.prefer = prefer
        self.model = f"first(prefer={prefer!r})"

    def count_tokens(self, text: str) -> int:
        """Approximate count; the plugin has no tokenizer."""
        return approx_tokens(text)

    def choose(
        self,
        messages: list[Message],
        candidates: list[str],
        *,
        temperature: float = 0.0,
        prefix: str = "",
        seed: int | None = None,
    ) -> BrainOutput:
        """The first candidate containing `prefer`, else the first one."""
        pick = next((c for c in candidates if self.prefer and self.prefer in c), candidates[0])
        scores = [CandidateScore(c, 0.0 if c == pick else -1.0, 1, 1.0 if c == pick else 0.0) for c in candidates]
        return BrainOutput(text=prefix + pick, candidates=scores, model=self.model)

    def complete(self, messages: list[Message], **_: Any) -> BrainOutput:
        """Free text is not this brain's job: it answers with a fixed action."""
        return BrainOutput(text="Action: noop", model=self.model)

    async def acomplete(self, messages: list[Message], **kw: Any) -> BrainOutput:
        """`complete`, awaitable."""
        return await asyncio.to_thread(self.complete, messages, **kw)
