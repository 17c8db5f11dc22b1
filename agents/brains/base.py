"""The brain contract: messages in, text (or a ranked choice) out.

Every backend implements `complete`/`acomplete`. Backends that can score candidate
continuations (the local llama.cpp brain) also implement `choose`, which the agent uses when
the env lists `available_actions`: a 270M model rarely *writes* a valid action, but it can
*rank* valid ones.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

Message = dict[str, Any]  # OpenAI chat format: {"role": ..., "content": ..., ["tool_calls": ...]}


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text, as the model wrote it


@dataclass
class CandidateScore:
    text: str
    logprob: float  # summed token logprob of the candidate continuation
    n_tokens: int
    score: float  # what the ranking used (e.g. mean logprob)


@dataclass
class BrainOutput:
    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    logprobs: list[float] | None = None
    candidates: list[CandidateScore] | None = None  # set by `choose`
    finish_reason: str | None = None
    model: str = ""


class BrainError(RuntimeError):
    """A brain could not produce output (endpoint down, model missing, ...). Message says why and how to fix."""


@runtime_checkable
class Brain(Protocol):
    name: str
    model: str

    def complete(self, messages: list[Message], *, temperature: float | None = None, max_tokens: int | None = None,
                 stop: list[str] | None = None, tools: list[dict] | None = None) -> BrainOutput: ...

    async def acomplete(self, messages: list[Message], *, temperature: float | None = None, max_tokens: int | None = None,
                        stop: list[str] | None = None, tools: list[dict] | None = None) -> BrainOutput: ...

    def count_tokens(self, text: str) -> int: ...


@runtime_checkable
class ChoosingBrain(Brain, Protocol):
    def choose(self, messages: list[Message], candidates: list[str], *, temperature: float = 0.0,
               prefix: str = "", seed: int | None = None) -> BrainOutput:
        """Pick one of `candidates` as the continuation of the assistant turn after `prefix`.

        temperature 0 = argmax of the score; > 0 = sample from softmax(score / temperature).
        The chosen text is `output.text`; every candidate's score is in `output.candidates`.
        """
        ...


def approx_tokens(text: str) -> int:
    """Token estimate for brains without a tokenizer (about 4 characters a token for English)."""
    return max(1, (len(text) + 3) // 4) if text else 0


class SyncBrainMixin:
    """Gives a sync-only brain an `acomplete` that runs in a worker thread."""

    async def acomplete(self, messages: list[Message], **kwargs: Any) -> BrainOutput:
        return await asyncio.to_thread(self.complete, messages, **kwargs)  # type: ignore[attr-defined]
