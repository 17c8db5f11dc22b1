"""The files an episode changed: a real scripted episode's diff in its submit info and its trajectory, and the
bounds (binary files named, file count and diff size capped, each cut said so) on real workspaces."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envs.coding.env import CodingEnv
from envs.coding.sandbox import unavailable_reason
from envs.coding.sandbox.snapshot import snapshot_tree
from envs.coding.workspace_diff import MAX_DIFF_CHARS, MAX_FILE_DIFF_CHARS, MAX_FILES, workspace_diff

REASON = unavailable_reason("bwrap")
needs_bwrap = pytest.mark.skipif(REASON is not None, reason=f"bwrap backend unavailable: {REASON}")
ROOT = Path(__file__).resolve().parents[2]


def diff_of(tmp_path: Path, before: dict[str, bytes], after: dict[str, bytes]):
    snaps = []
    for name, files in (("a", before), ("b", after)):
        root = tmp_path / name
        for path, data in files.items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_bytes(data)
        root.mkdir(parents=True, exist_ok=True)
        snaps.append(snapshot_tree(root))
    return workspace_diff(*snaps)


def test_added_deleted_modified_binary_and_pycache(tmp_path: Path) -> None:
    d = diff_of(
        tmp_path,
        {"app.py": b"x = 1\ny = 2\n", "gone.txt": b"bye\n", "same.txt": b"same\n", "img.bin": b"\x00\x01"},
        {
            "app.py": b"x = 1\ny = 3\n",
            "new/notes.md": b"hello",
            "same.txt": b"same\n",
            "img.bin": b"\x00\x02",
            "__pycache__/app.cpython-311.pyc": b"\x00bytecode",
        },
    )
    by = {f.path: f for f in d.files}
    assert d.changed == 4 and sorted(by) == ["app.py", "gone.txt", "img.bin", "new/notes.md"] and not d.truncated
    assert by["app.py"].status == "modified" and "-y = 2\n+y = 3\n" in (by["app.py"].diff or "")
    assert by["app.py"].diff.startswith("--- a/app.py\n+++ b/app.py\n")  # type: ignore[union-attr]
    assert by["gone.txt"].status == "deleted" and "+++ /dev/null" in (by["gone.txt"].diff or "")
    assert by["new/notes.md"].status == "added" and "+hello\n\\ No newline at end of file" in (
        by["new/notes.md"].diff or ""
    )
    assert by["img.bin"].binary and by["img.bin"].diff is None and "binary" in (by["img.bin"].note or "")


def test_a_mode_change_is_named(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "run.sh").write_text("echo hi\n")
    os.chmod(tmp_path / "b" / "run.sh", 0o755)
    d = workspace_diff(snapshot_tree(tmp_path / "a"), snapshot_tree(tmp_path / "b"))
    (f,) = d.files
    assert f.status == "mode" and f.diff is None and "rwxr-xr-x" in (f.note or "")


def test_file_count_and_diff_size_are_capped_and_say_so(tmp_path: Path) -> None:
    many = {f"f{i:03}.txt": f"line {i}\n".encode() for i in range(MAX_FILES + 7)}
    d = diff_of(tmp_path / "many", {}, many)
    assert d.changed == MAX_FILES + 7 and len(d.files) == MAX_FILES and d.truncated
    assert f"{MAX_FILES + 7} files changed" in (d.note or "")
    big = {f"big{i}.txt": "".join(f"{i} row {n}\n" for n in range(3000)).encode() for i in range(8)}
    d = diff_of(tmp_path / "big", {}, big)
    assert all(len(f.diff or "") <= MAX_FILE_DIFF_CHARS for f in d.files)
    assert "diff cut at" in (d.files[0].note or "")
    assert sum(len(f.diff or "") for f in d.files) <= MAX_DIFF_CHARS and d.truncated
    assert any("passed" in (f.note or "") for f in d.files)


@needs_bwrap
def test_a_scripted_episode_records_the_files_it_changed(tmp_path: Path) -> None:
    """The expert changes server.py through a bash script (no create/str_replace): the submit info has the diff."""
    env = CodingEnv(task="example-kv-delete")
    try:
        env.reset(seed=0)
        info: dict = {}
        for _ in range(10):
            _, _, term, trunc, info = env.step(env.expert_action())
            if term or trunc:
                break
        wd = info["workspace_diff"]
        assert info["grade"]["reward"] == 1.0 and wd["changed"] == 1 and not wd["truncated"]
        (f,) = wd["files"]
        assert f["path"] == "server.py" and f["status"] == "modified"
        lines = f["diff"].splitlines()
        assert "+    def do_DELETE(self) -> None:" in lines
        assert not [
            x for x in lines if x.startswith("-") and not x.startswith("---")
        ]  # a method added, nothing removed
        env.reset(seed=0)
        _, _, _, _, info = env.step("submit[]")  # nothing changed this episode
        assert info["workspace_diff"] == {"changed": 0, "files": [], "truncated": False, "note": None}
    finally:
        env.close()


@needs_bwrap
def test_the_trajectory_keeps_the_diff(tmp_path: Path) -> None:
    out = tmp_path / "run"
    res = subprocess.run(
        [sys.executable, "-m", "agents.run", "env=coding", "brain=scripted", "episodes=1", f"out={out}"],
        capture_output=True, text=True, cwd=ROOT, timeout=900,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    (rec,) = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    last = rec["steps"][-1]
    wd = last["info"]["workspace_diff"]
    assert last["action"] == "submit[]" and rec["outcome"]["success"]
    assert wd["changed"] >= 1 and all(f["diff"] and f["diff"].startswith("---") for f in wd["files"])
