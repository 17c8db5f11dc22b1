"""The brain contract: messages in, text (or a ranked choice) out.

Every backend implements `complete`/`acomplete` (`Brain`). Optional abilities are declared as
runtime-checkable Protocols and detected with `isinstance`, as `envs.contract` does for envs:

- `ChoosingBrain`: `choose` ranks candidate actions (a 270M model rarely *writes* a valid
  action, but it can *rank* valid ones); `AsyncChoosingBrain` adds a non-blocking `achoose`.
- `EnvBoundBrain`: `bind_env(env)` before each episode (a brain that reads the env, e.g. its expert).
- `ForkableBrain`: `fork(seed)` gives a fresh instance per episode (a brain with per-episode state).
- `CheckableBrain`: `check()` fails fast, before a run, if the backend is unreachable.

One ability is a plain class attribute because it is a yes/no fact, not a method:
`can_write_text = False` marks a brain whose text is not a language model's (the scripted
expert), so memories that summarise or reflect fall back to their rule-based versions; see
`writes_text`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

Message = dict[str, Any]  # OpenAI chat format: {"role": ..., "content": ..., ["tool_calls": ...]}


@dataclass
class ToolCall:
    """One native tool call the model made (OpenAI format), parsed into an action by `agents.action`."""

    id: str
    name: str
    arguments: str  # JSON text, as the model wrote it


@dataclass
class CandidateScore:
    """How one candidate action scored in `choose`; kept in the trajectory for analysis and PRM data."""

    text: str
    logprob: float  # summed token logprob of the candidate continuation
    n_tokens: int
    score: float  # what the ranking used (e.g. mean logprob)


@dataclass
class BrainOutput:
    """What a brain returns for one call: the text plus usage, timing and (for `choose`) the ranking."""

    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    logprobs: list[float] | None = None
    candidates: list[CandidateScore] | None = None  # set by `choose`
    finish_reason: str | None = None
    model: str = ""
    # Token-in/token-out for RL trainers (None where the backend cannot say). The ids the model was
    # conditioned on and the ids of its output, so a trainer never re-tokenizes text: detokenized,
    # prompt_token_ids + output_token_ids give the prompt and the output as the brain scored them.
    prompt_token_ids: list[int] | None = None
    output_token_ids: list[int] | None = None
    output_logprobs: list[float] | None = None  # log p of each output token given everything before it


class BrainError(RuntimeError):
    """A brain could not produce output (endpoint down, model missing, ...). Message says why and how to fix."""


@runtime_checkable
class Brain(Protocol):
    """What every brain does: chat completion (sync and async) and token counting for prompt budgets."""

    name: str
    model: str

    def complete(
        self,
        messages: list[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        stop: list[str] | None = None,
        tools: list[dict] | None = None,
    ) -> BrainOutput:
        """Generate the assistant's reply to `messages` (text, or native tool calls if `tools` are given)."""
        ...

    async def acomplete(
        self,
        messages: list[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        stop: list[str] | None = None,
        tools: list[dict] | None = None,
    ) -> BrainOutput:
        """`complete`, awaitable, for concurrent episodes."""
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens `text` takes in this brain's prompt (exact or approximate), for prompt budgets."""
        ...


@runtime_checkable
class ChoosingBrain(Brain, Protocol):
    """A brain that can rank a list of candidate actions (used when the env lists them)."""

    def choose(
        self,
        messages: list[Message],
        candidates: list[str],
        *,
        temperature: float = 0.0,
        prefix: str = "",
        seed: int | None = None,
    ) -> BrainOutput:
        """Pick one of `candidates` as the continuation of the assistant turn after `prefix`.

        temperature 0 = argmax of the score; > 0 = sample from softmax(score / temperature).
        The chosen text is `output.text`; every candidate's score is in `output.candidates`.
        """
        ...


@runtime_checkable
class AsyncChoosingBrain(ChoosingBrain, Protocol):
    """A choosing brain whose ranking can be awaited without blocking the event loop (async episodes)."""

    async def achoose(
        self,
        messages: list[Message],
        candidates: list[str],
        *,
        temperature: float = 0.0,
        prefix: str = "",
        seed: int | None = None,
    ) -> BrainOutput:
        """`choose`, awaitable."""
        ...


@runtime_checkable
class EnvBoundBrain(Protocol):
    """A brain that reads the env it acts in (e.g. the scripted expert); the episode loop binds it first."""

    def bind_env(self, env: Any) -> None:
        """Attach to the env of the episode about to start."""
        ...


@runtime_checkable
class ForkableBrain(Protocol):
    """A brain with per-episode state: concurrent episodes each get `fork(seed)`, not the shared instance."""

    def fork(self, seed: int) -> Brain:
        """A fresh instance for one episode, seeded."""
        ...


@runtime_checkable
class CheckableBrain(Protocol):
    """A brain behind an endpoint: `check()` raises `BrainError` before a run if it cannot answer."""

    def check(self) -> None:
        """Raise BrainError, saying how to fix it, if the backend cannot answer."""
        ...


def writes_text(brain: object) -> bool:
    """Whether the brain's free text comes from a language model (False for the scripted expert).

    Memories pass such a brain to their summariser/reflector; otherwise they use rule-based
    versions. Brains declare it with the class attribute `can_write_text`; the default is True.
    """
    return bool(getattr(brain, "can_write_text", True))


def approx_tokens(text: str) -> int:
    """Token estimate for brains without a tokenizer (about 4 characters a token for English)."""
    return max(1, (len(text) + 3) // 4) if text else 0


class SyncBrainMixin:
    """Gives a sync-only brain an `acomplete` that runs in a worker thread."""

    async def acomplete(self, messages: list[Message], **kwargs: Any) -> BrainOutput:
        """`complete` in a worker thread."""
        return await asyncio.to_thread(self.complete, messages, **kwargs)  # type: ignore[attr-defined]
