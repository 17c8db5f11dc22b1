"""The shared sandbox behaviour, through real bubblewrap sandboxes (Docker shares the code paths
for files, snapshots and output capping), plus the local backend and the factory."""

from __future__ import annotations

import io
import logging
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from envs.coding.sandbox import (
    ExecResult,
    Limits,
    NotRegularFileError,
    PathEscapeError,
    SandboxError,
    available_backends,
    make_sandbox,
    unavailable_reason,
)
from envs.coding.sandbox.base import _CappedBuffer
from envs.coding.sandbox.cgroup import cgroup_unavailable_reason
from envs.coding.sandbox.disk import loop_unavailable_reason, reap_stale

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


def test_ro_binds(backend: str, reachable_dir: Path) -> None:
    """Every isolating backend: a host folder visible read-only where asked (the env's deps cache and
    /grader stash need it), changes on the host visible live, writes refused."""
    reachable_dir.chmod(0o755)
    cache, stash = reachable_dir / "venv", reachable_dir / "stash"
    cache.mkdir()
    stash.mkdir()
    (cache / "lib.txt").write_text("prepared\n")
    with make_sandbox(backend, ro_binds={str(cache): "/opt/venv", str(stash): str(stash)}) as sb:
        assert sb.exec("cat /opt/venv/lib.txt").stdout == "prepared\n"
        (stash / "later.txt").write_text("added on the host\n")  # how the grader's stash is filled
        assert sb.exec(f"cat {stash}/later.txt").stdout == "added on the host\n"
        for target in ("/opt/venv/x", f"{stash}/x"):
            assert sb.exec(f"touch {target}").exit_code != 0
    assert not (cache / "x").exists() and not (stash / "x").exists()
    if backend != "bwrap":
        return
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


# -- disk quota (disk.py) ---------------------------------------------------------------------------
def test_disk_quota_modes_and_usage(reachable_dir: Path) -> None:
    """auto = the kernel way here (loop) when it works; the usage is the filesystem's own count."""
    if unavailable_reason("bwrap"):
        pytest.skip(unavailable_reason("bwrap"))
    (reachable_dir / "pre.txt").write_text("from the host\n")
    lim = Limits(disk_bytes=16 * 1024**2, disk_files=100)
    with make_sandbox("bwrap", workspace=reachable_dir, limits=lim) as sb:
        assert sb.disk is not None
        if loop_unavailable_reason() is None:
            assert sb.disk.mode == "loop"
            df = sb.exec("df -P /workspace | tail -1").stdout.split()
            assert int(df[1]) * 1024 < 2 * lim.disk_bytes  # the workspace is its own small filesystem
        else:
            assert sb.disk.mode == "watchdog"
        assert sb.exec("cat pre.txt").stdout == "from the host\n"  # the files came along
        sb.exec("mkdir d && head -c 1M /dev/zero > d/one")
        usage = sb.disk_usage()
        assert usage is not None and usage.files == 3 and 1024**2 <= usage.nbytes < 2 * 1024**2
        assert not usage.full and "Limits.disk_bytes" in usage.describe()
    # after close: the files are back in the caller's folder, which is a plain folder again
    assert (reachable_dir / "d" / "one").stat().st_size == 1024**2
    assert not os.path.ismount(reachable_dir)
    with make_sandbox("bwrap", limits=lim, disk_quota="off") as sb:
        assert sb.disk is None and sb.disk_usage() is None
    with pytest.raises(ValueError, match="unknown disk_quota"):
        make_sandbox("bwrap", disk_quota="xfs")


def test_workspace_bigger_than_its_quota_is_refused(reachable_dir: Path) -> None:
    if unavailable_reason("bwrap") or loop_unavailable_reason():
        pytest.skip(unavailable_reason("bwrap") or loop_unavailable_reason())
    (reachable_dir / "big.bin").write_bytes(os.urandom(3 * 1024**2))
    with pytest.raises(SandboxError, match="already holds .* more than the disk quota.*Limits.disk_bytes"):
        make_sandbox("bwrap", workspace=reachable_dir, limits=Limits(disk_bytes=2 * 1024**2))
    assert (reachable_dir / "big.bin").stat().st_size == 3 * 1024**2 and not os.path.ismount(reachable_dir)


def test_disks_of_a_dead_process_are_reaped(reachable_dir: Path) -> None:
    """A process that dies holding a mounted workspace disk: the next one unmounts and deletes it."""
    if loop_unavailable_reason():
        pytest.skip(loop_unavailable_reason())
    ws = reachable_dir / "ws"
    ws.mkdir()
    code = (
        "import os, sys; from pathlib import Path; from envs.coding.sandbox.disk import LoopDisk\n"
        f"d = LoopDisk(Path({str(ws)!r}), 8 * 2**20, 64); d.attach(); print(d.dir, flush=True); os._exit(0)"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=True)
    left = Path(out.stdout.strip())
    assert left.is_dir() and os.path.ismount(ws)
    assert reap_stale() >= 1
    assert not left.exists() and not os.path.ismount(ws)


def test_docker_plan_without_an_engine(reachable_dir: Path) -> None:
    """What the Docker backend would ask the engine for (checked here even where no engine runs):
    the host-userland image's tar, read-only binds of /usr and /etc with the secrets masked, and
    the ro_binds read-only at their paths."""
    import tarfile

    pytest.importorskip("docker")
    from envs.coding.sandbox.docker_backend import HIDDEN_FILES, DockerSandbox, host_mounts, host_rootfs_tar

    data, tag = host_rootfs_tar()
    assert (data, tag) == host_rootfs_tar()  # deterministic: imported once per engine
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert all(not m.isfile() for m in members.values())  # only folders and links: no host file is copied
    assert {"usr", "etc", "workspace", "tmp", "home/user", "sbin"} <= set(members)
    if os.path.islink("/bin"):
        assert members["bin"].issym() and members["bin"].linkname == os.readlink("/bin")
    binds = dict((dest, src) for src, dest in host_mounts())
    assert binds["/usr"] == "/usr" and binds["/etc"] == "/etc"
    for f in HIDDEN_FILES:
        if os.path.isfile(f):  # an empty file only root may read: `cat /etc/shadow` fails inside
            assert os.path.getsize(binds[f]) == 0 and stat.S_IMODE(os.stat(binds[f]).st_mode) == 0
    sb = DockerSandbox(ro_binds={str(reachable_dir): "/grader"})
    try:
        mounts = {m["Target"]: m for m in sb._mounts()}
    finally:
        sb.close()
    assert mounts["/grader"]["Source"] == str(reachable_dir) and mounts["/grader"]["ReadOnly"] is True
    assert mounts["/workspace"]["ReadOnly"] is False and mounts["/usr"]["ReadOnly"] is True
    bad = DockerSandbox(ro_binds={"/nonexistent-agentsim": "/x"})
    try:
        with pytest.raises(SandboxError, match="does not exist"):
            bad._mounts()
    finally:
        bad.close()


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
    with pytest.raises(NotRegularFileError, match="'pipe' is a FIFO, not a regular file"):
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
