"""The KV-slot scheduler: which agent's prompt each llama.cpp sequence keeps, carried out on the runtime.

Sequence 0 is `Llama`'s own (generation, the one-prompt path); sequences 1..k ("slots") keep recent
prompts, so agents taking turns each extend their own cached transcript (`brain.kv_slots=k`). The
bookkeeping of which tokens a slot holds and where a prompt goes is `slot_table.SlotTable` (pure, no
llama.cpp); this module executes its placements and evictions on the `LlamaRuntime`.
"""

from __future__ import annotations

import numpy as np

from agents.brains.base import BrainError
from agents.brains.llama.runtime import LlamaRuntime
from agents.brains.llama.slot_table import SlotTable, common_prefix

SHARE_MIN_TOKENS = 32  # a batch-mate's prefix worth waiting one decode for (KV slots)


class SlotScheduler:
    """Places a batch's prompts in KV slots, decodes only what each slot lacks, and evicts for generation."""

    def __init__(self, runtime: LlamaRuntime, seqs: list[int]) -> None:
        self.runtime = runtime
        self.table = SlotTable(seqs, runtime.n_ctx)

    def check(self) -> None:
        """Trust a slot only as far as its cells reach: evaluation in sequence 0 (generation, `Llama.eval`) removes
        cells after a position, of sequence 0 in llama-cpp-python 0.3 but of every sequence in llama.cpp's own
        convention for -1; removals only ever cut a suffix, so the cells below a sequence's end are intact."""
        for seq, slot in self.table.slots.items():
            n = self.runtime.seq_length(seq)
            if n < len(slot.tokens):
                slot.tokens = slot.tokens[:n]

    def wave(self, prompts: list[tuple[list[int], list[int]]]) -> tuple[list[int], list[int]]:
        """Of `prompts` (a prompt's tokens, the context to place), the indices to decode now and those to hold back
        one decode: a prompt sharing a longer prefix with an earlier prompt of this batch than with any cached slot
        (agents' common system text, first round) waits, so it copies those cells once they exist instead of
        evaluating them again."""
        cached = [slot.tokens for slot in self.table.slots.values()]
        now: list[int] = []
        later: list[int] = []
        for i, (_, ctx) in enumerate(prompts):
            in_slots = max((common_prefix(c, ctx) for c in cached), default=0)
            in_batch = max((common_prefix(prompts[j][0], ctx) for j in now), default=0)
            (later if in_batch > in_slots + SHARE_MIN_TOKENS else now).append(i)
        return now, later

    def prefill(self, contexts: list[list[int]], reserve: int) -> list[tuple[int, np.ndarray]]:
        """Place as many of `contexts` as get a slot, decode their new tails in one batch; per placed context (a
        prefix of the list) its slot and the logits after its last token. `reserve`: cells others need meanwhile."""
        placements, evict = self.table.place(contexts, reserve)
        if not placements:
            raise BrainError("no KV slot is free for a prompt; raise brain.n_seq or brain.kv_slots")
        rt = self.runtime
        for seq in evict:
            rt.drop_sequence(seq)
            self.table.clear(seq)
        for pl in placements:
            if pl.source is not None:
                rt.copy_prefix(pl.source, pl.seq, pl.keep)
        for pl in placements:
            if pl.source is None:
                rt.forget_after(pl.keep, pl.seq)
        tails = [(pl.seq, pl.keep, ctx[pl.keep :], False) for pl, ctx in zip(placements, contexts)]
        rt.prompt_tokens_evaluated += sum(len(t[2]) for t in tails)
        last = rt.decode_batch(tails)
        for pl, ctx in zip(placements, contexts):
            self.table.commit(pl.seq, ctx)
        return [(pl.seq, rows[-1]) for pl, rows in zip(placements, last)]

    def make_room(self, cells: int) -> None:
        """Before sequence 0 grows to `cells` (a prompt and its generation): evict cached prompts, least recently used
        first, so the unified KV cache holds both (a reflection's generation once overflowed it)."""
        for seq in self.table.evict_for(cells):
            self.runtime.drop_sequence(seq)
            self.table.clear(seq)

    def adopt_for_generation(self, tokens: list[int]) -> bool:
        """Share into sequence 0 the longest prefix of `tokens` a slot holds (the agent's own prompt, just ranked
        there), so generation evaluates only what follows it; whether sequence 0 changed."""
        best, n = None, common_prefix(self.runtime.cached_tokens(), tokens)
        for seq, slot in self.table.slots.items():
            k = min(common_prefix(slot.tokens, tokens), self.runtime.seq_length(seq))
            if k > n:
                best, n = seq, k
        if best is None:
            return False
        self.runtime.adopt_prefix(best, tokens[: min(n, len(tokens) - 1)])
        return True

    def drop_all(self) -> None:
        """Forget every cached prompt (and remove its cells)."""
        if self.table.cells():
            for seq in self.table.slots:
                self.runtime.drop_sequence(seq)
            self.table.clear()
