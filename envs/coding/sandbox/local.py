"""The local backend: the same interface with no isolation at all, for debugging only.

It exists so a task can be tried without namespaces or Docker; it refuses to start unless asked
for with `allow_unsafe=True`, and says so in the log. Limits still apply (setrlimit per exec, the
wall timeout, the output cap); close() kills the process groups its execs started, but a
process that left its group (setsid) is out of reach: nothing contains it. No disk quota either
(only RLIMIT_FSIZE per file), and the coding env refuses it (see `envs/coding/env.py`).
"""

from __future__ import annotations

import logging
import os
import signal
import time
from pathlib import Path

from envs.coding.sandbox.base import ExecResult, Limits, Sandbox, SandboxError, run_capped

log = logging.getLogger(__name__)


class LocalSandbox(Sandbox):
    """Runs commands directly on the host, in the workspace directory."""

    backend = "local"

    def __init__(
        self,
        workspace: str | Path | None = None,
        limits: Limits | None = None,
        network: bool = False,
        allow_unsafe: bool = False,
    ) -> None:
        if not allow_unsafe:
            raise SandboxError("the local backend has no isolation; pass allow_unsafe=True to use it anyway")
        super().__init__(workspace, limits, network, disk_quota="off")
        self._groups: set[int] = set()

    def _start(self) -> None:
        log.warning(
            "local sandbox: commands run on the host with no isolation (workspace %s, network not blocked)",
            self.workspace,
        )

    def exec(self, cmd: str, timeout: float | None = None, env: dict[str, str] | None = None) -> ExecResult:
        """Run `cmd` under prlimit in the workspace; the host environment is not passed on."""
        self._check_running()
        envs = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.workspace), "LANG": "C.UTF-8"}
        argv = ["prlimit", *self.limits.prlimit_args(), "--", "/bin/sh", "-c", cmd]
        res = run_capped(
            argv,
            timeout_s=timeout if timeout is not None else self.limits.timeout_s,
            limits=self.limits,
            cwd=self.workspace,
            env={**envs, **(env or {})},
            on_spawn=self._groups.add,
        )
        return res

    def _shutdown(self) -> None:
        """Kill the groups of processes our execs started (background jobs in them included)."""
        for pgid in self._groups:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 2.0  # SIGKILL is asynchronous: return once they are gone
        while self._groups and _live_in_groups(self._groups) and time.monotonic() < deadline:
            time.sleep(0.005)


def _live_in_groups(groups: set[int]) -> bool:
    """Whether a live (non-zombie) host process belongs to one of the process groups."""
    for e in os.listdir("/proc"):
        if not e.isdigit():
            continue
        try:
            with open(f"/proc/{e}/stat", "rb") as f:
                fields = f.read().rpartition(b")")[2].split()
        except OSError:
            continue
        if fields and fields[0] not in (b"Z", b"X") and int(fields[2]) in groups:
            return True
    return False
