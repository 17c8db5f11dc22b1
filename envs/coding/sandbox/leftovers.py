"""What a crashed process leaves behind, made private and swept at the next start (issue 43).

Every host folder a sandbox makes (its workspace copy, the stash the oracle runs from, the
verifier's folder with the hidden tests and the report) is created here: mode 0700, named
`agentsim-<kind>-<owner pid>-<random>` under the system temp folder. Cgroups (`cgroup.py`) and
disk images (`disk.py`) carry the same `<owner pid>-` tag. A process killed with SIGKILL cannot
clean up, so the first sandbox a process starts calls `sweep_once()`, which removes every tagged
leftover whose owner is dead: the loop-mounted images first (their mounts may sit over a
workspace folder), then the cgroups, then the folders. A leftover of a live process is never
touched, so concurrent runs on one machine are safe.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
from functools import cache
from pathlib import Path

log = logging.getLogger(__name__)

PREFIX = "agentsim-"
# agentsim-<kind>-<pid>-<random>: what `private_dir` makes (kind: letters only)
_TAGGED = re.compile(rf"^{PREFIX}([a-z]+)-(\d+)-[A-Za-z0-9_]+$")


def alive(pid: int) -> bool:
    """Whether a process with this pid exists (zombies included: their owner has not been reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def tag_owner(name: str) -> int | None:
    """The owner pid in a tagged name (`agentsim-<kind>-<pid>-...` or `<pid>-...`), else None."""
    m = _TAGGED.match(name)
    if m is not None:
        return int(m.group(2))
    head, sep, _ = name.partition("-")
    return int(head) if sep and head.isdigit() else None


def temp_root() -> Path:
    return Path(tempfile.gettempdir())


def private_dir(kind: str, owner: tuple[int, int] | None = None) -> Path:
    """A new folder, mode 0700, tagged with this process's pid (and given to `owner` uid/gid if set)."""
    if not kind.isalpha():
        raise ValueError(f"kind must be letters only, got {kind!r}")
    path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-{os.getpid()}-", dir=temp_root()))
    path.chmod(0o700)
    if owner is not None:
        os.chown(path, *owner)
    return path


def stale_dirs(root: Path | None = None) -> list[Path]:
    """Tagged folders under `root` (default the temp folder) whose owner process is dead."""
    root = root or temp_root()
    found = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    for e in entries:
        m = _TAGGED.match(e.name)
        if m is None or not e.is_dir(follow_symlinks=False):
            continue
        pid = int(m.group(2))
        if pid != os.getpid() and not alive(pid):
            found.append(Path(e.path))
    return found


def sweep(root: Path | None = None) -> dict[str, int]:
    """Remove every leftover of dead owners; counts by kind (disks, cgroups, folders)."""
    from envs.coding.sandbox.cgroup import reap_stale_cgroups
    from envs.coding.sandbox.disk import reap_stale

    counts = {"disks": reap_stale(), "cgroups": reap_stale_cgroups(), "folders": 0}
    for d in stale_dirs(root):
        shutil.rmtree(d, ignore_errors=True)
        counts["folders"] += not d.exists()
    if any(counts.values()):
        log.warning("swept leftovers of dead processes: %s", counts)
    return counts


@cache
def sweep_once() -> dict[str, int]:
    """`sweep()` the first time a process starts a sandbox."""
    return sweep()
