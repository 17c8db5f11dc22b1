"""Summarizing memory: a window of recent turns plus a running summary of everything older.

When the window holds more than `window_items`, the oldest `fold_items` are folded into the summary by
the summarizer (a brain, or extractive without one). The context is the summary, then the newest turns
that still fit the budget.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agents.memory.base import MemoryItem, TokenCounter
from agents.memory.budget import pack_indices
from agents.memory.registry import register_memory
from agents.memory.state import check_header, parse_model
from agents.memory.summarizers import BrainSummarizer, ExtractiveSummarizer, Summarizer
from agents.memory.text import render

STATE_VERSION = 1


class SummaryConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    window_items: int = Field(20, ge=1)
    fold_items: int = Field(10, ge=1)
    summary_max_tokens: int = Field(256, ge=16)
    reset_each_episode: bool = True

    @model_validator(mode="after")
    def _fold_fits(self) -> SummaryConfig:
        if self.fold_items > self.window_items:
            raise ValueError(f"fold_items ({self.fold_items}) must be <= window_items ({self.window_items})")
        return self


class SummaryState(BaseModel):
    config: SummaryConfig
    summary: str
    folded: int = Field(ge=0)
    summary_sources: list[Any]
    window: list[MemoryItem]


@register_memory("summary")
class SummaryMemory:
    name = "summary"

    def __init__(
        self,
        brain: Any = None,
        config: SummaryConfig | None = None,
        summarizer: Summarizer | None = None,
        **kwargs: Any,
    ) -> None:
        self.config = config or SummaryConfig(**kwargs)
        self.summarizer: Summarizer = summarizer or (
            BrainSummarizer(brain, max_tokens=self.config.summary_max_tokens)
            if brain is not None
            else ExtractiveSummarizer(max_chars=self.config.summary_max_tokens * 4)
        )
        self.window: list[MemoryItem] = []
        self.summary = ""
        self.summary_sources: list[Any] = []  # meta['turn_id'] of folded items, for evaluation
        self.folded = 0
        self.last_injected = ""

    def add(self, item: MemoryItem) -> None:
        self.window.append(item)
        if len(self.window) > self.config.window_items:
            chunk, self.window = self.window[: self.config.fold_items], self.window[self.config.fold_items :]
            self.summary = self.summarizer.summarize(self.summary, chunk)
            self.summary_sources.extend(i.meta.get("turn_id") for i in chunk if "turn_id" in i.meta)
            self.folded += len(chunk)

    def _summary_item(self) -> MemoryItem:
        return MemoryItem(self.summary, kind="summary", meta={"folded": self.folded})

    def retrieve(self, query: str, k: int = 5) -> list[MemoryItem]:
        """The summary (if any) and then the newest turns: summaries have no finer-grained retrieval."""
        if k <= 0:
            return []
        head = [self._summary_item()] if self.summary else []
        rest = k - len(head)
        return head + (self.window[-rest:] if rest > 0 else [])

    def build_context(self, query: str, budget_tokens: int, count_tokens: TokenCounter) -> str:
        parts: list[str] = []
        used = 0
        if self.summary:
            text = f"Summary of earlier events:\n{self.summary}"
            while text and count_tokens(text) > budget_tokens:  # an over-long summary is cut, oldest part first
                text = text[len(text) // 4 :]
            if text:
                parts.append(text)
                used = count_tokens(text) + 1
        lines = [render(i) for i in reversed(self.window)]
        kept = pack_indices(lines, budget_tokens - used, count_tokens, header="Recent events:")
        # a window is contiguous: stop at the first line that did not fit
        contiguous = [i for n, i in enumerate(kept) if i == n]
        if contiguous:
            parts.append("Recent events:\n" + "\n".join(lines[i] for i in reversed(contiguous)))
        self.last_injected = "\n".join(parts)
        return self.last_injected

    def on_episode_start(self, instruction: str) -> None:
        if self.config.reset_each_episode:
            self.clear()

    def on_episode_end(self, outcome: dict[str, Any]) -> None:
        pass

    def save_state(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "kind": self.name,
            "config": self.config.model_dump(),
            "summary": self.summary,
            "folded": self.folded,
            "summary_sources": self.summary_sources,
            "window": [asdict(i) for i in self.window],
        }

    def load_state(self, state: dict[str, Any]) -> None:
        check_header(state, self.name, STATE_VERSION)
        st = parse_model(SummaryState, state, "summary memory state")
        self.config = st.config
        self.window = list(st.window)
        self.summary, self.folded, self.summary_sources = st.summary, st.folded, list(st.summary_sources)

    def clear(self) -> None:
        self.window = []
        self.summary = ""
        self.summary_sources = []
        self.folded = 0
        self.last_injected = ""
