"""A society run's interviews, kept: `interviews.jsonl` in the run folder, one `InterviewRecord` a line.

Interviews ask an agent a question without changing it (`SocietyRun.interview`), so their answers
would be lost with the process unless written down. The file is append-only, like the trajectory
store, so a viewer can follow it while the run goes on. `interview.questions=[...]` in the run's
config asks them after every `interview.every` rounds and after the last round; every interview a
caller asks a live `SocietyRun` is appended too. A run resumed after round r drops the lines of
later rounds first (they are asked again), as the event log drops its rows.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError, field_validator

from agents.config import Strict

INTERVIEWS = "interviews.jsonl"
MAX_QUESTIONS = 20
MAX_QUESTION_CHARS = 500
MAX_INTERVIEWED = 1000  # agents asked per interview round (each answer of a brain seat is a model call)
MAX_ANSWER_CHARS = 4000
MAX_LINE_BYTES = 64 << 10  # a longer line in the file is not parsed (it is not one of ours)


class InterviewConfig(Strict):
    """`interview.questions=["Why did you defect?"] interview.every=5 interview.agents=[0,3]`."""

    questions: list[str] = Field(default_factory=list)  # asked of each interviewed agent; none = no interviews
    every: int = Field(default=0, ge=0)  # rounds between interviews; 0 = only after the last round
    # the agents asked; empty = the brain seats, or in a rule-only run the recorded agents (0..trajectory_agents-1)
    agents: list[int] = Field(default_factory=list, max_length=MAX_INTERVIEWED)
    max_tokens: int = Field(default=96, ge=1, le=512)  # longest answer a brain seat writes

    @field_validator("questions")
    @classmethod
    def _questions_bounded(cls, v: list[str]) -> list[str]:
        if len(v) > MAX_QUESTIONS:
            raise ValueError(f"at most {MAX_QUESTIONS} questions (got {len(v)}): each is asked of every agent")
        for q in v:
            if not q.strip():
                raise ValueError("a question is empty: write the question to ask")
            if len(q) > MAX_QUESTION_CHARS:
                raise ValueError(f"a question is {len(q)} characters; at most {MAX_QUESTION_CHARS}")
        return v

    @field_validator("agents")
    @classmethod
    def _agents_non_negative(cls, v: list[int]) -> list[int]:
        bad = [i for i in v if i < 0]
        if bad:
            raise ValueError(f"agent indices are 0 or more (got {bad[:5]})")
        return sorted(set(v))

    @property
    def enabled(self) -> bool:
        return bool(self.questions)

    def due(self, round_no: int, last: bool) -> bool:
        """Whether the agents are interviewed after `round_no` (the last round always, when enabled)."""
        return self.enabled and (last or (self.every > 0 and round_no % self.every == 0))


class InterviewRecord(BaseModel):
    """One answer: who was asked what, after which round, and who answered (a brain seat or the rule)."""

    round: int = Field(ge=0)  # rounds played when it was asked (0 = before the first)
    agent: str  # agent_<i>
    index: int = Field(ge=0)
    question: str
    answer: str
    seat: Literal["brain", "rule"]  # a brain seat answers through its model; a rule agent from its persona and view
    answered_by: str  # `<brain>:<model>` or `rule:<name>`
    asked_at: float  # unix time


class InterviewLog:
    """Append-only `interviews.jsonl`; a fresh run starts it empty, a resumed run keeps rounds <= its checkpoint's."""

    def __init__(self, out: Path, resume_round: int | None = None) -> None:
        self.path = out / INTERVIEWS
        if resume_round is None:
            self.path.unlink(missing_ok=True)
        elif self.path.exists():
            kept = [r for r in read_interviews(self.path) if r.round <= resume_round]
            tmp = self.path.with_name(INTERVIEWS + ".tmp")
            tmp.write_text("".join(r.model_dump_json() + "\n" for r in kept), encoding="utf-8")
            os.replace(tmp, self.path)

    def append(self, records: list[InterviewRecord]) -> None:
        if not records:
            return
        with open(self.path, "a", encoding="utf-8") as f:
            f.write("".join(r.model_dump_json() + "\n" for r in records))
            f.flush()


def read_interviews(path: Path, agent: str | None = None, limit: int | None = None) -> Iterator[InterviewRecord]:
    """The records in `path` in order (of one agent, at most `limit`), streamed; damaged lines are skipped."""
    if not path.is_file():
        return
    n = 0
    with open(path, "rb") as f:
        for line in f:
            if len(line) > MAX_LINE_BYTES or not line.endswith(b"\n"):  # a foreign line, or one being written
                continue
            if agent is not None and f'"agent":"{agent}"'.encode() not in line:
                continue
            try:
                rec = InterviewRecord.model_validate(json.loads(line))
            except (ValueError, ValidationError):
                continue
            if agent is not None and rec.agent != agent:
                continue
            yield rec
            n += 1
            if limit is not None and n >= limit:
                return
