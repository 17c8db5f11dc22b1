"""A folder of published tasks as a dataset: `trials=` per task, `concurrency=` trials in flight (one sandbox
each), the per-task summary (`tasks.json`, agents/collect/tasks.py), and a run stopped by SIGTERM / SIGINT
leaving no sandbox process or temporary folder behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from agents.collect.tasks import ERROR_CLASSES, classify_failure, classify_grade
from agents.config import ConfigError
from envs.coding.sandbox import unavailable_reason

ROOT = Path(__file__).resolve().parents[2]
needs_bwrap = pytest.mark.skipif(unavailable_reason("bwrap") is not None, reason=f"{unavailable_reason('bwrap')}")
REWARD_IF_COUNTED = (
    'if [ "$(cat /app/count.txt)" = 3 ]; then echo 1 > /logs/verifier/reward.txt; '
    "else echo 0 > /logs/verifier/reward.txt; fi\n"
)


def _task(root: Path, name: str, solve: str = "wc -w < notes.md > count.txt\n", test: str = REWARD_IF_COUNTED) -> Path:
    """A small Harbor task (name = folder name): count the words of notes.md into /app/count.txt."""
    d = root / name
    (d / "environment").mkdir(parents=True)
    (d / "tests").mkdir()
    (d / "solution").mkdir()
    (d / "task.toml").write_text("")
    (d / "instruction.md").write_text("Write the number of words of notes.md to count.txt.")
    (d / "environment" / "Dockerfile").write_text("FROM python:3.12-slim\nWORKDIR /app\nCOPY notes.md ./\n")
    (d / "environment" / "notes.md").write_text("one two three\n")
    (d / "tests" / "test.sh").write_text(test)
    (d / "solution" / "solve.sh").write_text(solve)
    return d


def _run(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "agents.run", "env=coding", "brain=scripted", "progress=false", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_error_classes_of_verdicts_and_crashes() -> None:
    assert classify_grade({"timed_out": True, "rewards": {}, "verifier": "tests/test.sh"})[0] == "timeout"
    assert classify_grade({"timed_out": False, "rewards": {}, "verifier": "tests/test.sh"})[0] == "verifier_error"
    assert classify_grade({"report_problem": "the report is missing", "rewards": {}})[0] == "verifier_error"
    assert classify_grade({"timed_out": False, "rewards": {"reward": 0.0}, "verifier": "tests/test.sh"})[0] == "none"
    assert classify_failure("TaskFormatError: task.toml: bad") == "load_error"
    assert classify_failure("BackendUnavailableError: no bwrap") == "load_error"
    assert classify_failure("TimeoutError: brain") == "timeout"
    assert classify_failure("RuntimeError: boom") == "agent_error"


def test_trials_needs_an_env_of_named_tasks(tmp_path: Path) -> None:
    from agents.engine import run_config

    with pytest.raises(ConfigError, match="trials= needs an env that plays named tasks"):
        run_config(
            {"env": {"id": "agentsim/FaultTree-v0"}, "brain": {"name": "scripted"}, "trials": 2, "out": str(tmp_path)}
        )


def _trials(tmp_path: Path, env: dict[str, object], **raw: object) -> int:
    from agents.config import RunConfig, validate_config
    from agents.engine import with_trials

    cfg = validate_config(RunConfig, {"env": env, "brain": {"name": "scripted"}, "out": str(tmp_path), **raw})
    return with_trials(cfg).episodes


def test_trials_count_the_tasks_the_env_class_names_for_its_kwargs(tmp_path: Path) -> None:
    """The class answers from the kwargs (no env, no sandbox), as an env made with them would."""
    from envs.coding.env import CodingEnv

    data = tmp_path / "dataset"
    _task(data, "count-words")
    _task(data, "silent-verifier")
    for kwargs in ({"task": str(data)}, {"task": "all"}, {}):
        assert CodingEnv.tasks_of(kwargs) == CodingEnv(**kwargs).task_names()  # type: ignore[arg-type]
    assert _trials(tmp_path, {"id": "coding", "kwargs": {"task": str(data)}}, trials=3) == 6
    assert _trials(tmp_path, {"id": "coding"}, trials=2) == 2  # one task
    assert _trials(tmp_path, {"id": "coding"}, episodes=9) == 9  # no trials: episodes as asked


@pytest.mark.parametrize(
    "env,raw,words",
    [
        ({"id": "coding", "kwargs": {"tsk": "x"}}, {}, "bad env.kwargs for 'coding': .*'tsk'"),
        ({"id": "agentsim/Nope-v0"}, {}, "unknown env id 'agentsim/Nope-v0'; project envs: .*coding"),
        ({"id": "x-v0", "entry_point": "no_such_module:Env"}, {}, "could not be imported from no_such_module:Env"),
        ({"id": "coding"}, {"remote": {"url": "http://127.0.0.1:9"}}, "trials= needs the env in this process"),
    ],
)
def test_trials_with_a_bad_env_is_a_config_error_naming_it(
    tmp_path: Path, env: dict[str, object], raw: dict[str, object], words: str
) -> None:
    with pytest.raises(ConfigError, match=words):
        _trials(tmp_path, env, trials=2, **raw)


@needs_bwrap
def test_a_dataset_runs_each_task_trials_times_in_parallel_with_a_summary_per_task(tmp_path: Path) -> None:
    data = tmp_path / "dataset"
    _task(data, "count-words")
    _task(data, "silent-verifier", test="exit 0\n")  # writes no reward: a verifier error, not a 0
    out = tmp_path / "run"
    proc = _run([f"env.kwargs.task={data}", "trials=2", "concurrency=2", f"out={out}"])
    log, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, log[-3000:]
    report = json.loads((out / "tasks.json").read_text())
    by_task = {t["task"]: t for t in report["tasks"]}
    assert sorted(by_task) == ["count-words", "silent-verifier"]
    words, silent = by_task["count-words"], by_task["silent-verifier"]
    assert (words["trials"], words["passed"], words["reward_mean"]) == (2, 2, 1.0)
    assert words["errors"] == dict.fromkeys(ERROR_CLASSES, 0) | {"none": 2}
    assert (silent["trials"], silent["passed"], silent["errors"]["verifier_error"]) == (2, 0, 2)
    assert sorted(t["seed"] for t in report["trials"]) == [0, 1, 2, 3]
    assert "per task" in log and "silent-verifier" in log
    # two trials were in flight at once: some pair of episodes overlaps in time
    eps = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    spans = sorted((e["started_at"], e["finished_at"]) for e in eps)
    assert any(b[0] < a[1] for a, b in zip(spans, spans[1:], strict=False)), spans


def _marked(marker: str) -> list[int]:
    """Pids of live processes whose command line holds `marker`."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                cmd = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marker in cmd:
                found.append(int(entry.name))
    return found


def _leftovers(pid: int) -> list[str]:
    """Temporary folders (workspaces, stashes, verifier folders) the run with this pid made and left."""
    return [n for n in os.listdir(tempfile.gettempdir()) if n.startswith("agentsim-") and f"-{pid}-" in n]


@needs_bwrap
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_run_stopped_mid_trial_leaves_no_sandbox_process_or_folder(tmp_path: Path, sig: signal.Signals) -> None:
    marker = f"sleep {4000 + int(sig)}.5"  # only the oracles of this test run it
    data = tmp_path / "dataset"
    for name in ("slow-a", "slow-b"):
        _task(data, name, solve=f"{marker}\n")
    out = tmp_path / "run"
    proc = _run([f"env.kwargs.task={data}", "trials=1", "concurrency=2", f"out={out}"])
    try:
        deadline = time.monotonic() + 600  # a bound on the wait for both trials to be mid-oracle, not a measurement
        while len(_marked(marker)) < 2:
            assert proc.poll() is None, proc.communicate()[0][-3000:]
            assert time.monotonic() < deadline, "the trials never reached their oracle"
            time.sleep(0.5)
        assert _leftovers(proc.pid)  # the trials' workspaces exist while they run
        proc.send_signal(sig)
        log, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1, log[-3000:]  # stopped: incomplete, rerun to finish
    assert _marked(marker) == []
    assert _leftovers(proc.pid) == []
    summary = json.loads((out / "summary.json").read_text())
    assert f"stopped by {sig.name}" in summary["aborted"]
