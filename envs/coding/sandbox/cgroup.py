"""Sandbox-wide memory and process limits with a cgroup, where the host lets us make one.

setrlimit is per process: RLIMIT_AS bounds one process, so 256 processes of 4 GiB each could
still exhaust the host. A cgroup bounds the sum. These machines mount cgroup v1 controllers
(`memory`, `pids`) writable by root, which is what this module drives (the machine is hybrid:
its cgroup2 hierarchy at /sys/fs/cgroup/unified holds only `hugetlb`, so memory and pids cannot
be driven through cgroup2 here). Elsewhere (no write access, or a cgroup2-only host: not
implemented, for want of such a host to test it on) it reports why and the sandbox runs with its
rlimits only (`BwrapSandbox.cgroup` is None). Processes join by writing their own pid into
`cgroup.procs` just before they exec (see `join_argv`), so nothing forks outside the group.

CPU (issue 43): where the v1 `cpu` controller can be driven too, each sandbox also gets a `cpu`
group under `agentsim-sandboxes`, whose `cpu.shares` (`SANDBOXES_CPU_SHARES`) is one busy host
process's weight: all sandboxes together, however many loops they run, weigh as much as one host
process, and each sandbox gets an equal share of that (`SANDBOX_CPU_SHARES` each). (A quarter,
256, starved a service's start past the grader's port wait on a machine loaded to 15.) Where it cannot, the bwrap
backend falls back to `nice` plus the autogroup's nice (`bwrap.py`).

Names are `<owner pid>-<random>`, so `reap_stale_cgroups` (run at a process's first sandbox
start, `leftovers.py`) can remove the groups of processes that died without removing them.
"""

from __future__ import annotations

import logging
import os
import signal
import time
import uuid
from functools import cache
from pathlib import Path

from envs.coding.sandbox.leftovers import alive, tag_owner

log = logging.getLogger(__name__)

V1_ROOT = Path("/sys/fs/cgroup")
PARENT = "agentsim-sandboxes"
CONTROLLERS = ("memory", "pids", "cpu")
SANDBOXES_CPU_SHARES = 1024  # all sandboxes together, as one busy host process (nice 0) weighs
SANDBOX_CPU_SHARES = 1024  # each sandbox within that


@cache
def cgroup_unavailable_reason() -> str | None:
    """None when per-sandbox v1 memory + pids cgroups can be made here, else why not."""
    for ctrl in ("memory", "pids"):
        base = V1_ROOT / ctrl
        if not (base / "cgroup.procs").exists():
            if (V1_ROOT / "cgroup.controllers").exists():
                return f"{V1_ROOT} is cgroup2 only (unified); sandbox cgroups are made with cgroup v1 so far"
            return f"no cgroup v1 {ctrl} controller at {base}"
        try:
            (base / PARENT).mkdir(exist_ok=True)
        except OSError as e:
            return f"cannot create {base / PARENT}: {e}"
    return None


@cache
def cpu_unavailable_reason() -> str | None:
    """None when per-sandbox v1 `cpu` groups (cpu.shares) can be made here, else why not."""
    base = V1_ROOT / "cpu"
    if not (base / "cpu.shares").exists():
        return f"no cgroup v1 cpu controller at {base}"
    try:
        (base / PARENT).mkdir(exist_ok=True)
        (base / PARENT / "cpu.shares").write_text(str(SANDBOXES_CPU_SHARES))
    except OSError as e:
        return f"cannot set up {base / PARENT}: {e}"
    return None


def reap_stale_cgroups() -> int:
    """Remove the sandbox groups of owners that are dead (killing what is still in them); how many."""
    reaped = 0
    for ctrl in CONTROLLERS:
        parent = V1_ROOT / ctrl / PARENT
        if not parent.is_dir():
            continue
        for d in parent.iterdir():
            owner = tag_owner(d.name)
            if not d.is_dir() or owner is None or owner == os.getpid() or alive(owner):
                continue
            _kill_members(d)
            if _rmdir(d):
                reaped += 1
    return reaped


def _kill_members(group: Path) -> None:
    try:
        pids = [int(p) for p in (group / "cgroup.procs").read_text().split()]
    except OSError:
        return
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _rmdir(d: Path, tries: int = 50) -> bool:
    for _ in range(tries):
        try:
            d.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:  # EBUSY while the last tasks finish exiting
            time.sleep(0.01)
    return False


class SandboxCgroup:
    """One memory, one pids and (where possible) one cpu cgroup (v1) for one sandbox; `remove()` once empty."""

    def __init__(self, memory_bytes: int, processes: int, owner_uid: int) -> None:
        name = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self.dirs = [V1_ROOT / "memory" / PARENT / name, V1_ROOT / "pids" / PARENT / name]
        self.cpu: Path | None = None
        if cpu_unavailable_reason() is None:
            self.cpu = V1_ROOT / "cpu" / PARENT / name
            self.dirs.append(self.cpu)
        for d in self.dirs:
            d.mkdir()  # (searchable: the sandbox uid writes its cgroup.procs to join)
        mem, pids = self.dirs[:2]
        if self.cpu is not None:
            (self.cpu / "cpu.shares").write_text(str(SANDBOX_CPU_SHARES))
        (mem / "memory.limit_in_bytes").write_text(str(memory_bytes))
        if (mem / "memory.memsw.limit_in_bytes").exists():
            (mem / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
        (mem / "memory.swappiness").write_text("0")
        (pids / "pids.max").write_text(str(processes))
        # bwrap starts as the sandbox's unprivileged host uid and must be able to join
        for p in self.procs_files:
            os.chown(p, owner_uid, -1)

    @property
    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs]

    def join_argv(self, argv: list[str]) -> list[str]:
        """`argv` prefixed by a shell that moves itself into the cgroups, then execs `argv`."""
        script = 'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n-1)); done; exec "$@"'
        files = self.procs_files
        return ["/bin/sh", "-c", script, "sh", str(len(files)), *files, *argv]

    def stats(self) -> dict[str, int]:
        """Peak memory, OOM kills, processes now / at peak, forks refused (for tests and the bench)."""
        mem, pids = self.dirs[:2]
        out = {
            "memory_peak_bytes": int((mem / "memory.max_usage_in_bytes").read_text()),
            "memory_limit_hits": int((mem / "memory.failcnt").read_text()),
            "processes": int((pids / "pids.current").read_text()),
        }
        if (pids / "pids.peak").exists():
            out["processes_peak"] = int((pids / "pids.peak").read_text())
        for line in (pids / "pids.events").read_text().splitlines():
            key, _, val = line.partition(" ")
            if key == "max":
                out["forks_refused_at_pids_max"] = int(val)
        for line in (mem / "memory.oom_control").read_text().splitlines():
            key, _, val = line.partition(" ")
            if key == "oom_kill":
                out["oom_kills"] = int(val)
        return out

    def processes(self) -> int:
        """Processes in the group now (exited ones leave it once reaped)."""
        try:
            return int((self.dirs[1] / "pids.current").read_text())
        except OSError:
            return 0

    def remove(self) -> None:
        """Delete the groups (they must be empty: the pid namespace is gone by then)."""
        for d in self.dirs:
            if not _rmdir(d):
                log.error("could not remove cgroup %s", d)
