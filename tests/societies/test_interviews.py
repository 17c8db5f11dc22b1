"""Interviews kept in the run folder: asked by the config per round, answered by brain seats and rule agents,
read back, dropped past a resumed checkpoint, and config mistakes refused (exit 2 on the command line)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agents.brains.registry import BRAIN_REGISTRY
from agents.config import ConfigError, validate_config
from societies.config import SocietyRunConfig
from societies.interviews import INTERVIEWS, InterviewRecord, read_interviews
from societies.run import SocietyRun, run_society
from tests.societies.brains import register

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = ["Why do you hold your opinion?", "Whom do you trust?"]


@pytest.fixture(autouse=True)
def counting_brain():
    register()
    yield
    BRAIN_REGISTRY.unregister("counting")


def cfg(out: Path, **kw: Any) -> SocietyRunConfig:
    return validate_config(SocietyRunConfig, {"out": str(out), "plots": False, **kw})


def test_a_run_keeps_its_interviews_per_agent_round_and_seat(tmp_path: Path) -> None:
    """Brain seats answer through their brain, the rule agents from their persona; every answer is kept."""
    c = cfg(
        tmp_path / "run",
        scenario="opinion",
        agents=8,
        rounds=5,
        seed=3,
        brain={"name": "counting"},
        llm_agents=3,
        interview={"questions": QUESTIONS, "every": 2, "agents": [0, 1, 2, 3, 4, 5, 6, 7]},
    )
    summary = run_society(c)
    recs = list(read_interviews(tmp_path / "run" / INTERVIEWS))
    assert sorted({r.round for r in recs}) == [2, 4, 5]  # every 2 rounds, and after the last
    assert len(recs) == 3 * 8 * 2 == summary["interviews"]
    seats = {r.index for r in recs if r.seat == "brain"}
    assert len(seats) == 3 and summary["brain"]["seats"] == 3
    for r in recs:
        assert r.agent == f"agent_{r.index}" and r.question in QUESTIONS
        if r.seat == "brain":
            assert r.answered_by == "counting:hash-v1" and r.answer.startswith("I am a hash brain")
        else:
            assert r.answered_by == "rule:deffuant" and "deffuant" in r.answer
    one = list(read_interviews(tmp_path / "run" / INTERVIEWS, agent="agent_1"))
    assert len(one) == 6 and all(r.index == 1 for r in one)
    assert list(read_interviews(tmp_path / "run" / INTERVIEWS, agent="agent_1", limit=2)) == one[:2]


def test_rule_runs_interview_their_recorded_agents_and_skip_damaged_lines(tmp_path: Path) -> None:
    out = tmp_path / "rule"
    run_society(
        cfg(
            out,
            scenario="diffusion",
            agents=30,
            rounds=4,
            trajectory_agents=4,
            interview={"questions": ["Did you share?"]},
        )
    )
    recs = list(read_interviews(out / INTERVIEWS))
    assert [r.index for r in recs] == [0, 1, 2, 3] and {r.seat for r in recs} == {"rule"}
    with open(out / INTERVIEWS, "a") as f:
        f.write('{"round": "x"}\nnot json\n{"round": 1, "agent": "agent_9"')  # damaged, and an unfinished line
    assert list(read_interviews(out / INTERVIEWS)) == recs


def test_no_questions_no_file_and_a_live_interview_is_kept(tmp_path: Path) -> None:
    out = tmp_path / "live"
    run = SocietyRun(cfg(out, scenario="cooperation", agents=6, rounds=3))
    run.play_round()
    assert not (out / INTERVIEWS).exists()
    answer = run.interview("agent_2", "Who are you?")
    (rec,) = read_interviews(out / INTERVIEWS)
    assert rec == InterviewRecord(
        round=1, agent="agent_2", index=2, question="Who are you?", answer=answer, seat="rule",
        answered_by=rec.answered_by, asked_at=rec.asked_at,
    )  # fmt: skip
    run.close()


def test_a_resumed_run_drops_the_interviews_past_its_checkpoint(tmp_path: Path) -> None:
    out = tmp_path / "resume"
    kw = {"scenario": "opinion", "agents": 6, "rounds": 4, "checkpoint_every": 1}
    kw["interview"] = {"questions": ["Why?"], "every": 1, "agents": [0]}
    run = SocietyRun(cfg(out, **kw))
    for _ in range(2):
        run.play_round()
    run.close()  # as if killed after round 2's checkpoint, before round 3's answers made it to one
    with open(out / INTERVIEWS, "a") as f:
        f.write(InterviewRecord(round=3, agent="agent_0", index=0, question="Why?", answer="stale", seat="rule",
                                answered_by="rule:deffuant", asked_at=0.0).model_dump_json() + "\n")  # fmt: skip
    resumed = SocietyRun(cfg(out, resume=True, **kw))
    resumed.run()
    assert [(r.round, r.answer != "stale") for r in read_interviews(out / INTERVIEWS)] == [
        (r, True) for r in (1, 2, 3, 4)
    ]


@pytest.mark.parametrize(
    "bad, says",
    [
        ({"interview": {"agents": [2, 50]}}, "interview.agents [50]"),
        ({"interview": {"questions": ["  "]}}, "question is empty"),
        ({"interview": {"questions": ["x" * 501]}}, "at most 500"),
        ({"interview": {"questions": ["q"] * 21}}, "at most 20 questions"),
        ({"interview": {"every": -1}}, "every"),
        ({"interview": {"bogus": 1}}, "bogus"),
        ({"interview": {"questions": ["q"]}, "shards": 2}, "shards=1"),
    ],
)
def test_interview_config_mistakes_are_named(bad: dict, says: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=re.escape(says)):
        cfg(tmp_path, agents=10, **bad)


def test_the_command_line_asks_and_refuses_unknown_keys(tmp_path: Path) -> None:
    out = tmp_path / "cli"
    base = [sys.executable, "-m", "societies.run", "scenario=opinion", "agents=6", "rounds=2", "plots=false"]
    ok = subprocess.run(
        [*base, f"out={out}", "interview.questions=[Who are you?]", "interview.agents=[1]"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr[-2000:]
    (rec,) = read_interviews(out / INTERVIEWS)
    assert (rec.round, rec.index, rec.question) == (2, 1, "Who are you?")
    assert json.loads((out / "summary.json").read_text())["interviews"] == 1
    bad = subprocess.run(
        [*base, f"out={tmp_path / 'bad'}", "interview.bogus=1"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert bad.returncode == 2 and bad.stderr.strip().startswith("error:") and "bogus" in bad.stderr
