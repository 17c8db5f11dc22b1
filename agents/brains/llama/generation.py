"""Text generation in sequence 0 with llama.cpp's own sampler: free text, and a template's `...` slot.

Before generating, room is made in the unified KV cache (cached prompts evicted, least recently used
first) and the longest prefix a KV slot holds is shared into sequence 0, so the prompt the agent was
just ranked on is not evaluated again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from agents.brains.llama.runtime import LlamaRuntime
from agents.brains.llama.scoring import ContinuationScorer
from agents.brains.llama.slots import SlotScheduler
from envs.contract import SLOT

SLOT_FILL_TOKENS = 32  # most tokens a template's slot text may take


class Generator:
    """Generates after a token prompt in sequence 0; `stops` (the chat template's end-of-turn) always stop it."""

    def __init__(
        self,
        runtime: LlamaRuntime,
        scorer: ContinuationScorer,
        slots: SlotScheduler | None,
        tokenize: Callable[[str], list[int]],
        stops: list[str],
        seed: int,
    ) -> None:
        self.runtime, self.scorer, self.slots = runtime, scorer, slots
        self.tokenize, self.stops, self.seed = tokenize, stops, seed

    def prepare(self, tokens: list[int], max_new: int) -> list[int]:
        """`tokens`, ready for generation in sequence 0: room made for them and `max_new` more, and the longest prefix
        a KV slot holds (the agent's own prompt, just ranked there) shared into sequence 0, so generation evaluates
        only what follows it rather than the whole prompt again."""
        if self.slots is not None:
            self.slots.make_room(min(self.runtime.n_ctx, len(tokens) + max_new))
            if self.slots.adopt_for_generation(tokens):
                self.scorer.last_logits = None
        return tokens

    def generate(
        self, tokens: list[int], *, max_tokens: int, temperature: float, stop: list[str], seed: int | None
    ) -> dict[str, Any]:
        """llama.cpp's completion dict (not streamed) for `tokens`, stopping at `stop` or the template's stops."""
        out = cast(
            dict[str, Any],
            self.runtime.llm.create_completion(
                prompt=self.prepare(tokens, max_tokens),
                max_tokens=max_tokens,
                temperature=temperature,
                stop=stop + self.stops,
                seed=self.seed if seed is None else seed,
            ),
        )
        self.scorer.last_logits = None  # generation moved the cache
        return out

    def fill_slot(self, head: str, template: str, temperature: float, seed: int | None) -> tuple[str, int]:
        """Generate the free text of a template's `...` slot, stopping at what follows the slot; (the filled action,
        tokens generated)."""
        before, after = template.split(SLOT, 1)
        stop = [after[:1]] if after else []
        out = self.generate(
            self.tokenize(head + before),
            max_tokens=SLOT_FILL_TOKENS,
            temperature=temperature or 0.0,
            stop=stop + ["\n"],
            seed=seed,
        )
        text = out["choices"][0]["text"].strip()
        return before + text + after, int(out["usage"]["completion_tokens"])
