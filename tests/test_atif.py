"""ATIF export (agents/trajectories/atif.py, `python -m agents.export atif`): the mapping, the CLI, and the
output validated by Harbor's own pydantic models in a Python >= 3.12 venv (skipped with the reason without one)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agents.export import main
from agents.trajectories.atif import AtifTrajectory, to_atif
from agents.trajectories.schema import EpisodeRecord, EpisodeStats, Outcome, StepRecord
from agents.trajectories.store import TrajectoryStore

ROOT = Path(__file__).resolve().parents[1]


def _episode() -> EpisodeRecord:
    """A coding episode with every kind of step: a tool call with token ids, an unparseable output, a submit."""
    steps = [
        StepRecord(
            index=0,
            raw_output="Let me look.\nbash[ls -la]",
            thought="Let me look.",
            action="bash[ls -la]",
            observation="notes.md",
            tokens_in=12,
            tokens_out=5,
            prompt_token_ids=[1, 2, 3],
            output_token_ids=[7, 8],
            output_logprobs=[-0.1, -0.2],
            info={"task": "count-words"},
        ),
        StepRecord(index=1, raw_output="hmm", parse_error="no action", observation="Invalid: no action found"),
        StepRecord(
            index=2,
            raw_output="create[count.txt]\n3",
            action="create[count.txt]\n3",
            observation="File created.",
        ),
        StepRecord(
            index=3,
            raw_output="submit[]",
            action="submit[]",
            observation="Submitted. Hidden tests: 1/1 passed, reward 1.",
            reward=1.0,
            terminated=True,
            info={"task": "count-words", "grade": {"reward": 1.0, "rewards": {"reward": 1.0}}},
        ),
    ]
    return EpisodeRecord(
        episode_id="coding-7",
        env="coding",
        env_id="agentsim/Coding-v0",
        env_kwargs={"task": "tests/x"},
        seed=7,
        instruction="Count the words.",
        initial_observation="Count the words.\n\nActions: ...",
        brain="local",
        model="gemma-3-270m",
        steps=steps,
        outcome=Outcome(reward=1.0, total_reward=1.0, success=True, terminated=True, truncated=False),
        stats=EpisodeStats(
            steps=4,
            env_steps=3,
            invalid_actions=0,
            parse_failures=1,
            tokens_in=12,
            tokens_out=5,
            brain_time_s=0.5,
            wall_time_s=2.0,
        ),
        started_at=1_700_000_000.0,
        finished_at=1_700_000_002.0,
    )


def test_steps_map_to_atif_steps_with_tool_calls_observations_and_token_ids() -> None:
    t = to_atif(_episode())
    doc = json.loads(t.to_json())
    assert doc["schema_version"] == "ATIF-v1.6" and doc["session_id"] == "coding-7"
    assert [s["step_id"] for s in doc["steps"]] == [1, 2, 3, 4, 5]
    assert [s["source"] for s in doc["steps"]] == ["user", "agent", "agent", "agent", "agent"]
    first, look, bad, create, submit = doc["steps"]
    assert first["message"].startswith("Count the words.") and "tool_calls" not in first
    assert look["tool_calls"] == [
        {"tool_call_id": "call_0", "function_name": "bash", "arguments": {"command": "ls -la"}}
    ]
    assert look["observation"]["results"] == [{"source_call_id": "call_0", "content": "notes.md"}]
    assert look["metrics"] == {
        "prompt_tokens": 12,
        "completion_tokens": 5,
        "prompt_token_ids": [1, 2, 3],
        "completion_token_ids": [7, 8],
        "logprobs": [-0.1, -0.2],
    }
    assert look["reasoning_content"] == "Let me look." and look["model_name"] == "gemma-3-270m"
    assert "tool_calls" not in bad and bad["observation"]["results"] == [{"content": "Invalid: no action found"}]
    assert bad["extra"]["parse_error"] == "no action"
    assert create["tool_calls"][0]["function_name"] == "create"
    assert create["tool_calls"][0]["arguments"] == {"path": "count.txt", "content": "3"}
    assert submit["tool_calls"][0]["function_name"] == "submit" and submit["extra"]["reward"] == 1.0
    assert doc["final_metrics"]["total_steps"] == 5 and doc["final_metrics"]["extra"]["success"] is True
    assert doc["extra"]["seed"] == 7
    AtifTrajectory.model_validate(doc)  # round-trips through the schema


def test_other_envs_actions_become_their_verb_or_act() -> None:
    ep = _episode().model_copy(update={"env": "webshop"})
    ep.steps[0].action = "search[red shoes]"
    ep.steps[2].action = "click red shoes"
    doc = to_atif(ep).model_dump(exclude_none=True)
    assert doc["steps"][1]["tool_calls"][0] | {"tool_call_id": ""} == {
        "tool_call_id": "",
        "function_name": "search",
        "arguments": {"arg": "red shoes"},
    }
    assert doc["steps"][3]["tool_calls"][0]["arguments"] == {"action": "click red shoes"}


def test_the_schema_refuses_what_atif_forbids() -> None:
    doc = json.loads(to_atif(_episode()).to_json())
    with pytest.raises(ValueError, match="step ids run"):
        AtifTrajectory.model_validate({**doc, "steps": doc["steps"][1:]})
    with pytest.raises(ValueError, match="only allowed on agent steps"):
        AtifTrajectory.model_validate({**doc, "steps": [{**doc["steps"][0], "metrics": {}}, *doc["steps"][1:]]})
    bad_ref = json.loads(json.dumps(doc))
    bad_ref["steps"][1]["observation"]["results"][0]["source_call_id"] = "call_99"
    with pytest.raises(ValueError, match="not a tool call of the step"):
        AtifTrajectory.model_validate(bad_ref)
    with pytest.raises(ValueError, match="Extra inputs"):
        AtifTrajectory.model_validate({**doc, "unknown": 1})


def _store(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    store = TrajectoryStore(run / "trajectories.jsonl")
    store.append(_episode())
    store.append(_episode().model_copy(update={"episode_id": "coding-8", "seed": 8}))
    return run


def test_cli_writes_one_document_per_episode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "atif"
    assert main(["atif", str(_store(tmp_path)), str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["coding-7.json", "coding-8.json"]
    assert "2 episodes written" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["parquet", "{run}", "{out}"], "invalid choice: 'parquet'"),
        (["atif", "{run}", "{out}", "--colour"], "unrecognized arguments: --colour"),
        (["atif", "{missing}", "{out}"], "no such trajectories file"),
        (["atif", "{empty}", "{out}"], "holds no readable episode"),
    ],
)
def test_cli_usage_mistakes_exit_2_with_one_message(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "trajectories.jsonl").write_text("")
    paths = {"run": _store(tmp_path), "out": tmp_path / "o", "missing": tmp_path / "nope", "empty": tmp_path / "empty"}
    argv = [a.format(**paths) for a in args]
    res = subprocess.run([sys.executable, "-m", "agents.export", *argv], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 2 and message in res.stderr, res.stderr
    assert "Traceback" not in res.stderr


VALIDATE = """
import json, sys
from harbor.models.trajectories import Trajectory
for path in sys.argv[1:]:
    t = Trajectory.model_validate(json.load(open(path)))
    print("ok", t.session_id, len(t.steps), t.schema_version)
"""


def test_the_export_validates_against_harbors_own_trajectory_models(tmp_path: Path) -> None:
    from tests.coding.test_tasks import _harbor_python  # skips with the reason when no 3.12 venv can be made

    out = tmp_path / "atif"
    assert main(["atif", str(_store(tmp_path)), str(out)]) == 0
    files = sorted(str(p) for p in out.iterdir())
    res = subprocess.run([_harbor_python(), "-c", VALIDATE, *files], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.splitlines() == ["ok coding-7 5 ATIF-v1.6", "ok coding-8 5 ATIF-v1.6"]
