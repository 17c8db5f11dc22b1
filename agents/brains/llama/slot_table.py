"""Which token prefix each KV-cache sequence holds, so many prompts reuse their own cached prefixes at once.

One llama.cpp context holds several sequences over a unified KV cache. A `SlotTable` keeps, per
sequence ("slot"), the tokens whose keys/values it holds. A batch of prompts is *placed*: each
prompt goes to the slot holding its longest common prefix (its own previous prompt, for an agent
whose transcript grows turn by turn), and only the rest of the prompt is decoded. When that slot is
already taken in the batch, the prefix is *copied* into another slot (`seq_cp` adds a sequence id to
the cells; nothing is recomputed), so agents that share only a system prompt still share its cells.

Pure bookkeeping (no llama.cpp here): `agents.brains.llama.slots` executes the placements.
"""

from __future__ import annotations

from dataclasses import dataclass


def common_prefix(a: list[int], b: list[int]) -> int:
    """Length of the longest common prefix of two token lists."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _continues(cached: list[int], n: int) -> bool:
    """Whether a prompt sharing n tokens with `cached` continues it (so overwriting loses little), rather than only
    sharing a system prompt with another agent's transcript, which must not be cut back."""
    return n >= len(cached) - CONTINUE_SLACK or n >= 0.8 * len(cached)


CONTINUE_SLACK = 16  # tokens at the end of a cached prompt a continuation may rewrite (the reply header)


@dataclass
class Slot:
    seq: int  # the KV sequence id
    tokens: list[int]  # what its cells hold, positions 0..len-1
    used: int = 0  # LRU clock of its last placement


@dataclass(frozen=True)
class Placement:
    """Where one prompt's context goes: slot `seq` keeps (or receives from `source`) its first `keep` tokens."""

    seq: int
    keep: int
    source: int | None  # None: `seq` itself holds the kept tokens (truncate after them); else copy from it


class SlotTable:
    """The cached prefixes of sequences `seqs`, with a budget of KV cells (`capacity`) they may hold together."""

    def __init__(self, seqs: list[int], capacity: int) -> None:
        if not seqs:
            raise ValueError("a slot table needs at least one sequence")
        self.slots = {s: Slot(s, []) for s in seqs}
        self.capacity = capacity
        self._clock = 0

    def cells(self) -> int:
        """Cells the slots hold, counting shared prefixes once per slot (an upper bound: copies share cells)."""
        return sum(len(s.tokens) for s in self.slots.values())

    def clear(self, seq: int | None = None) -> None:
        """Forget one slot's tokens (or all): its cells were removed from the cache."""
        for s in self.slots.values() if seq is None else [self.slots[seq]]:
            s.tokens = []

    def place(self, prompts: list[list[int]], reserve: int = 0) -> tuple[list[Placement], list[int]]:
        """Placements for a prefix of `prompts` (as many as get a slot of their own), and the slots to clear first.

        `reserve`: cells other sequences need during the batch (candidates, sequence 0). Slots are
        evicted least recently used first when the new prompts would not fit beside the rest.
        """
        taken: set[int] = set()  # destinations or copy sources in this batch: not evicted, not overwritten
        placements: list[Placement] = []
        evict: list[int] = []
        for prompt in prompts:
            if not prompt:
                raise ValueError("cannot place an empty prompt (nothing to take logits from)")
            lens = {seq: common_prefix(slot.tokens, prompt) for seq, slot in self.slots.items()}
            source = max(lens, key=lambda q: (lens[q], q not in taken))  # the longest cached prefix anywhere
            n = lens[source]
            keep = min(n, len(prompt) - 1)  # at least the last token is decoded, for its logits
            if n and source not in taken and _continues(self.slots[source].tokens, n):
                dst, src = source, None  # its own earlier prompt: decode only what is new
            else:
                free = [q for q in self.slots.values() if q.seq not in taken]
                if not free:
                    break  # every slot serves this batch: the rest waits for the next one
                dst = min(free, key=lambda q: (bool(q.tokens), q.used)).seq  # empty first, then least recently used
                src = source if n else None
                keep = keep if n else 0
                if src == dst:
                    src = None  # the least recently used slot is the source: cut it back in place
                else:
                    evict.append(dst)
            if src is not None:
                taken.add(src)
            taken.add(dst)
            placements.append(Placement(dst, keep, src))
        # the cells after the batch: placed prompts in full, untouched slots as they are
        placed = {p.seq: len(q) for p, q in zip(placements, prompts)}
        need = reserve + sum(placed.values()) + sum(len(s.tokens) for s in self.slots.values() if s.seq not in placed)
        for s in sorted(self.slots.values(), key=lambda s: s.used):
            if need <= self.capacity:
                break
            if s.seq in taken or not s.tokens:
                continue
            need -= len(s.tokens)
            evict.append(s.seq)
        return placements, evict

    def evict_for(self, cells: int) -> list[int]:
        """Slots to clear, least recently used first, so that `cells` more fit beside the rest (others' work:
        sequence 0's generation). Everything is cleared when even that is not enough."""
        need = self.cells() + cells
        out: list[int] = []
        for s in sorted(self.slots.values(), key=lambda s: s.used):
            if need <= self.capacity:
                break
            if s.tokens:
                need -= len(s.tokens)
                out.append(s.seq)
        return out

    def commit(self, seq: int, tokens: list[int]) -> None:
        """Slot `seq` now holds `tokens` (after its placement was decoded)."""
        self._clock += 1
        slot = self.slots[seq]
        slot.tokens, slot.used = list(tokens), self._clock
