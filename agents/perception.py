"""Perception: observation + instruction + available actions + memory -> chat messages in a budget.

Each part of the prompt has a share of the token budget; a part that is too long is cut (the
observation keeps its head and tail, the action list its first entries) and the cut is marked,
so the model knows something was left out. Templates are plain `str.format` strings,
overridable from config (`agent.perception.system_template=...`).

Two layouts. `transcript` (the default): the task sits in the system turn, every past step stays
a user / assistant turn pair (`agents.transcript`), and the new observation comes last, so each
prompt extends the previous one and a KV cache evaluates only the new turn. `single`: one user
turn rebuilt every step (task, memory, observation, actions), which shares little between steps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agents.brains.base import Message, approx_tokens
from agents.transcript import Transcript

DEFAULT_SYSTEM = (
    "You are an agent acting in a text environment to accomplish a task. "
    "Each turn you see the task, what you remember, the current observation and the actions "
    "you can take. Choose one action per turn.\n{format}"
)
DEFAULT_USER = "Task: {instruction}\n\n{memory_block}Observation:\n{observation}\n\n{feedback_block}{actions_block}"
DEFAULT_TASK = "Task: {instruction}"
DEFAULT_TURN = "{memory_block}Observation:\n{observation}\n\n{feedback_block}{actions_block}"
LAYOUTS = ("transcript", "single")


@dataclass
class PerceptionConfig:
    budget_tokens: int = 2048
    memory_share: float = 0.3
    actions_share: float = 0.25
    max_actions_listed: int = 60
    system_template: str = DEFAULT_SYSTEM
    user_template: str = DEFAULT_USER  # the `single` layout's one user turn
    layout: str = "transcript"
    task_template: str = DEFAULT_TASK  # `transcript`: appended to the system turn
    turn_template: str = DEFAULT_TURN  # `transcript`: each step's user turn
    compact_chars: int = 200  # `transcript`: observation kept in a compacted past turn

    def __post_init__(self) -> None:
        if self.layout not in LAYOUTS:
            raise ValueError(f"perception layout must be one of {', '.join(LAYOUTS)}; got {self.layout!r}")


@dataclass
class Percept:
    messages: list[Message]
    memory_context: str
    tokens: int
    cut: list[str] = field(default_factory=list)  # which parts were shortened
    turn: str = ""  # this step's user turn (`transcript` layout: becomes history once acted on)
    turn_tokens: int = 0  # its token count (the transcript reuses it rather than counting again)


class Perception:
    def __init__(
        self, config: PerceptionConfig | None = None, count_tokens: Callable[[str], int] = approx_tokens
    ) -> None:
        self.config = config or PerceptionConfig()
        self.count_tokens = count_tokens

    def _fit(self, text: str, budget: int, keep_tail: bool = True) -> tuple[str, bool]:
        """Shorten `text` to about `budget` tokens, keeping head (and tail), by character bisection."""
        if budget <= 0:
            return "", bool(text)
        if self.count_tokens(text) <= budget:
            return text, False
        lo, hi = 0, len(text)
        marker = " [...] "
        while lo < hi:  # largest keep such that the shortened text fits
            mid = (lo + hi + 1) // 2
            cand = (text[: mid // 2] + marker + text[len(text) - mid // 2 :]) if keep_tail else text[:mid] + marker
            if self.count_tokens(cand) <= budget:
                lo = mid
            else:
                hi = mid - 1
        short = (text[: lo // 2] + marker + text[len(text) - lo // 2 :]) if keep_tail else text[:lo] + marker
        return short, True

    def build(
        self,
        *,
        instruction: str,
        observation: str,
        available_actions: list[str] | None = None,
        action_templates: list[str] | None = None,
        memory_context: str = "",
        feedback: str | None = None,
        format_instructions: str = "",
        history: Transcript | None = None,
    ) -> Percept:
        """The prompt for one step; with the `transcript` layout, `history` holds the episode's past turns."""
        c = self.config
        cut: list[str] = []
        system = c.system_template.format(format=format_instructions)
        if c.layout == "transcript":
            system = f"{system}\n\n{c.task_template.format(instruction=instruction)}"
        system_tokens = self.count_tokens(system)
        fixed = system_tokens + self.count_tokens(instruction) + 40
        if feedback:
            fixed += self.count_tokens(feedback)
        room = max(64, c.budget_tokens - fixed)

        actions = list(action_templates or []) + list(available_actions or [])
        actions_block = ""
        if actions:
            listed = actions[: c.max_actions_listed]
            text = "\n".join(f"- {a}" for a in listed)
            text, was_cut = self._fit(text, int(room * c.actions_share), keep_tail=False)
            if was_cut or len(actions) > len(listed):
                cut.append("actions")
            actions_block = "Available actions:\n" + text + "\n"
        memory_block = ""
        if memory_context:
            mem, was_cut = self._fit(memory_context, int(room * c.memory_share))
            if was_cut:
                cut.append("memory")
            memory_block = f"Memory:\n{mem}\n\n"
        obs_budget = room - self.count_tokens(actions_block) - self.count_tokens(memory_block)
        obs, was_cut = self._fit(observation, max(32, obs_budget))
        if was_cut:
            cut.append("observation")
        feedback_block = f"Feedback on your last reply: {feedback}\n\n" if feedback else ""
        if c.layout == "transcript":
            turn = c.turn_template.format(
                memory_block=memory_block, observation=obs, feedback_block=feedback_block, actions_block=actions_block
            )
            turn_tokens = self.count_tokens(turn)
            used = system_tokens + turn_tokens
            past: list[Message] = []
            if history is not None:
                if history.fit(max(0, c.budget_tokens - used)):
                    cut.append("history")
                past = history.messages()
                used += history.tokens
            return Percept(
                messages=[{"role": "system", "content": system}, *past, {"role": "user", "content": turn}],
                memory_context=memory_block and memory_context,
                tokens=used,
                cut=cut,
                turn=turn,
                turn_tokens=turn_tokens,
            )
        user = c.user_template.format(
            instruction=instruction,
            memory_block=memory_block,
            observation=obs,
            feedback_block=feedback_block,
            actions_block=actions_block,
        )
        messages: list[Message] = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        user_tokens = self.count_tokens(user)
        return Percept(
            messages=messages,
            memory_context=memory_block and memory_context,
            tokens=system_tokens + user_tokens,
            cut=cut,
            turn=user,
            turn_tokens=user_tokens,
        )


def perception_from_config(cfg: dict[str, Any] | None, count_tokens: Callable[[str], int]) -> Perception:
    fields = PerceptionConfig.__dataclass_fields__
    unknown = set(cfg or {}) - set(fields)
    if unknown:
        raise ValueError(f"unknown perception option(s) {sorted(unknown)}; valid: {sorted(fields)}")
    return Perception(PerceptionConfig(**(cfg or {})), count_tokens)
