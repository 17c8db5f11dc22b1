"""Reflective (experiential) memory: lessons carried across episodes.

During an episode it keeps the trace; at the end a reflector (brain or rule) derives lessons, which are
stored; at the start of the next episode the lessons most relevant to its instruction are selected and
`build_context` injects them.

With `reflect_every=k` it also reflects during an episode, every k trace events (Generative Agents
reflect during the day, whenever enough has happened; a society run is one long episode): the new
insights are stored and injected from the next prompt on. The state then carries the episode's trace
too, so a checkpoint taken mid-episode resumes exactly.
"""

from __future__ import annotations

from collections import deque
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from agents.memory.base import MemoryItem, TokenCounter, brain_or_rule, names_to_config
from agents.memory.budget import pack_text
from agents.memory.embeddings import Embedder, embedder_or_lexical
from agents.memory.reflectors import IN_PROGRESS, BrainReflector, Reflector, RuleReflector, succeeded
from agents.memory.registry import register_memory
from agents.memory.state import check_header, parse_model
from agents.memory.text import overlap_score

STATE_VERSION = 1


class ReflectiveConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    inject_k: int = Field(3, ge=1)
    max_lessons: int = Field(200, ge=1)
    max_events: int = Field(60, ge=1)
    embedder: Literal["minilm", "hashing", "lexical"] = "lexical"  # lessons are few: word overlap is enough by default
    reflector: Literal["auto", "brain", "rule"] = "auto"  # auto = brain if one is given
    # also reflect every k trace events within an episode (None: only at its end)
    reflect_every: int | None = Field(None, ge=1)


@dataclass
class Lesson:
    text: str
    instruction: str
    success: bool
    episode: int
    count: int = 1  # times the same lesson was derived again


class ReflectiveState(BaseModel):
    config: ReflectiveConfig
    episode: int = Field(ge=0)
    lessons: list[Lesson]
    # the episode in progress (empty between episodes): its task, trace, injected lessons, reflection clock
    instruction: str = ""
    events: list[MemoryItem] = Field(default_factory=list)
    active: list[int] = Field(default_factory=list)  # indices into lessons
    since: int = Field(0, ge=0)  # trace events since the last reflection
    reflections: int = Field(0, ge=0)  # reflections made (at episode ends and during episodes)


@register_memory("reflective", carries_state=True)
class ReflectiveMemory:
    name = "reflective"

    def __init__(
        self,
        brain: Any = None,
        config: ReflectiveConfig | None = None,
        reflector: Reflector | None = None,
        embedder: Embedder | str | None = None,
        **kwargs: Any,
    ) -> None:
        given_embedder, reflector = names_to_config(kwargs, embedder=embedder, reflector=reflector)
        self.config = config or ReflectiveConfig(**kwargs)
        c = self.config
        self.reflector: Reflector = reflector or brain_or_rule(
            c.reflector, brain, BrainReflector, RuleReflector, "reflective memory with reflector"
        )
        self.embedder = embedder_or_lexical(given_embedder, c.embedder)
        self.lessons: list[Lesson] = []
        self._vecs: np.ndarray | None = None
        self.events: deque[MemoryItem] = deque(maxlen=c.max_events)
        self.instruction = ""
        self.episode = 0
        self.active: list[Lesson] = []
        self.last_injected = ""
        self.since = 0  # trace events since the last reflection
        self.reflections = 0

    # -- relevance ----------------------------------------------------------------------------
    @staticmethod
    def _key(lesson: Lesson) -> str:
        return f"{lesson.instruction} {lesson.text}"

    def _relevance(self, query: str) -> np.ndarray:
        if not self.lessons:
            return np.zeros(0, dtype=np.float32)
        if self.embedder is None:
            return np.asarray([overlap_score(query, self._key(l)) for l in self.lessons], dtype=np.float32)
        if self._vecs is None or len(self._vecs) != len(self.lessons):
            self._vecs = self.embedder.embed([self._key(l) for l in self.lessons])
        return self._vecs @ self.embedder.embed([query])[0]

    def _rank(self, query: str, k: int) -> list[Lesson]:
        rel = self._relevance(query)
        if rel.size == 0:
            return []
        # relevance first; among equals prefer lessons derived repeatedly, then newer ones
        order = sorted(
            range(len(self.lessons)),
            key=lambda i: (-round(float(rel[i]), 6), -self.lessons[i].count, -self.lessons[i].episode),
        )
        return [self.lessons[i] for i in order[:k]]

    # -- protocol -----------------------------------------------------------------------------
    def add(self, item: MemoryItem) -> None:
        """Lesson items (kind='lesson') are stored directly; anything else is part of the current trace."""
        if item.kind == "lesson":
            self._store([item.text], succeeded(item.meta))
            return
        self.events.append(item)
        self.since += 1
        if self.config.reflect_every and self.since >= self.config.reflect_every:
            self.reflect_now()

    def reflect_now(self) -> list[str]:
        """Reflect on the trace so far, mid-episode; the new insights go to the front of the injected lessons."""
        self.since = 0
        texts = self.reflector.reflect(self.instruction, list(self.events), {IN_PROGRESS: True})
        self._store(texts, False)
        self.reflections += 1
        keys = {" ".join(t.split()).lower() for t in texts}
        fresh = [l for l in self.lessons if l.text.lower() in keys]
        self.active = (fresh + [l for l in self.active if l not in fresh])[: self.config.inject_k]
        return texts

    def retrieve(self, query: str, k: int = 5) -> list[MemoryItem]:
        return [
            MemoryItem(
                l.text,
                kind="lesson",
                time=float(l.episode),
                meta={"instruction": l.instruction, "success": l.success, "count": l.count},
            )
            for l in self._rank(query, k)
        ]

    def build_context(self, query: str, budget_tokens: int, count_tokens: TokenCounter) -> str:
        chosen = self.active or self._rank(query, self.config.inject_k)
        lines = [f"- {l.text}" for l in chosen]
        earlier = all(l.episode < self.episode for l in chosen)
        header = "Lessons from earlier episodes:" if earlier else "Lessons and reflections so far:"
        self.last_injected = pack_text(lines, budget_tokens, count_tokens, header)
        return self.last_injected

    def on_episode_start(self, instruction: str) -> None:
        self.episode += 1
        self.instruction = instruction
        self.events.clear()
        self.since = 0
        self.active = self._rank(instruction, self.config.inject_k)

    def on_episode_end(self, outcome: dict[str, Any]) -> None:
        lessons = self.reflector.reflect(self.instruction, list(self.events), outcome)
        self._store(lessons, succeeded(outcome))
        self.reflections += 1
        self.events.clear()
        self.since = 0

    def _store(self, texts: list[str], success: bool) -> None:
        for text in texts:
            text = " ".join(text.split())
            same = next((l for l in self.lessons if l.text.lower() == text.lower()), None)
            if same:
                same.count += 1
                same.episode = self.episode
                continue
            self.lessons.append(Lesson(text, self.instruction, success, self.episode))
        if len(self.lessons) > self.config.max_lessons:  # forget the least confirmed, oldest first
            self.lessons.sort(key=lambda l: (l.count, l.episode), reverse=True)
            del self.lessons[self.config.max_lessons :]
            self.lessons.sort(key=lambda l: l.episode)
        self._vecs = None

    def save_state(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "kind": self.name,
            "config": self.config.model_dump(),
            "episode": self.episode,
            "lessons": [asdict(l) for l in self.lessons],
            "instruction": self.instruction,
            "events": [asdict(e) for e in self.events],
            "active": [k for a in self.active for k, l in enumerate(self.lessons) if l is a],
            "since": self.since,
            "reflections": self.reflections,
        }

    def load_state(self, state: dict[str, Any]) -> None:
        check_header(state, self.name, STATE_VERSION)
        st = parse_model(ReflectiveState, state, "reflective memory state")
        self.config = st.config
        self.events = deque(st.events, maxlen=st.config.max_events)
        self.lessons = list(st.lessons)
        self.episode, self._vecs = st.episode, None
        self.active = [self.lessons[k] for k in st.active if 0 <= k < len(self.lessons)]
        self.instruction, self.since, self.reflections = st.instruction, st.since, st.reflections

    def clear(self) -> None:
        self.lessons, self._vecs, self.active = [], None, []
        self.events.clear()
        self.since = self.reflections = 0
        self.instruction, self.last_injected = "", ""
