"""Several memories behind one: `memory=working+reflective` gives recent turns *and* lessons.

Every part sees every add and episode event. The prompt budget is split by weight; budget a part leaves
unused passes to the next part. Each part keeps its own `last_injected`; the composite's is the joined text.
"""

from __future__ import annotations

from typing import Any

from agents.memory.base import Memory, MemoryItem, MemoryStateError, TokenCounter
from agents.memory.state import check_header

STATE_VERSION = 1


class CompositeMemory:
    def __init__(self, parts: list[Memory], weights: list[float] | None = None) -> None:
        if len(parts) < 2:
            raise ValueError("a composite memory needs at least two parts")
        names = [p.name for p in parts]
        if len(set(names)) != len(names):
            raise ValueError(f"composite memory parts must differ, got {names}")
        weights = weights or [1.0] * len(parts)
        if len(weights) != len(parts) or any(w <= 0 for w in weights):
            raise ValueError(f"need one positive weight per part, got {weights} for {names}")
        self.parts = parts
        self.weights = weights
        self.name = "+".join(names)
        self.last_injected = ""

    def part(self, name: str) -> Memory:
        for p in self.parts:
            if p.name == name:
                return p
        raise KeyError(f"no part {name!r} in {self.name}")

    def add(self, item: MemoryItem) -> None:
        for p in self.parts:
            p.add(item)

    def retrieve(self, query: str, k: int = 5) -> list[MemoryItem]:
        """Round-robin over the parts' rankings, dropping repeated texts."""
        ranked = [p.retrieve(query, k) for p in self.parts]
        out: list[MemoryItem] = []
        seen: set[str] = set()
        for rank in range(k):
            for lst in ranked:
                if rank < len(lst) and lst[rank].text not in seen and len(out) < k:
                    seen.add(lst[rank].text)
                    out.append(lst[rank])
        return out

    def build_context(self, query: str, budget_tokens: int, count_tokens: TokenCounter) -> str:
        sections: list[str] = []
        left = budget_tokens
        for i, (p, w) in enumerate(zip(self.parts, self.weights)):
            rest_w = sum(self.weights[i:])
            share = left if i == len(self.parts) - 1 else int(left * w / rest_w) if rest_w else 0
            text = p.build_context(query, max(0, share - 1), count_tokens)  # -1: the blank line between sections
            if text:
                sections.append(text)
                left -= count_tokens(text) + 1
        self.last_injected = "\n\n".join(sections)
        return self.last_injected

    def on_episode_start(self, instruction: str) -> None:
        for p in self.parts:
            p.on_episode_start(instruction)

    def on_episode_end(self, outcome: dict[str, Any]) -> None:
        for p in self.parts:
            p.on_episode_end(outcome)

    def save_state(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "kind": "composite",
            "weights": self.weights,
            "parts": [{"name": p.name, "state": p.save_state()} for p in self.parts],
        }

    def load_state(self, state: dict[str, Any]) -> None:
        check_header(state, "composite", STATE_VERSION)
        parts = state.get("parts")
        if not isinstance(parts, list) or [x.get("name") if isinstance(x, dict) else None for x in parts] != [
            p.name for p in self.parts
        ]:
            got = [x.get("name") if isinstance(x, dict) else x for x in parts] if isinstance(parts, list) else parts
            raise MemoryStateError(
                f"composite state parts {got!r} do not match this memory's {[p.name for p in self.parts]}"
            )
        for p, raw in zip(self.parts, parts):
            p.load_state(raw.get("state"))

    def clear(self) -> None:
        for p in self.parts:
            p.clear()
        self.last_injected = ""
