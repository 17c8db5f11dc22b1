"""Shared test doubles: a deterministic brain (stands in for an LLM; the contract is just `complete`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from agents.brains.base import BrainOutput, approx_tokens
from agents.memory.embeddings import HashingEmbedder


@dataclass
class ScriptedBrain:
    """Answers from a fixed list (cycled), recording every prompt it was sent."""

    replies: list[str]
    name: str = "scripted-test"
    model: str = "scripted"
    prompts: list[list[dict]] = field(default_factory=list)

    def complete(self, messages, *, temperature=None, max_tokens=None, stop=None, tools=None) -> BrainOutput:
        self.prompts.append(messages)
        return BrainOutput(text=self.replies[(len(self.prompts) - 1) % len(self.replies)])

    def count_tokens(self, text: str) -> int:
        return approx_tokens(text)


class EchoSummaryBrain(ScriptedBrain):
    """'Summarizes' by keeping the words of the new events (deterministic, so tests can check what got folded)."""

    def __init__(self) -> None:
        super().__init__(replies=[""])

    def complete(self, messages, **kw) -> BrainOutput:
        self.prompts.append(messages)
        user = messages[-1]["content"]
        prev = user.split("Current summary:\n", 1)[1].split("\n\nNew events:", 1)[0]
        new = user.split("New events:\n", 1)[1].split("\n\nWrite the updated summary.", 1)[0]
        events = [ln.split("] ", 1)[-1] for ln in new.splitlines()]
        base = "" if prev == "(empty)" else prev + " "
        return BrainOutput(text=base + " ".join(events))


def count_words(text: str) -> int:
    return len(text.split())


@pytest.fixture
def hashing() -> HashingEmbedder:
    return HashingEmbedder(dim=256)
