"""The episode so far as chat turns, laid out so consecutive prompts share a long prefix.

Each step's prompt is the previous step's prompt plus the reply that was taken and the new
observation, so an embedded model's KV cache (reused by longest common prefix) evaluates only
the new turn. When the turns outgrow their share of the prompt budget, the oldest turns are
compacted (observation cut short, action list dropped) in one block, down to `low_water` of the
budget, so the prefix breaks once per block rather than at every step as a sliding window would.
The first turn is compacted last: the first observation often states the problem (a fault tree,
a repository listing) and, being first, it is also the prefix every later prompt shares.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from agents.brains.base import Message


@dataclass
class Turn:
    """One past step: what the agent was shown, what it replied, and the short form used once compacted."""

    user: str
    assistant: str
    short_user: str
    tokens: int  # of `user` + `assistant` (full form)
    short_tokens: int  # of `short_user` + `assistant`
    compacted: bool = False
    observation: str = ""  # the raw observation (perception's `compact` turns fold what it names)

    @property
    def cost(self) -> int:
        return self.short_tokens if self.compacted else self.tokens


class Transcript:
    """Past turns of one episode; `fit` keeps them inside a token budget with few prefix breaks."""

    def __init__(self, count_tokens: Callable[[str], int], compact_chars: int = 200, low_water: float = 0.5) -> None:
        if not 0.0 < low_water <= 1.0:
            raise ValueError(f"low_water must be in (0, 1], got {low_water}")
        self.count_tokens = count_tokens
        self.compact_chars = compact_chars
        self.low_water = low_water
        self.turns: list[Turn] = []
        self.dropped = 0  # oldest turns no longer shown at all
        self.first_dropped = False
        # digest of the last step's raw view (perception's `compact` turns); outlives compaction
        self.last_view_key = ""

    def clear(self) -> None:
        self.turns.clear()
        self.dropped = 0
        self.first_dropped = False
        self.last_view_key = ""

    def add(
        self, user: str, assistant: str, observation: str, user_tokens: int | None = None, view_key: str = ""
    ) -> None:
        """Append a finished step: the user turn as shown, the reply taken, the raw observation (for the short form).

        `user_tokens`: the user turn's token count when the caller already has it (perception counted it);
        `view_key`: the digest perception made of the raw view, so the next turn can say it is unchanged."""
        obs = observation if len(observation) <= self.compact_chars else observation[: self.compact_chars] + " [...]"
        short = f"Observation: {obs}"
        reply_tokens = self.count_tokens(assistant)
        self.turns.append(
            Turn(
                user=user,
                assistant=assistant,
                short_user=short,
                tokens=(self.count_tokens(user) if user_tokens is None else user_tokens) + reply_tokens + 8,
                short_tokens=self.count_tokens(short) + reply_tokens + 8,
                observation=observation,
            )
        )
        self.last_view_key = view_key

    @property
    def tokens(self) -> int:
        return sum(t.cost for t in self.turns)

    def fit(self, budget: int) -> bool:
        """Bring the shown turns within `budget` tokens; True if anything changed (the prefix broke)."""
        if self.tokens <= budget:
            return False
        target = int(budget * self.low_water)
        total = self.tokens
        order = self.turns[1:] + self.turns[:1]  # oldest first, the first turn last
        for t in order:  # compact a block at once
            if total <= target:
                break
            if not t.compacted:
                total -= t.tokens - t.short_tokens
                t.compacted = True
        while len(self.turns) > 1 and total > target:  # still too long: drop the oldest turns after the first
            total -= self.turns.pop(1).cost
            self.dropped += 1
        if total > target and self.turns:
            total -= self.turns.pop(0).cost
            self.dropped += 1
            self.first_dropped = True
        return True

    def save_state(self) -> dict[str, Any]:
        """Plain data that `load_state` restores exactly (checkpoints of long multi-agent runs)."""
        return {
            "turns": [asdict(t) for t in self.turns],
            "dropped": self.dropped,
            "first_dropped": self.first_dropped,
            "last_view_key": self.last_view_key,
        }

    def load_state(self, state: dict[str, Any]) -> None:
        self.turns = [Turn(**t) for t in state["turns"]]
        self.dropped, self.first_dropped = int(state["dropped"]), bool(state["first_dropped"])
        self.last_view_key = str(state.get("last_view_key", ""))

    def shown_observations(self) -> str:
        """The observations the shown turns hold, as shown (a compacted turn's cut short), not their action lists."""
        cut = self.compact_chars
        return "\n".join(t.observation[:cut] if t.compacted else t.observation for t in self.turns)

    def messages(self) -> list[Message]:
        """The shown turns as alternating user / assistant messages."""
        out: list[Message] = []
        for i, t in enumerate(self.turns):
            user = t.short_user if t.compacted else t.user
            if self.dropped and i == (0 if self.first_dropped else 1):
                user = f"({self.dropped} earlier steps not shown)\n{user}"
            out.append({"role": "user", "content": user})
            out.append({"role": "assistant", "content": t.assistant})
        return out
