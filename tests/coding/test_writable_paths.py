"""Folders a published task writes to without its Dockerfile creating them (`/output`): found in the task's
text, shown writable in the bwrap sandbox, kept for the verifier (envs/coding/published/writable.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from envs.coding.published.writable import _tops_in_prose, _tops_in_script, writable_tops
from envs.coding.sandbox import unavailable_reason
from envs.coding.tasks import load_task_dir

needs_bwrap = pytest.mark.skipif(unavailable_reason("bwrap") is not None, reason=f"{unavailable_reason('bwrap')}")


def _output_task(tmp_path: Path, solve: str = "mkdir -p /output\nwc -w < /app/notes.md > /output/count.txt\n") -> Path:
    """A Harbor task whose instruction, oracle and tests use /output, which its Dockerfile never creates."""
    d = tmp_path / "count-words"
    (d / "environment").mkdir(parents=True)
    (d / "tests").mkdir()
    (d / "solution").mkdir()
    (d / "task.toml").write_text("")
    (d / "instruction.md").write_text("Count the words of /app/notes.md and write the number to /output/count.txt.")
    (d / "environment" / "Dockerfile").write_text("FROM python:3.12-slim\nWORKDIR /app\nCOPY notes.md ./\n")
    (d / "environment" / "notes.md").write_text("one two three\n")
    (d / "tests" / "test.sh").write_text(
        'if [ "$(cat /output/count.txt)" = 3 ]; then echo 1 > /logs/verifier/reward.txt; '
        "else echo 0 > /logs/verifier/reward.txt; fi\n"
    )
    (d / "solution" / "solve.sh").write_text(solve)
    return d


def test_the_tasks_text_names_the_folders_it_writes() -> None:
    prose = "Write /output/report.json and files under /results/. Serve GET /books/<id>, /todos/1 and /health."
    assert _tops_in_prose(prose) == {"/output", "/results"}
    script = 'mkdir -p /scratch\ncd /work\necho 1 >/flag\nif p != "/todos": pass\ncurl localhost:80/api/x\nls $HOME/a'
    assert _tops_in_script(script) == {"/scratch", "/work", "/flag"}
    # system, harness and sandbox paths are never made writable
    assert writable_tops("Read /etc/x.conf, /tests/a.py, /logs/verifier/x.txt, /workspace/a.txt, /tmp/a.txt.", []) == []


def test_an_undeclared_output_folder_becomes_a_writable_root(tmp_path: Path) -> None:
    plan = load_task_dir(_output_task(tmp_path)).environment
    assert plan.workdir == "/app"
    assert plan.roots == {"/app": "app", "/output": "output"} and plan.undeclared == ["/output"]
    assert [(c.dest, c.into) for c in plan.copies] == [("app", True)]  # notes.md still lands in /app


def test_a_task_that_writes_only_in_its_workdir_keeps_the_plain_layout(tmp_path: Path) -> None:
    d = _output_task(tmp_path, solve="wc -w < notes.md > /app/count.txt\n")
    (d / "instruction.md").write_text("Count the words of notes.md into count.txt.")
    (d / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    plan = load_task_dir(d).environment
    assert plan.roots == {} and plan.undeclared == []


@needs_bwrap
def test_the_agent_oracle_and_verifier_write_to_an_undeclared_output_folder(tmp_path: Path) -> None:
    from envs.coding.env import CodingEnv

    env = CodingEnv(task=str(_output_task(tmp_path)))
    try:
        env.reset(seed=0)
        out, *_ = env.step("bash[pwd; ls; ls -A /output; echo hi > /output/x && cat /output/x]")
        assert out.startswith("/app\nnotes.md\nhi"), out
        assert env.step("submit[]")[1] == 0.0  # no count.txt: the no-op scores 0
        env.reset(seed=1)
        out, *_ = env.step("bash[ls -A /output; echo end]")
        assert out.startswith("end"), out  # reset empties it again
        while True:
            _, r, term, trunc, info = env.step(env.expert_action())
            if term or trunc:
                break
        assert r == 1.0, info["grade"]["log"]
    finally:
        env.close()
