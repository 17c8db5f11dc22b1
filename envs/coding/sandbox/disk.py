"""A bound on the workspace's total size and file count (RLIMIT_FSIZE only bounds one file).

Two ways, picked per sandbox (`disk_quota="auto"`: the first that works here):

* `loop` (the kernel enforces it): the workspace becomes its own ext4 filesystem, a sparse image
  file of about `Limits.disk_bytes` with exactly `Limits.disk_files` inodes, loop-mounted and
  bind-mounted over the workspace's path, so every host-side tool (read_file, snapshot, restore)
  and every backend (bwrap binds the path, Docker bind-mounts it) keeps using the same path. A
  write past the limit fails with ENOSPC in the writer, whoever it is; the host's disk only ever
  holds the image, at most its size. The image starts populated with the workspace's files
  (`mkfs.ext4 -d`), and at release the files are copied back into the original directory when the
  caller owns it. Needs root (mount), util-linux `mount` / `umount` and `mkfs.ext4` (e2fsprogs
  >= 1.43 for `-d`), and loop devices; `loop_unavailable_reason()` says what is missing.
* `watchdog` (the fallback): a thread measures the workspace with a bounded walk every
  `WATCH_INTERVAL_S` (and once after every exec); when the workspace is over a limit and has grown
  since the last look, the sandbox's processes are killed (the backend's `kill` callback) and the
  exec says so. A writer can overshoot by what it writes between two looks (on this disk ~1 GB/s),
  so it bounds a flood in time, not exactly in bytes: the kernel way is preferred.

Images live under `DISK_ROOT` (`AGENTSIM_DISK_ROOT`, default /var/tmp/agentsim-disks), one folder
per sandbox named `<pid>-<id>`; folders of processes that died without releasing them (mounts
included) are reaped by the next process that makes a disk.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import shutil
import stat
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from envs.coding.sandbox.leftovers import alive

log = logging.getLogger(__name__)

DISK_ROOT = Path(os.environ.get("AGENTSIM_DISK_ROOT", "/var/tmp/agentsim-disks"))
INODE_SIZE = 256  # bytes per inode in the image (ext4's default; 128 would lose nanosecond mtimes)
MOUNT_OPTIONS = "loop,nodev,nosuid,noatime,noinit_itable"
WATCH_INTERVAL_S = 0.5
QUOTA_MODES = ("auto", "loop", "watchdog", "off")
_TOOLS = ("mkfs.ext4", "tune2fs", "mount")
FULL_MARGIN_BYTES = 64 * 1024  # less room than this left for a user: the workspace is full


class DiskSetupError(RuntimeError):
    """The workspace's disk could not be made (the message says why and what to change)."""


class DiskUsage(BaseModel):
    """What the workspace holds against its limits. `nbytes` counts allocated blocks, as `du` does."""

    model_config = ConfigDict(frozen=True)

    nbytes: int
    files: int  # files, folders and links
    bytes_limit: int
    files_limit: int
    full: bool  # no room for another block or another file: writes fail from here on (loop)
    exact: bool = True  # False: a bounded walk stopped early (the counts are lower bounds)

    @property
    def over(self) -> bool:
        return self.nbytes > self.bytes_limit or self.files > self.files_limit

    def describe(self) -> str:
        more = "" if self.exact else "at least "
        return (
            f"{more}{_mib(self.nbytes)} of {_mib(self.bytes_limit)} (Limits.disk_bytes), "
            f"{more}{self.files:,} of {self.files_limit:,} files and folders (Limits.disk_files)"
        )


def _mib(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB"


def _run(argv: list[str], what: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        raise DiskSetupError(f"{what} failed ({res.returncode}): {(res.stderr or res.stdout).strip()[-500:]}")
    return res


def image_size(disk_bytes: int, files: int) -> int:
    """Image bytes so that about `disk_bytes` stay free for data after ext4's metadata (inode
    tables, bitmaps, directories): measured overhead here is files x 256 B + ~1.5% + ~0.5 MiB."""
    raw = disk_bytes + files * INODE_SIZE + disk_bytes // 64 + 2**20
    return -(-raw // 2**20) * 2**20


@cache
def loop_unavailable_reason() -> str | None:
    """None when a loop-mounted ext4 workspace can be made here, else why not (probed once)."""
    if os.geteuid() != 0:
        return "loop-mounting a workspace image needs root"
    for tool in _TOOLS:
        if shutil.which(tool) is None:
            return f"{tool} not found (apt-get install -y e2fsprogs mount)"
    if not os.path.exists("/dev/loop-control"):
        return "no /dev/loop-control (the loop driver is not available here)"
    probe = Path(_make_root()) / f"probe-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    try:
        probe.mkdir()
        disk = LoopDisk(probe / "ws", 8 * 2**20, 64)
        (probe / "ws").mkdir()
        disk.attach()
        (probe / "ws" / "x").write_bytes(b"x")
        disk.release(keep_contents=False)
    except (DiskSetupError, OSError, subprocess.SubprocessError) as e:
        return f"cannot loop-mount an ext4 image here: {e}"
    finally:
        shutil.rmtree(probe, ignore_errors=True)
    return None


def _make_root() -> Path:
    """DISK_ROOT, private to root (the images are nobody else's business); stale disks reaped."""
    DISK_ROOT.mkdir(parents=True, exist_ok=True)
    os.chmod(DISK_ROOT, 0o700)
    _reap_stale_once()
    return DISK_ROOT


# -- the kernel way -------------------------------------------------------------------------------


class LoopDisk:
    """The workspace as a loop-mounted ext4 image of a fixed size and inode count (module doc)."""

    mode = "loop"

    def __init__(self, workspace: Path, disk_bytes: int, files: int) -> None:
        self.workspace = workspace
        self.bytes_limit = disk_bytes
        self.files_limit = files
        self.dir = _make_root() / f"{os.getpid()}-{uuid.uuid4().hex[:10]}"
        self.image = self.dir / "disk.img"
        self.mnt = self.dir / "mnt"
        self._mounts: list[Path] = []  # what we mounted, in order
        self._base_bytes = 0  # what ext4's own metadata takes, not the user's files
        self._base_files = 0  # ext4's reserved inodes and the root folder

    def attach(self) -> None:
        """Make the image from the workspace's current files, mount it over the workspace."""
        self.dir.mkdir(mode=0o700)
        try:
            self._attach()
        except BaseException:
            self.release(keep_contents=False)
            raise

    def _attach(self) -> None:
        have_bytes, have_files = _walk_usage(self.workspace)
        if have_bytes > self.bytes_limit or have_files > self.files_limit:
            raise DiskSetupError(
                f"the workspace {self.workspace} already holds {_mib(have_bytes)} in {have_files:,} entries, more "
                f"than the disk quota ({_mib(self.bytes_limit)}, {self.files_limit:,} files); raise "
                "Limits.disk_bytes / Limits.disk_files"
            )
        with open(self.image, "wb") as f:
            f.truncate(image_size(self.bytes_limit, self.files_limit))
        # ext4 keeps ~11 inodes for itself plus lost+found: ask for that many more, so the user gets files_limit
        mkfs = ["mkfs.ext4", "-q", "-F", "-O", "^has_journal,^resize_inode", "-m", "0", "-I", str(INODE_SIZE)]
        mkfs += ["-N", str(self.files_limit + 12), "-E", "lazy_itable_init=1,nodiscard", "-d", str(self.workspace)]
        try:
            _run([*mkfs, str(self.image)], "mkfs.ext4")
        except DiskSetupError as e:
            raise DiskSetupError(f"{e} (the workspace's files must fit the disk quota)") from None
        self.mnt.mkdir()
        for attempt in range(3):  # loop-device allocation can race with a concurrent mount
            try:
                _run(["mount", "-t", "ext4", "-o", MOUNT_OPTIONS, str(self.image), str(self.mnt)], "mount (loop)")
                break
            except DiskSetupError:
                if attempt == 2:
                    raise
                time.sleep(0.05 * (attempt + 1))
        self._mounts.append(self.mnt)
        os.chmod(self.mnt, stat.S_IMODE(os.stat(self.workspace).st_mode))  # mkfs makes its root 0755: keep ours (0700)
        lost = self.mnt / "lost+found"
        if lost.is_dir() and not (self.workspace / "lost+found").exists():
            lost.rmdir()  # not the user's; e2fsck would make it again if it ever ran
        # what the filesystem itself takes (inode tables, bitmaps, the root folder): not the user's
        st = os.statvfs(self.mnt)
        user_bytes, user_files = _walk_usage(self.mnt)
        self._base_bytes = (st.f_blocks - st.f_bfree) * st.f_frsize - user_bytes
        self._base_files = st.f_files - st.f_ffree - user_files
        # the image is made a bit large (ext4's overhead is only known afterwards): hold the surplus
        # back as root-only reserved blocks, so an unprivileged writer gets exactly disk_bytes
        surplus = st.f_bavail - (self.bytes_limit - user_bytes) // st.f_frsize
        if surplus > 0:  # (mkfs -m 0: nothing is reserved yet; tune2fs refuses to reserve half or more)
            reserved = min(surplus, st.f_blocks * 2 // 5)
            _run(["tune2fs", "-r", str(reserved), _mount_source(self.mnt)], "tune2fs -r (reserve the surplus)")
        _bind(self.mnt, self.workspace)
        self._mounts.append(self.workspace)

    def usage(self) -> DiskUsage:
        """From the filesystem's own counters (statvfs): exact, one syscall. Full = what the kernel
        refuses: (almost) no block a user may take (f_bavail: the root-only reserve excluded) or no inode."""
        st = os.statvfs(self.mnt)
        return DiskUsage(
            nbytes=max(0, (st.f_blocks - st.f_bfree) * st.f_frsize - self._base_bytes),
            files=max(0, st.f_files - st.f_ffree - self._base_files),
            bytes_limit=self.bytes_limit,
            files_limit=st.f_files - self._base_files,  # mkfs rounds the inode count per block group
            full=st.f_bavail * st.f_frsize < FULL_MARGIN_BYTES or st.f_favail == 0,
        )

    def release(self, keep_contents: bool) -> None:
        """Unmount (the original directory reappears), copy the files back into it if asked, drop the image."""
        try:
            if self.workspace in self._mounts:
                _umount(self.workspace)
                self._mounts.remove(self.workspace)
                if keep_contents and self.mnt in self._mounts:
                    _replace_contents(self.workspace, self.mnt)
        finally:
            if self.mnt in self._mounts:
                _umount(self.mnt)  # the loop device is freed with the last mount (autoclear)
                self._mounts.remove(self.mnt)
            shutil.rmtree(self.dir, ignore_errors=True)


def _mount_source(mountpoint: Path) -> str:
    """The device mounted at `mountpoint` (/dev/loopN), from /proc/self/mountinfo."""
    want = str(mountpoint)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            if left.split()[4].replace("\\040", " ") == want:
                return right.split()[1]
    raise DiskSetupError(f"{mountpoint} is not mounted")


_libc = ctypes.CDLL(None, use_errno=True)
_MS_BIND, _MNT_DETACH = 4096, 2


def _bind(src: Path, dest: Path) -> None:
    """mount --bind, as a syscall (a `mount` process costs ~25 ms on a loaded machine)."""
    if _libc.mount(str(src).encode(), str(dest).encode(), None, _MS_BIND, None) != 0:
        err = ctypes.get_errno()
        raise DiskSetupError(f"bind-mounting {src} over {dest} failed: {os.strerror(err)}")


def _umount(path: Path) -> None:
    """Unmount; lazily if something still holds it (a process that is exiting), never leave it mounted."""
    if _libc.umount2(str(path).encode(), 0) == 0:
        return
    err = ctypes.get_errno()
    if err == errno.EINVAL:  # not a mount point (any more)
        return
    log.warning("umount %s: %s; detaching lazily", path, os.strerror(err))
    if _libc.umount2(str(path).encode(), _MNT_DETACH) != 0:
        log.error("could not unmount %s: %s", path, os.strerror(ctypes.get_errno()))


def _replace_contents(dest: Path, src: Path) -> None:
    """Make `dest` hold what `src` holds: folders, regular files (modes and times kept) and links
    (as links, never followed); FIFOs, sockets and devices are left out, as in a snapshot."""
    for entry in os.scandir(dest):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)

    def special(folder: str, names: list[str]) -> set[str]:
        kept = (stat.S_ISDIR, stat.S_ISREG, stat.S_ISLNK)
        return {n for n in names if not any(k(os.lstat(os.path.join(folder, n)).st_mode) for k in kept)}

    shutil.copytree(src, dest, symlinks=True, dirs_exist_ok=True, ignore=special)


def _loop_backing(dev: str) -> str | None:
    try:
        return Path(f"/sys/block/{os.path.basename(dev)}/loop/backing_file").read_text().strip()
    except OSError:
        return None


@cache
def _reap_stale_once() -> None:
    reap_stale()


def reap_stale() -> int:
    """Unmount and delete disks left by processes that died without releasing them; how many."""
    if not DISK_ROOT.is_dir():
        return 0
    stale = []
    for d in DISK_ROOT.iterdir():
        pid, _, _ = d.name.partition("-")
        if d.is_dir() and pid.isdigit() and int(pid) != os.getpid() and not alive(int(pid)):
            stale.append(d)
    if not stale:
        return 0
    mounts: list[str] = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            source = right.split()[1] if len(right.split()) > 1 else ""
            backing = _loop_backing(source) if source.startswith("/dev/loop") else None
            if backing and any(backing.startswith(str(d) + "/") for d in stale):
                mounts.append(left.split()[4].replace("\\040", " "))
    for mp in sorted(mounts, key=len, reverse=True):
        _libc.umount2(mp.encode(), _MNT_DETACH)
    for d in stale:
        shutil.rmtree(d, ignore_errors=True)
    log.warning("reaped %d workspace disks (%d mounts) left by dead processes", len(stale), len(mounts))
    return len(stale)


# -- the fallback -----------------------------------------------------------------------------------


def _walk_usage(root: Path, max_bytes: int | None = None, max_files: int | None = None) -> tuple[int, int]:
    """(allocated bytes, entries) under `root`, not following links; stops early once past both caps."""
    nbytes = files = 0
    stack = [str(root)]
    while stack:
        try:
            it = os.scandir(stack.pop())
        except OSError:  # vanished or not a directory any more: the sandbox is changing it
            continue
        with it:
            for e in it:
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                files += 1
                nbytes += st.st_blocks * 512
                if stat.S_ISDIR(st.st_mode):
                    stack.append(e.path)
                if max_bytes is not None and max_files is not None and (nbytes > max_bytes or files > max_files):
                    return nbytes, files
    return nbytes, files


class DiskWatchdog:
    """Measures the workspace in a thread; over a limit and growing: `kill()` (the sandbox's processes)."""

    mode = "watchdog"

    def __init__(
        self,
        workspace: Path,
        disk_bytes: int,
        files: int,
        kill: Callable[[], None],
        interval_s: float = WATCH_INTERVAL_S,
    ) -> None:
        self.workspace = workspace
        self.bytes_limit = disk_bytes
        self.files_limit = files
        self.kill = kill
        self.interval_s = interval_s
        self.kills = 0  # times the sandbox's processes were killed for the disk
        self.last_kill: DiskUsage | None = None
        self._last: tuple[int, int] = (0, 0)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def attach(self) -> None:
        self._last = _walk_usage(self.workspace)
        self._thread = threading.Thread(target=self._loop, name="disk-watchdog", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        wait = self.interval_s
        while not self._stop.wait(wait):
            t0 = time.monotonic()
            self.check()
            wait = max(self.interval_s, 4 * (time.monotonic() - t0))  # a big workspace is walked less often

    def usage(self) -> DiskUsage:
        """A walk bounded at twice the limits (a flood is not counted to its end)."""
        nbytes, files = _walk_usage(self.workspace, 2 * self.bytes_limit, 2 * self.files_limit)
        exact = nbytes <= 2 * self.bytes_limit and files <= 2 * self.files_limit
        over = nbytes > self.bytes_limit or files > self.files_limit
        return DiskUsage(
            nbytes=nbytes,
            files=files,
            bytes_limit=self.bytes_limit,
            files_limit=self.files_limit,
            full=over,
            exact=exact,
        )

    def check(self) -> DiskUsage:
        """Measure; kill when over a limit and grown since the last look (deleting files is never stopped)."""
        with self._lock:
            u = self.usage()
            grew = u.nbytes > self._last[0] or u.files > self._last[1] or not u.exact
            self._last = (u.nbytes, u.files)
            if u.over and grew:
                self.kills += 1
                self.last_kill = u
                log.warning(
                    "workspace %s over its disk quota (%s): killing the sandbox's processes",
                    self.workspace,
                    u.describe(),
                )
                self.kill()
            return u

    def release(self, keep_contents: bool) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(5)
