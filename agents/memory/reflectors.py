"""Derive lessons from a finished episode (Reflexion-style): by asking a brain, or by rule.

The rule reflector serves scripted brains and runs without a model: it turns what the trace shows
(invalid actions and their error messages, the action sequence, the outcome) into short, reusable advice.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Protocol

from agents.memory.base import MemoryItem, ask, require_complete
from agents.memory.text import outcome_text, overlap_score, render

log = logging.getLogger(__name__)

SYSTEM = (
    "You review an agent's finished attempt at a task and write lessons that will help on the next, "
    "similar task. Each lesson is one short imperative sentence, concrete and reusable. "
    "Output 1 to 3 lines, each starting with '- '."
)
PROGRESS_SYSTEM = (
    "You review what an agent has done and seen so far in an ongoing task and write insights that will "
    "help it in what follows. Each insight is one short sentence about this situation: the people, places, "
    "news and plans that matter, and what to do next. Output 1 to 3 lines, each starting with '- '."
)
IN_PROGRESS = "in_progress"  # outcome key of a reflection made during an episode (no result yet)
_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s*(.+?)\s*$")


def succeeded(outcome: dict[str, Any]) -> bool:
    """Whether an outcome counts as a success: its `success` flag, else a positive reward."""
    if "success" in outcome:
        return bool(outcome["success"])
    return float(outcome.get("reward", 0) or 0) > 0


class Reflector(Protocol):
    """Turns a finished episode (task, trace, outcome) into short lessons for the next one."""

    def reflect(self, instruction: str, events: list[MemoryItem], outcome: dict[str, Any]) -> list[str]: ...


class BrainReflector:
    """Lessons written by a brain from the trace and the outcome (Reflexion); the rule reflector when it gives none."""

    def __init__(self, brain: Any, max_tokens: int = 160, max_event_chars: int = 3000) -> None:
        self.brain = require_complete(brain)
        self.max_tokens = max_tokens
        self.max_event_chars = max_event_chars

    def reflect(self, instruction: str, events: list[MemoryItem], outcome: dict[str, Any]) -> list[str]:
        trace = "\n".join(render(e) for e in events)[-self.max_event_chars :]
        if outcome.get(IN_PROGRESS):  # during the episode: insights on the situation, not a verdict
            user = f"Task: {instruction}\n\nWhat happened so far:\n{trace}\n\nInsights:"
            reply = ask(self.brain, PROGRESS_SYSTEM, user, max_tokens=self.max_tokens)
            lessons = [l for l in parse_lessons(reply) if overlap_score(l, PROGRESS_SYSTEM) < 0.5]
            if not lessons:
                log.warning("reflection brain gave no usable insight; falling back to the rule reflector")
                return RuleReflector().reflect(instruction, events, outcome)
            return lessons
        verdict = "SUCCEEDED" if succeeded(outcome) else "FAILED"
        user = (
            f"Task: {instruction}\n\nWhat happened:\n{trace}\n\nOutcome: {verdict} ({outcome_text(outcome)})"
            "\n\nLessons:"
        )
        reply = ask(self.brain, SYSTEM, user, max_tokens=self.max_tokens)
        # small models often echo the instructions back: such a "lesson" teaches nothing
        lessons = [l for l in parse_lessons(reply) if overlap_score(l, SYSTEM) < 0.5]
        if not lessons:
            log.warning("reflection brain gave no usable lesson; falling back to the rule reflector")
            return RuleReflector().reflect(instruction, events, outcome)
        return lessons


def parse_lessons(text: str, max_lessons: int = 3) -> list[str]:
    """Bulleted or numbered lines; a single un-bulleted sentence is accepted as one lesson."""
    lessons = [m.group(1) for ln in text.splitlines() if (m := _BULLET.match(ln)) and len(m.group(1)) > 8]
    if not lessons:
        first = text.strip().splitlines()[0].strip() if text.strip() else ""
        lessons = [first] if len(first) > 8 else []
    return lessons[:max_lessons]


class RuleReflector:
    """Lessons from the trace alone: the errors to avoid, the path that worked (or did not), and, after a
    failure that really ended, the env's final feedback — Reflexion's signal, which even a small model can use
    (it can copy a named answer from its prompt where it cannot follow abstract advice)."""

    def __init__(self, max_actions: int = 8, max_verdict_chars: int = 240) -> None:
        self.max_actions = max_actions
        self.max_verdict_chars = max_verdict_chars

    def _verdict(self, events: list[MemoryItem], outcome: dict[str, Any]) -> str:
        if not outcome.get("terminated") or outcome.get("truncated"):
            return ""
        last = next((e for e in reversed(events) if e.kind in ("observation", "feedback", "action")), None)
        if last is None or last.kind != "observation":
            return ""
        return " ".join(last.text.split())[: self.max_verdict_chars]

    def reflect(self, instruction: str, events: list[MemoryItem], outcome: dict[str, Any]) -> list[str]:
        lessons: list[str] = []
        seen_errors: set[str] = set()
        last_action = ""
        for e in events:
            if e.kind == "action":
                last_action = e.text
            error = e.meta.get("error") or (e.text if e.kind in ("error", "feedback") else "")
            if error and error not in seen_errors and len(seen_errors) < 2:
                seen_errors.add(error)
                where = f"'{last_action}' " if last_action else ""
                lessons.append(f"Avoid the invalid action {where}— it failed with: {error.strip()[:160]}")
        actions = [e.text.strip() for e in events if e.kind == "action" and e.text.strip()]
        path = " -> ".join(actions[: self.max_actions]) + (" -> ..." if len(actions) > self.max_actions else "")
        task = instruction.strip()[:120]
        if outcome.get(IN_PROGRESS):  # during the episode: what was done, and the latest thing seen
            if path:
                lessons.append(f"So far on '{task}': {path}")
            seen = next((e for e in reversed(events) if e.kind == "observation"), None)
            if seen is not None:
                lessons.append(f"Most recently: {' '.join(seen.text.split())[: self.max_verdict_chars]}")
            return lessons
        if succeeded(outcome):
            if path:
                lessons.append(f"For a task like '{task}', this worked in {len(actions)} steps: {path}")
        else:
            reason = outcome.get("truncation_reason") or (
                "ran out of steps" if outcome.get("truncated") else "it failed"
            )
            tried = f"trying {path} " if path else ""
            lessons.append(f"For a task like '{task}', {tried}did not succeed ({reason}); try a different approach")
            verdict = self._verdict(events, outcome)
            if verdict:  # at a real end the last observation is the env's verdict (what was right, what was wrong)
                lessons.append(f"On the task '{task}' the final feedback was: {verdict}")
        return lessons
