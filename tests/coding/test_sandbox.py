"""The shared sandbox behaviour, through real bubblewrap sandboxes (Docker shares the code paths
for files, snapshots and output capping), plus the local backend and the factory."""

from __future__ import annotations

import logging
import os
import shutil
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from envs.coding.sandbox import (
    ExecResult,
    Limits,
    PathEscapeError,
    SandboxError,
    available_backends,
    make_sandbox,
    unavailable_reason,
)
from envs.coding.sandbox.base import _CappedBuffer
from envs.coding.sandbox.cgroup import cgroup_unavailable_reason

pytestmark = pytest.mark.timeout(120)


# -- factory and models ------------------------------------------------------------------------
def test_factory_names_and_errors() -> None:
    with pytest.raises(ValueError, match="unknown sandbox backend"):
        make_sandbox("chroot")
    with pytest.raises(ValidationError):
        Limits(cpu_seconds=0)
    with pytest.raises(ValidationError):
        Limits(memory=1)  # type: ignore[call-arg]  # extra fields are refused
    assert unavailable_reason("local") is None
    assert "local" not in available_backends() and "local" in available_backends(include_local=True)


def test_capped_buffer_keeps_head_and_tail() -> None:
    b = _CappedBuffer(10)
    for chunk in (b"0123", b"456789", b"abcdefghij", b"KLMNO"):
        b.feed(chunk)
    assert b.total == 25 and b.truncated
    text = b.text()
    assert text.startswith("01234") and text.endswith("KLMNO")
    assert "[... output truncated: 15 of 25 bytes cut ...]" in text
    small = _CappedBuffer(10)
    small.feed(b"short")
    assert small.text() == "short" and not small.truncated


# -- exec ----------------------------------------------------------------------------------------
def test_exec_basics(bwrap_sb) -> None:
    res = bwrap_sb.exec("echo out; echo err >&2; exit 3")
    assert isinstance(res, ExecResult)
    assert (res.exit_code, res.stdout, res.stderr, res.truncated) == (3, "out\n", "err\n", False)
    who = bwrap_sb.exec("id -u; pwd; echo $HOME; echo $GREETING; grep CapEff /proc/self/status", env={"GREETING": "hi"})
    uid, cwd, home, greeting, caps = who.stdout.splitlines()
    assert (uid, cwd, home, greeting) == ("1000", "/workspace", "/home/user", "hi")
    assert caps.split()[1] == "0000000000000000"  # no capabilities at all
    assert bwrap_sb.exec("grep NoNewPrivs /proc/self/status").stdout.split()[1] == "1"


def test_processes_persist_between_execs(bwrap_sb) -> None:
    """A service started by one exec answers the next one, on the sandbox's own loopback."""
    bwrap_sb.write_file("index.html", "served\n")
    bwrap_sb.exec("nohup python3 -m http.server 8765 --bind 127.0.0.1 >server.log 2>&1 &")
    res = bwrap_sb.exec(
        "python3 - <<'EOF'\n"
        "import time, urllib.request\n"
        "for _ in range(100):\n"
        "    try:\n"
        "        print(urllib.request.urlopen('http://127.0.0.1:8765/index.html').read().decode(), end=''); break\n"
        "    except OSError: time.sleep(0.05)\n"
        "EOF",
        timeout=20,
    )
    assert res.stdout == "served\n", res.stderr


def test_closed_sandbox_refuses_and_close_is_idempotent() -> None:
    sb = make_sandbox("bwrap") if unavailable_reason("bwrap") is None else pytest.skip("no bwrap")
    ws = sb.workspace
    sb.close()
    sb.close()
    assert not ws.exists()  # a workspace the sandbox made is removed
    with pytest.raises(SandboxError, match="closed"):
        sb.exec("true")


@pytest.fixture
def reachable_dir() -> Iterator[Path]:
    """A host directory bwrap's unprivileged user can reach (pytest's tmp_path sits under a 0700 dir)."""
    d = Path(tempfile.mkdtemp(prefix="agentsim-test-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_caller_workspace_is_kept_and_given_back(reachable_dir: Path) -> None:
    if unavailable_reason("bwrap"):
        pytest.skip(unavailable_reason("bwrap"))
    tmp_path = reachable_dir
    (tmp_path / "pre.txt").write_text("from the host\n")
    with make_sandbox("bwrap", workspace=tmp_path) as sb:
        assert sb.exec("cat pre.txt && echo more >> pre.txt && mkdir made && touch made/new").exit_code == 0
        assert os.stat(tmp_path / "made").st_uid != 0  # owned by the sandbox's host uid while it runs
    assert (tmp_path / "pre.txt").read_text() == "from the host\nmore\n"
    for p in (tmp_path, tmp_path / "made", tmp_path / "made" / "new"):
        assert os.stat(p).st_uid == os.getuid()  # handed back


def test_unreachable_workspace_is_refused_with_the_reason(tmp_path: Path) -> None:
    if unavailable_reason("bwrap"):
        pytest.skip(unavailable_reason("bwrap"))
    with pytest.raises(SandboxError, match="not reachable by the sandbox's unprivileged user"):
        make_sandbox("bwrap", workspace=tmp_path / "ws")


def test_ro_binds(reachable_dir: Path) -> None:
    if unavailable_reason("bwrap"):
        pytest.skip(unavailable_reason("bwrap"))
    reachable_dir.chmod(0o755)
    cache = reachable_dir / "venv"
    cache.mkdir()
    (cache / "lib.txt").write_text("prepared\n")
    with make_sandbox("bwrap", ro_binds={str(cache): "/opt/venv"}) as sb:
        assert sb.exec("cat /opt/venv/lib.txt").stdout == "prepared\n"
        assert sb.exec("touch /opt/venv/x").exit_code != 0
    assert not (cache / "x").exists()
    sb = make_sandbox("bwrap", ro_binds={"/root": "/opt/root"}, start=False)
    with pytest.raises(SandboxError, match="not reachable"):
        sb.start()
    assert sb.closed and not sb.workspace.exists()  # a failed start cleans up after itself


def test_eight_sandboxes_at_once() -> None:
    if unavailable_reason("bwrap"):
        pytest.skip(unavailable_reason("bwrap"))
    results: list[str] = []

    def one(i: int) -> None:
        with make_sandbox("bwrap") as sb:
            sb.write_file("i.txt", str(i))
            results.append(sb.exec("cat i.txt; hostname").stdout)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == sorted(f"{i}sandbox\n" for i in range(8))


def test_sandbox_wide_memory_cgroup() -> None:
    """rlimits bound one process; the cgroup bounds the sum (4 x 100 MiB against 256 MiB)."""
    if unavailable_reason("bwrap") or cgroup_unavailable_reason():
        pytest.skip(unavailable_reason("bwrap") or cgroup_unavailable_reason())
    with make_sandbox("bwrap", limits=Limits(memory_bytes=256 * 1024**2)) as sb:
        assert sb.cgroup is not None
        res = sb.exec(
            "for i in 1 2 3 4; do python3 -c \"b=b'x'*(100*2**20); import time; time.sleep(1); print('ALIVE')\" & done; wait",
            timeout=60,
        )
        stats = sb.cgroup.stats()
    assert res.stdout.count("ALIVE") < 4
    assert stats["memory_peak_bytes"] <= 256 * 1024**2 and stats.get("oom_kills", 1) >= 1


# -- files ---------------------------------------------------------------------------------------
def test_files_round_trip_with_the_sandbox(bwrap_sb) -> None:
    bwrap_sb.write_file("src/app.py", "print('v1')\n")
    bwrap_sb.write_file("/workspace/src/other.txt", b"bytes")
    assert bwrap_sb.exec("python3 src/app.py && cat src/other.txt").stdout == "v1\nbytes"
    assert bwrap_sb.exec("echo edited >> src/app.py && mkdir -p out && echo made > out/f").exit_code == 0
    assert bwrap_sb.read_file("src/app.py") == b"print('v1')\nedited\n"
    assert bwrap_sb.read_file("out/f") == b"made\n"
    with pytest.raises(FileNotFoundError):
        bwrap_sb.read_file("missing.txt")
    with pytest.raises(IsADirectoryError):
        bwrap_sb.read_file("src")
    bwrap_sb.exec("mkfifo pipe")
    with pytest.raises(PermissionError):
        bwrap_sb.read_file("pipe")


def test_path_rules_without_a_sandbox(tmp_path: Path) -> None:
    from envs.coding.sandbox import paths

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f.txt").write_text("x")
    os.symlink("f.txt", tmp_path / "a" / "rel")
    os.symlink("/workspace/a/f.txt", tmp_path / "abs")
    os.symlink("loop", tmp_path / "loop")
    assert paths.read_file(tmp_path, "a/../a/f.txt") == b"x"
    assert paths.read_file(tmp_path, "a/rel") == b"x"
    assert paths.read_file(tmp_path, "abs") == b"x"
    with pytest.raises(OSError, match="symbolic links"):
        paths.read_file(tmp_path, "loop")
    for bad in ("..", "a/../../x", "/workspace/../etc/passwd", "/workspacefoo/x", "/etc/passwd"):
        with pytest.raises(PathEscapeError):
            paths.read_file(tmp_path, bad)
    paths.write_file(tmp_path, "new/deep/file.txt", b"y")
    assert (tmp_path / "new" / "deep" / "file.txt").read_bytes() == b"y"
    paths.write_file(tmp_path, "a/rel", b"through an inside link")
    assert (tmp_path / "a" / "f.txt").read_bytes() == b"through an inside link"
    assert stat.S_ISLNK(os.lstat(tmp_path / "a" / "rel").st_mode)


# -- snapshot / restore -----------------------------------------------------------------------------
def test_snapshot_restore(bwrap_sb) -> None:
    bwrap_sb.write_file("app.py", "v1\n")
    bwrap_sb.exec("mkdir -p data && echo 1 > data/db && ln -s app.py link && chmod 755 app.py")
    snap = bwrap_sb.snapshot()
    assert snap.files >= 4
    bwrap_sb.exec("echo v2 > app.py; rm -r data; echo junk > new.txt; mkdir -p extra/deep")
    bwrap_sb.restore(snap)
    listing = bwrap_sb.exec("ls -A; cat app.py data/db; readlink link; stat -c %a app.py; id -u").stdout.split()
    assert listing == ["app.py", "data", "link", "v1", "1", "app.py", "755", "1000"]
    # the restored files belong to the sandbox user again: it can change them
    assert bwrap_sb.exec("echo v3 > app.py && rm -r data").exit_code == 0
    bwrap_sb.restore(snap)  # restorable any number of times
    assert bwrap_sb.read_file("app.py") == b"v1\n"


def test_restore_does_not_follow_a_swapped_in_link(bwrap_sb, reachable_dir: Path) -> None:
    """The sandbox replaces a snapshotted directory by a link to a host dir: restore must not write there."""
    bwrap_sb.exec("mkdir -p data && echo 1 > data/db")
    snap = bwrap_sb.snapshot()
    bwrap_sb.exec(f"rm -r data && ln -s {reachable_dir} data && ln -s / rootlink")
    bwrap_sb.restore(snap)
    assert list(reachable_dir.iterdir()) == []
    assert bwrap_sb.exec("test -d data && ! test -L data && cat data/db && ! test -e rootlink").stdout == "1\n"


# -- local backend ---------------------------------------------------------------------------------
def test_local_backend_needs_explicit_opt_in(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(SandboxError, match="allow_unsafe"):
        make_sandbox("local")
    with caplog.at_level(logging.WARNING):
        sb = make_sandbox("local", allow_unsafe=True)
    assert "no isolation" in caplog.text
    try:
        res = sb.exec("pwd; echo $AGENTSIM_FAKE_API_KEY", env={})
        assert res.stdout.splitlines()[0] == str(sb.workspace)
        sb.write_file("x.txt", "local")
        assert sb.exec("cat x.txt").stdout == "local"
        assert sb.exec("sleep 5", timeout=0.5).timed_out
        marker = "1000.31337"
        sb.exec(f"sleep {marker} >/dev/null 2>&1 &")
    finally:
        sb.close()
    from tests.coding.test_security import _host_pids_with

    assert _host_pids_with(marker) == []  # its background jobs die at close (setsid ones would not)
