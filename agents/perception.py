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

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agents.brains.base import Message, approx_tokens
from agents.config import (
    DEFAULT_BUDGET_TOKENS,
    DEFAULT_SYSTEM,
    DEFAULT_TASK,
    DEFAULT_TURN,
    DEFAULT_TURN_STYLE,
    DEFAULT_USER,
    LAYOUTS,
    SEPARATOR_ERROR,
    TURN_STYLES,
)
from agents.config import PerceptionConfig as PerceptionSettings
from agents.transcript import Transcript

_SETTINGS = PerceptionSettings()  # the defaults live on the config model; this dataclass is its inside form

_CONCRETE = re.compile(r"(\w+)\[(.+)\]", re.DOTALL)
UNCHANGED_TURN = "Unchanged: the same observation and actions as in the last turn.\n"
TASK_MENTION = "(the task above)"
NAMED_ON_PAGE = "<a name shown above>"


@dataclass
class PerceptionConfig:
    budget_tokens: int = DEFAULT_BUDGET_TOKENS
    memory_share: float = _SETTINGS.memory_share
    actions_share: float = _SETTINGS.actions_share
    max_actions_listed: int = _SETTINGS.max_actions_listed
    system_template: str = DEFAULT_SYSTEM
    user_template: str = DEFAULT_USER  # the `single` layout's one user turn
    layout: str = _SETTINGS.layout
    task_template: str = DEFAULT_TASK  # `transcript`: appended to the system turn
    turn_template: str = DEFAULT_TURN  # `transcript`: each step's user turn
    compact_chars: int = _SETTINGS.compact_chars  # `transcript`: observation kept in a compacted past turn
    # `transcript`: `compact` does not repeat in a turn what the prompt already holds (see `compact_turn`)
    turn_style: str = DEFAULT_TURN_STYLE
    # an env's field separator (WebShop's ` [SEP] `, 4 tokens) shown as a line break (1 token)
    field_separator: str = ""

    def __post_init__(self) -> None:
        if self.layout not in LAYOUTS:
            raise ValueError(f"perception layout must be one of {', '.join(LAYOUTS)}; got {self.layout!r}")
        if self.turn_style not in TURN_STYLES:
            raise ValueError(f"perception turn_style must be one of {', '.join(TURN_STYLES)}; got {self.turn_style!r}")
        if self.field_separator and not self.field_separator.strip():
            raise ValueError(SEPARATOR_ERROR.format(self.field_separator))


@dataclass
class Percept:
    messages: list[Message]
    memory_context: str
    tokens: int
    cut: list[str] = field(default_factory=list)  # which parts were shortened
    turn: str = ""  # this step's user turn (`transcript` layout: becomes history once acted on)
    turn_tokens: int = 0  # its token count (the transcript reuses it rather than counting again)
    view_key: str = ""  # digest of the raw observation and actions (`compact`: spots an unchanged view)


def view_digest(observation: str, actions: list[str]) -> str:
    return hashlib.blake2b("\x00".join([observation, *actions]).encode(), digest_size=12).hexdigest()


def fields_on_lines(observation: str, separator: str) -> str:
    """The observation with each field the separator delimits on a line of its own: the same text, fewer tokens."""
    return "\n".join(f.strip() for f in observation.split(separator.strip()))


def compact_turn(observation: str, instruction: str, actions: list[str], shown: str = "") -> tuple[str, list[str]]:
    """The observation and action list without what the prompt already says, for any env.

    The task is in the system turn, so an observation that quotes it refers to it instead. Concrete actions
    `verb[name]` whose name the observation or `shown` names (the past observations the prompt still holds, such
    as a fault tree stated once at the start) fold into one `verb[<a name shown above>]` line per verb, when that
    line is shorter than theirs; templates like `search[...]` and actions nothing above names stay listed. The
    brain still ranks every available action: only the prompt is shorter (docs/policy.md)."""
    if len(instruction) > 20 and instruction in observation:
        observation = observation.replace(instruction, TASK_MENTION)
    low = f"{shown}\n{observation}".lower()
    named: dict[str, list[str]] = {}
    for a in actions:
        m = _CONCRETE.fullmatch(a)
        if m and m.group(2) != "..." and m.group(2).lower() in low:
            named.setdefault(m.group(1), []).append(a)
    lines = {verb: f"{verb}[{NAMED_ON_PAGE}]" for verb in named}
    folded = {verb for verb, acts in named.items() if len(lines[verb]) < sum(len(a) + 3 for a in acts)}  # if shorter
    fold = {a for verb in folded for a in named[verb]}
    return observation, [lines[verb] for verb in named if verb in folded] + [a for a in actions if a not in fold]


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
        if c.field_separator:
            observation = fields_on_lines(observation, c.field_separator)
        view_key = ""
        if c.layout == "transcript" and c.turn_style == "compact":
            view_key = view_digest(observation, actions)
            if history is not None and history.last_view_key == view_key and not feedback and not memory_context:
                return self._finish_transcript(system, system_tokens, UNCHANGED_TURN, [], history, view_key, "")
            shown = history.shown_observations() if history is not None else ""
            observation, actions = compact_turn(observation, instruction, actions, shown)
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
            return self._finish_transcript(
                system, system_tokens, turn, cut, history, view_key, memory_block and memory_context
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

    def _finish_transcript(
        self,
        system: str,
        system_tokens: int,
        turn: str,
        cut: list[str],
        history: Transcript | None,
        view_key: str,
        memory_context: str,
    ) -> Percept:
        turn_tokens = self.count_tokens(turn)
        used = system_tokens + turn_tokens
        past: list[Message] = []
        if history is not None:
            if history.fit(max(0, self.config.budget_tokens - used)):
                cut.append("history")
            past = history.messages()
            used += history.tokens
        return Percept(
            messages=[{"role": "system", "content": system}, *past, {"role": "user", "content": turn}],
            memory_context=memory_context,
            tokens=used,
            cut=cut,
            turn=turn,
            turn_tokens=turn_tokens,
            view_key=view_key,
        )


def perception_from_config(cfg: dict[str, Any] | None, count_tokens: Callable[[str], int]) -> Perception:
    fields = PerceptionConfig.__dataclass_fields__
    unknown = set(cfg or {}) - set(fields)
    if unknown:
        raise ValueError(f"unknown perception option(s) {sorted(unknown)}; valid: {sorted(fields)}")
    return Perception(PerceptionConfig(**(cfg or {})), count_tokens)
