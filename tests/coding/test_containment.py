"""Bounded host cost and nothing left behind (issue 43): capped file tools and snapshots, a CPU share
per sandbox, reset after a fork bomb, crash leftovers swept, bad files as clear errors."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from envs.coding.env import CodingEnv
from envs.coding.sandbox import (
    BackendUnavailableError,
    Limits,
    SnapshotTooLargeError,
    leftovers,
    make_sandbox,
    unavailable_reason,
)
from envs.coding.sandbox.cgroup import (
    PARENT,
    SANDBOX_CPU_SHARES,
    SANDBOXES_CPU_SHARES,
    V1_ROOT,
    cpu_unavailable_reason,
)
from envs.coding.tools import EDIT_BYTES, VIEW_BYTES

REASON = unavailable_reason("bwrap")
pytestmark = [
    pytest.mark.skipif(REASON is not None, reason=f"bwrap backend unavailable: {REASON}"),
    pytest.mark.timeout(300),
]
ROOT = Path(__file__).resolve().parents[2]
GIB = 1024**3


@pytest.fixture(scope="module")
def kv() -> Iterator[CodingEnv]:
    env = CodingEnv(task="example-kv-delete")
    yield env
    env.close()


def test_file_tools_read_at_most_their_cap_of_a_sparse_gib(kv: CodingEnv) -> None:
    kv.reset(seed=0)
    kv.step("bash[truncate -s 1G big.bin && printf 'line one\\nline two\\n' | dd of=big.bin conv=notrunc 2>/dev/null]")
    obs, _, _, _, info = kv.step("view[big.bin]")
    assert "error" not in info
    assert f"{GIB:,} bytes; only its first {VIEW_BYTES:,} bytes are read" in obs and "line one" in obs
    block = "str_replace[big.bin]\n<<<<<<< SEARCH\nline one\n=======\nline 1\n>>>>>>> REPLACE"
    _, _, _, _, info = kv.step(block)
    assert f"str_replace edits files up to {EDIT_BYTES:,} bytes" in info["error"]
    snap = kv.sandbox.snapshot()  # the holes cost nothing
    assert snap.nbytes < 1024 * 1024
    kv.step("bash[rm big.bin && echo changed > server.py]")
    kv.sandbox.restore(snap)  # the sparse file comes back sparse, with its data
    assert os.stat(kv.sandbox.workspace / "big.bin").st_size == GIB
    assert os.stat(kv.sandbox.workspace / "big.bin").st_blocks * 512 < 1024 * 1024
    assert kv.sandbox.read_file("big.bin", 18) == b"line one\nline two\n"
    assert b"ThreadingHTTPServer" in kv.sandbox.read_file("server.py")


def test_a_dense_file_over_the_snapshot_cap_is_refused_with_the_cap_named() -> None:
    with make_sandbox("bwrap", limits=Limits(snapshot_bytes=1024 * 1024)) as sb:
        sb.exec("head -c 2000000 /dev/urandom > dense.bin")
        with pytest.raises(SnapshotTooLargeError, match=r"more than 1,048,576 bytes .*Limits.snapshot_bytes"):
            sb.snapshot()


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        ("mkfifo pipe", "a FIFO"),
        ("python3 -c \"import socket; socket.socket(socket.AF_UNIX).bind('pipe')\"", "a socket"),
    ],
)
def test_fifo_and_socket_are_clear_errors_in_every_file_tool(kv: CodingEnv, make: str, kind: str) -> None:
    kv.reset(seed=0)
    kv.step(f"bash[{make}]")
    for action in (
        "view[pipe]",
        "create[pipe]\nx\n",
        "str_replace[pipe]\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE",
    ):
        obs, reward, done, trunc, info = kv.step(action)  # never an exception out of step
        assert f"'/workspace/pipe' is {kind}, not a regular file" in info["error"], action
        assert (reward, done, trunc) == (0.0, False, False)


def test_fork_bomb_then_reset_leaves_no_process_and_the_next_action_works(kv: CodingEnv) -> None:
    kv.reset(seed=0)
    kv.step("bash[nohup sh -c 'f() { while :; do f & sleep 0.1; done; }; f' >/dev/null 2>&1 & sleep 1; true]")
    assert len(kv.sandbox.processes()) > 10  # the bomb is running at the process cap
    kv.reset(seed=0)
    sb = kv.sandbox
    assert len(sb.processes()) == 2  # the sandbox's init and its lifeline, nothing of the agent's
    obs, _, _, _, info = kv.step("bash[echo alive && ls /tmp | wc -l]")
    assert "alive\n0" in obs and "error" not in info


def test_each_sandbox_gets_a_cpu_share_or_the_nice_fallback() -> None:
    with make_sandbox("bwrap") as sb:
        cg = getattr(sb, "cgroup", None)
        if cpu_unavailable_reason() is None and cg is not None:
            assert cg.cpu is not None and (cg.cpu / "cpu.shares").read_text().strip() == str(SANDBOX_CPU_SHARES)
            pids = {int(p) for p in (cg.cpu / "cgroup.procs").read_text().split()}
            assert set(sb.processes()) <= pids
            assert (V1_ROOT / "cpu" / PARENT / "cpu.shares").read_text().strip() == str(SANDBOXES_CPU_SHARES)
    with make_sandbox("bwrap", use_cgroup=False) as sb:  # the fallback: nice 19 and the autogroup's nice
        res = sb.exec("nice; cat /proc/self/autogroup")
        assert res.stdout.split()[0] == "19"
        if Path("/proc/self/autogroup").exists():
            assert "nice 19" in res.stdout


def test_an_unavailable_backend_is_a_clear_typed_error() -> None:
    if unavailable_reason("docker") is None:
        pytest.skip("docker runs here")
    env = CodingEnv(task="example-kv-delete", backend="docker")
    with pytest.raises(BackendUnavailableError, match="the docker backend is unavailable on this machine: .*bwrap"):
        env.reset(seed=0)
    env.close()


def test_private_tagged_folders_of_dead_owners_are_swept(tmp_path: Path) -> None:
    mine = leftovers.private_dir("probe")
    assert mine.stat().st_mode & 0o777 == 0o700 and f"-{os.getpid()}-" in mine.name
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    gone = leftovers.temp_root() / f"agentsim-probe-{pid}-abc123"
    gone.mkdir()
    (gone / "secret").write_text("x")
    try:
        assert gone in leftovers.stale_dirs() and mine not in leftovers.stale_dirs()
        leftovers.sweep()
        assert not gone.exists() and mine.exists()
    finally:
        mine.rmdir()


CRASHING = """
import sys, time
from envs.coding.env import CodingEnv, ORACLE_ACTION
env = CodingEnv(task="example-kv-delete")
env.reset(seed=0)
env.step("bash[sleep 600 &]")
print("ready", flush=True)
time.sleep(600)
"""


def _leftovers_of(pid: int) -> dict[str, list[str]]:
    tag = f"-{pid}-"
    folders = [p.name for p in leftovers.temp_root().iterdir() if p.name.startswith("agentsim-") and tag in p.name]
    groups = [
        f"{c}/{d.name}"
        for c in ("memory", "pids", "cpu")
        if (V1_ROOT / c / PARENT).is_dir()
        for d in (V1_ROOT / c / PARENT).iterdir()
        if d.name.startswith(f"{pid}-")
    ]
    disks = [d.name for d in Path("/var/tmp/agentsim-disks").glob(f"{pid}-*")]
    return {"folders": folders, "cgroups": groups, "disks": disks}


def test_kill_9_leaves_only_private_leftovers_that_the_next_start_sweeps() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", CRASHING],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.stdout is not None
    try:
        assert proc.stdout.readline().strip() == "ready"
    finally:
        proc.kill()
        proc.wait()
    left = _leftovers_of(proc.pid)
    assert left["folders"], left  # a crash does leave things (the sweep below is what removes them)
    for name in left["folders"]:
        assert (leftovers.temp_root() / name).stat().st_mode & 0o777 == 0o700, name
    leftovers.sweep()
    assert _leftovers_of(proc.pid) == {"folders": [], "cgroups": [], "disks": []}
