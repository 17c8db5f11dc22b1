"""The sandbox contract: limits, exec results, and the `Sandbox` base every backend extends.

A sandbox owns one persistent workspace directory on the host (mounted at `/workspace` inside)
and runs shell commands in it. What is shared by every backend lives here, so it is written and
tested once: file access by workspace-relative path (`paths.py`), snapshot/restore of the
workspace (`snapshot.py`), and the capped, timed reading of a command's output (`run_capped`).
"""

from __future__ import annotations

import logging
import os
import selectors
import shutil
import signal
import subprocess
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import BaseModel, ConfigDict, Field

from envs.coding.sandbox import leftovers, paths
from envs.coding.sandbox.disk import (
    QUOTA_MODES,
    DiskSetupError,
    DiskUsage,
    DiskWatchdog,
    LoopDisk,
    loop_unavailable_reason,
)
from envs.coding.sandbox.snapshot import WorkspaceSnapshot, restore_tree, snapshot_tree

log = logging.getLogger(__name__)

MOUNT_POINT = "/workspace"
# After the command's main process exits, read what is left in the pipes for this long: a
# background job (`server &`) keeps the pipes open forever, and must not hold exec() hostage.
PIPE_GRACE_S = 0.2


class SandboxError(RuntimeError):
    """A sandbox could not be started or used (not: a command that failed inside it)."""


class BackendUnavailableError(SandboxError):
    """The backend asked for cannot run on this machine (the message says why and what does)."""


class Limits(BaseModel):
    """Resource limits, all on by default (most harnesses leave them off; a task may raise them).

    `cpu_seconds`, `memory_bytes` (address space), `file_bytes` are per process (setrlimit);
    `processes` counts every process of the sandbox (bubblewrap: its own user namespace makes
    RLIMIT_NPROC apply per sandbox even when the host runs as root; Docker: pids limit).
    `output_bytes` is what an exec keeps of stdout and of stderr (head and tail, the cut marked);
    a command that writes more than `output_kill_factor` times that is killed, so a flood costs
    bounded time. `timeout_s` is the default wall time of one exec. `disk_bytes` / `disk_files`
    bound the whole workspace (allocated bytes; files + folders + links), see `disk.py`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    cpu_seconds: int = Field(default=60, gt=0)
    memory_bytes: int = Field(default=4 * 1024**3, gt=0)
    processes: int = Field(default=256, gt=1)
    file_bytes: int = Field(default=1024**3, gt=0)
    tmp_bytes: int = Field(default=512 * 1024**2, gt=0)  # size of the private /tmp and HOME (tmpfs, in RAM)
    output_bytes: int = Field(default=64 * 1024, gt=0)
    output_kill_factor: int = Field(default=16, ge=1)
    timeout_s: float = Field(default=120.0, gt=0)
    disk_bytes: int = Field(default=4 * 1024**3, ge=1024**2)  # the workspace's total size
    disk_files: int = Field(default=200_000, ge=16)  # files, folders and links in the workspace
    snapshot_bytes: int = Field(default=128 * 1024**2, gt=0)  # file data one snapshot may hold (holes are free)

    def prlimit_args(self) -> list[str]:
        """`prlimit` options that set these limits (soft = hard, so the sandbox cannot raise them)."""
        return [
            f"--cpu={self.cpu_seconds}",
            f"--as={self.memory_bytes}",
            f"--nproc={self.processes}",
            f"--fsize={self.file_bytes}",
            "--core=0",
        ]


class ExecResult(BaseModel):
    """One command's outcome. `exit_code` follows the shell: 128+N when killed by signal N."""

    model_config = ConfigDict(extra="forbid")

    exit_code: int
    stdout: str
    stderr: str
    truncated: bool = False  # some output was cut (the cut is marked in the text)
    timed_out: bool = False  # killed at the wall timeout
    output_killed: bool = False  # killed for writing more than output_bytes * output_kill_factor
    stdout_bytes: int = 0  # bytes the command wrote, kept or not
    stderr_bytes: int = 0
    duration_s: float = 0.0
    disk_full: bool = False  # the workspace was full / over its disk quota when the command ended
    disk_killed: bool = False  # the disk watchdog killed the sandbox's processes during the command

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


class _CappedBuffer:
    """Keeps the first and last `cap/2` bytes of a stream and counts the rest."""

    def __init__(self, cap: int) -> None:
        self.head_cap = cap - cap // 2
        self.tail_cap = cap // 2
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_len = 0
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data or self.tail_cap == 0:
            return
        self.tail.append(data)
        self.tail_len += len(data)
        while self.tail_len - len(self.tail[0]) >= self.tail_cap:
            self.tail_len -= len(self.tail.popleft())

    @property
    def truncated(self) -> bool:
        return self.total > self.head_cap + self.tail_cap

    def text(self) -> str:
        tail = b"".join(self.tail)
        if not self.truncated:
            return (bytes(self.head) + tail).decode("utf-8", "replace")
        tail = tail[-self.tail_cap :] if self.tail_cap else b""
        cut = self.total - len(self.head) - len(tail)
        marker = f"\n[... output truncated: {cut} of {self.total} bytes cut ...]\n"
        return bytes(self.head).decode("utf-8", "replace") + marker + tail.decode("utf-8", "replace")


def _append(text: str, note: str) -> str:
    sep = "\n" if text and not text.endswith("\n") else ""
    return f"{text}{sep}{note}\n"


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_capped(
    argv: list[str],
    *,
    timeout_s: float,
    limits: Limits,
    on_spawn: Callable[[int], None] | None = None,
    **popen: Any,
) -> ExecResult:
    """Run `argv` in a new session, reading both pipes with caps; kill its group at the wall timeout.

    One selector loop, no threads: the output kept is bounded by `limits.output_bytes` per stream
    whatever the command writes, and the wall clock bounds the call even when background
    processes inherited the pipes.
    """
    t0 = time.monotonic()
    proc = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, **popen
    )
    assert proc.stdout is not None and proc.stderr is not None
    if on_spawn is not None:
        on_spawn(proc.pid)  # its process group id too (new session)
    bufs = {
        proc.stdout.fileno(): _CappedBuffer(limits.output_bytes),
        proc.stderr.fileno(): _CappedBuffer(limits.output_bytes),
    }
    kill_after = limits.output_bytes * limits.output_kill_factor
    deadline = t0 + timeout_s
    timed_out = output_killed = False
    with selectors.DefaultSelector() as sel:
        for fd in bufs:
            os.set_blocking(fd, False)
            sel.register(fd, selectors.EVENT_READ)
        while sel.get_map():
            now = time.monotonic()
            if proc.poll() is not None:
                deadline = min(deadline, now + PIPE_GRACE_S)
            if now >= deadline:
                if proc.returncode is None:
                    timed_out = True
                    _kill_group(proc)
                break
            for key, _ in sel.select(min(deadline - now, 0.05)):
                try:
                    data = os.read(key.fd, 65536)
                except BlockingIOError:
                    continue
                if data:
                    bufs[key.fd].feed(data)
                else:
                    sel.unregister(key.fd)
            if sum(b.total for b in bufs.values()) > kill_after and proc.returncode is None:
                output_killed = True
                _kill_group(proc)
                break
    proc.stdout.close()
    proc.stderr.close()
    code = proc.wait()
    out, err = bufs.values()
    return ExecResult(
        exit_code=128 - code if code < 0 else code,
        stdout=out.text(),
        stderr=err.text(),
        truncated=out.truncated or err.truncated,
        timed_out=timed_out,
        output_killed=output_killed,
        stdout_bytes=out.total,
        stderr_bytes=err.total,
        duration_s=time.monotonic() - t0,
    )


class Sandbox(ABC):
    """One isolated place to run commands, around one persistent workspace.

    Lifecycle: `start()` (also via `with`), any number of `exec` / file ops / `snapshot` /
    `restore`, then `close()`, which kills every process the sandbox started and is idempotent.
    Processes outlive the exec that started them (a service started with `cmd &` keeps running
    for the next exec, as in a terminal), never the sandbox.
    """

    backend: str = "?"

    def __init__(
        self,
        workspace: str | Path | None = None,
        limits: Limits | None = None,
        network: bool = False,
        disk_quota: str = "auto",
    ) -> None:
        """`disk_quota`: how the workspace's total size is bounded: `loop` (a loop-mounted ext4 image,
        the kernel refuses writes past it), `watchdog` (a thread measures it and kills the sandbox's
        processes when it grows past it), `auto` (loop where it works here, else watchdog, logged),
        `off`."""
        if disk_quota not in QUOTA_MODES:
            raise ValueError(f"unknown disk_quota {disk_quota!r}; choose one of {', '.join(QUOTA_MODES)}")
        self.limits = limits or Limits()
        self.network = network
        self.disk_quota = disk_quota
        self.disk: LoopDisk | DiskWatchdog | None = None
        self._disk_released = False
        self._own_workspace = workspace is None
        ws = leftovers.private_dir(self.backend) if workspace is None else Path(workspace)
        ws.mkdir(parents=True, exist_ok=True)
        self.workspace = ws.resolve()
        self.started = False
        self.closed = False

    # -- lifecycle (backends) ------------------------------------------------------------------
    def start(self) -> Sandbox:
        """Bring the sandbox up; returns self. A failed start cleans up after itself and re-raises."""
        if self.closed:
            raise SandboxError(f"{self.backend} sandbox is closed")
        if not self.started:
            leftovers.sweep_once()  # what crashed processes left behind (leftovers.py)
            if self._own_workspace:  # private, whatever was copied into it (copytree copies the source's mode)
                self.workspace.chmod(0o700)
            try:
                self._start()
            except BaseException:
                self.close()
                raise
            self.started = True
        return self

    @abstractmethod
    def _start(self) -> None:
        """Backend part of start()."""

    @abstractmethod
    def exec(self, cmd: str, timeout: float | None = None, env: dict[str, str] | None = None) -> ExecResult:
        """Run `cmd` with `sh -c` in the workspace; never raises for the command's own failure."""

    @abstractmethod
    def _shutdown(self) -> None:
        """Kill everything the sandbox runs (called once by close)."""

    def close(self) -> None:
        """Kill every process of the sandbox; remove the workspace if the sandbox made it."""
        if self.closed:
            return
        self.closed = True
        try:
            self._shutdown()
        finally:
            self._release_disk()
            if self._own_workspace:
                shutil.rmtree(self.workspace, ignore_errors=True)

    def __enter__(self) -> Sandbox:
        return self if self.started else self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # a forgotten sandbox must not leave processes behind
        if getattr(self, "started", False) and not getattr(self, "closed", True):
            try:
                self.close()
            except Exception:  # noqa: BLE001 - interpreter teardown
                pass

    def processes(self) -> list[int]:
        """Pids of the processes running in the sandbox now (empty once closed)."""
        raise NotImplementedError(f"{self.backend} cannot list its processes")

    def kill_all(self) -> None:
        """Kill every process in the sandbox (fork bombs and respawners included) and return only once
        none is left, with the sandbox up again on the same workspace (fresh /tmp and HOME).

        What grading and reset rely on: no process of the agent outlives it."""
        raise NotImplementedError(f"{self.backend} cannot kill all of its processes")

    def run_verifier(
        self,
        argv: list[str],
        *,
        ro_binds: Mapping[str, str],
        rw_binds: Mapping[str, str],
        env: Mapping[str, str],
        cwd: str,
        timeout: float,
    ) -> ExecResult:
        """Run `argv` once in a separate, new sandbox that shares only this sandbox's network (its
        loopback: the service under test) and its workspace (read-only, at /workspace).

        `ro_binds` / `rw_binds`: {host path: path inside}; the rw folders are given to the verifier's
        own uid, which is not the agent's. The environment is exactly `env` (plus nothing of the
        host's). No process of the verifier outlives the call."""
        raise NotImplementedError(f"{self.backend} has no separate verifier sandbox")

    # -- the workspace's disk quota (disk.py) ---------------------------------------------------------
    def _attach_disk(self) -> None:
        """Put the disk quota in place (backends call it before the sandbox first sees the workspace)."""
        mode, lim = self.disk_quota, self.limits
        if mode in ("auto", "loop"):
            reason = loop_unavailable_reason()
            if reason is None:
                disk = LoopDisk(self.workspace, lim.disk_bytes, lim.disk_files)
                try:
                    disk.attach()
                except DiskSetupError as e:
                    raise SandboxError(str(e)) from None
                self.disk = disk
                return
            if mode == "loop":
                raise SandboxError(f"disk_quota='loop' is not possible here: {reason}")
            log.warning("%s sandbox: disk quota by watchdog (no kernel-enforced quota: %s)", self.backend, reason)
            mode = "watchdog"
        if mode == "watchdog":
            watchdog = DiskWatchdog(self.workspace, lim.disk_bytes, lim.disk_files, self._kill_for_disk)
            watchdog.attach()
            self.disk = watchdog

    def _release_disk(self) -> None:
        """Undo `_attach_disk` once; a caller-provided workspace gets its files back."""
        if self.disk is not None and not self._disk_released:
            self._disk_released = True
            self.disk.release(keep_contents=not self._own_workspace)

    def _kill_for_disk(self) -> None:
        """Kill every process the sandbox runs but its own keepers (the disk watchdog's action)."""
        raise NotImplementedError(f"{self.backend} has no disk watchdog")

    def disk_usage(self) -> DiskUsage | None:
        """The workspace's size and file count against its quota (None: no quota)."""
        return None if self.disk is None or self._disk_released else self.disk.usage()

    def _disk_mark(self) -> int:
        return self.disk.kills if isinstance(self.disk, DiskWatchdog) else 0

    def _note_disk(self, res: ExecResult, mark: int) -> ExecResult:
        """After an exec: say in its result (and its stderr) when the workspace is full or was over quota."""
        if self.disk is None or self._disk_released:
            return res
        if isinstance(self.disk, DiskWatchdog):
            usage = self.disk.check()
            killed = self.disk.kills > mark
            if killed:
                usage = self.disk.last_kill or usage
                note = (
                    f"[disk quota exceeded: the workspace grew to {usage.describe()}; every process in the sandbox "
                    "was killed. Delete files to go on]"
                )
            elif usage.over:
                note = f"[disk quota exceeded: the workspace holds {usage.describe()}; delete files to go on]"
            else:
                return res
            # a command during which the watchdog killed for disk failed, even when it finished before the
            # kill landed (a fast disk): the same outcome as ENOSPC under a kernel quota, whatever the timing
            return res.model_copy(
                update={
                    "disk_full": True,
                    "disk_killed": killed,
                    "exit_code": (res.exit_code or 1) if killed else res.exit_code,
                    "stderr": _append(res.stderr, note),
                }
            )
        usage = self.disk.usage()
        if not usage.full:
            return res
        note = (
            f"[disk quota: the workspace is full: {usage.describe()}; writes fail with 'No space left on device' "
            "until files are deleted]"
        )
        return res.model_copy(update={"disk_full": True, "stderr": _append(res.stderr, note)})

    def _check_running(self) -> None:
        if not self.started or self.closed:
            raise SandboxError(f"{self.backend} sandbox is {'closed' if self.closed else 'not started'}")

    # -- workspace (shared) ----------------------------------------------------------------------
    def _owner(self) -> tuple[int, int] | None:
        """Host uid/gid new files must belong to so the sandboxed user can write them (None: leave)."""
        return None

    def owner(self) -> tuple[int, int] | None:
        """The host uid/gid the sandbox's user (and its verifier) runs as: give it a private folder
        (0700) to make that folder reachable by the sandbox and by nobody else on the host."""
        return self._owner()

    def read_file(self, path: str, max_bytes: int | None = None, *, refuse_larger: bool = False) -> bytes:
        """Bytes of a regular file in the workspace; `path` relative or under /workspace, no escape.
        At most `max_bytes` (`refuse_larger`: a bigger file raises `FileTooLargeError` instead)."""
        return paths.read_file(self.workspace, path, max_bytes=max_bytes, refuse_larger=refuse_larger)

    def open_file(self, path: str) -> BinaryIO:
        """A regular file of the workspace opened for reading, to read in chunks (the caller closes it)."""
        return paths.open_file(self.workspace, path)

    def write_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        """Create or replace a file in the workspace (parents made), owned by the sandbox user."""
        paths.write_file(self.workspace, path, data.encode() if isinstance(data, str) else data, mode, self._owner())

    def snapshot(self) -> WorkspaceSnapshot:
        """The workspace's files now, in memory (processes are not part of it); at most
        `Limits.snapshot_bytes` of file data (sparse holes are free), else `SnapshotTooLargeError`."""
        return snapshot_tree(self.workspace, self.limits.snapshot_bytes)

    def restore(self, snap: WorkspaceSnapshot) -> None:
        """Put the workspace back exactly as in `snap` (files added since are removed)."""
        restore_tree(self.workspace, snap, owner=self._owner())
