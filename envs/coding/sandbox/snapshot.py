"""Snapshot/restore of a workspace: its files held in memory, restored incrementally.

Why not a tar or a hardlinked copy tree: hardlinks share contents, so an in-place write after the
snapshot would change the snapshot too; a tar restore deletes and re-creates every file, and
creating files is the slow part on ext4 (0.5-1 ms each here, bench/coding_sandbox.py). A
restore here compares the live tree with the snapshot and only removes what is extra, creates
what is missing and rewrites files whose contents differ; unchanged files cost a stat and a read.

The sandboxed process may run during snapshot or restore and may swap a directory for a symlink
at any moment, so both walk the tree through directory fds with O_NOFOLLOW: nothing outside the
workspace is ever read, written or deleted. FIFOs, sockets and devices are not kept.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True)
class _File:
    data: bytes
    mode: int
    mtime_ns: int


@dataclass(frozen=True)
class _Link:
    target: str


@dataclass(frozen=True)
class _Dir:
    mode: int
    children: dict[str, _File | _Link | _Dir] = field(default_factory=dict)


@dataclass(frozen=True)
class WorkspaceSnapshot:
    """The workspace's files at one moment (treat as immutable; restore it any number of times)."""

    root: _Dir
    files: int
    nbytes: int


def _read_dir(dfd: int, counts: list[int]) -> _Dir:
    children: dict[str, _File | _Link | _Dir] = {}
    for name in sorted(os.listdir(dfd)):
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                sub = os.open(name, _DIR_FLAGS, dir_fd=dfd)
                try:
                    children[name] = _read_dir(sub, counts)
                finally:
                    os.close(sub)
            elif stat.S_ISLNK(st.st_mode):
                children[name] = _Link(os.readlink(name, dir_fd=dfd))
            elif stat.S_ISREG(st.st_mode):
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
                with os.fdopen(fd, "rb") as f:
                    fst = os.fstat(fd)
                    if not stat.S_ISREG(fst.st_mode):
                        continue
                    data = f.read()
                children[name] = _File(data, stat.S_IMODE(fst.st_mode), fst.st_mtime_ns)
                counts[1] += len(data)
            else:
                continue
            counts[0] += 1
        except OSError as e:  # vanished or swapped for a link mid-walk: skip it
            if e.errno in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR):
                continue
            raise
    st = os.fstat(dfd)
    return _Dir(stat.S_IMODE(st.st_mode), children)


def snapshot_tree(root: Path) -> WorkspaceSnapshot:
    """Read every directory, regular file and symlink under `root` into memory."""
    fd = os.open(root, _DIR_FLAGS)
    counts = [0, 0]
    try:
        tree = _read_dir(fd, counts)
    finally:
        os.close(fd)
    return WorkspaceSnapshot(tree, counts[0], counts[1])


def _remove(dfd: int, name: str, st: os.stat_result) -> None:
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(name, dir_fd=dfd)  # fd-based on Linux: never follows a link out
    else:
        os.unlink(name, dir_fd=dfd)


def _kind(mode: int) -> type:
    if stat.S_ISDIR(mode):
        return _Dir
    if stat.S_ISLNK(mode):
        return _Link
    return _File if stat.S_ISREG(mode) else object


def _own(fd: int, st: os.stat_result, mode: int, owner: tuple[int, int] | None) -> None:
    if owner is not None and (st.st_uid, st.st_gid) != owner:
        os.fchown(fd, *owner)
    if stat.S_IMODE(st.st_mode) != mode:
        os.fchmod(fd, mode)


def _sync_dir(dfd: int, want: _Dir, owner: tuple[int, int] | None) -> None:
    for name in os.listdir(dfd):
        cur = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        w = want.children.get(name)
        if w is None or _kind(cur.st_mode) is not type(w):
            _remove(dfd, name, cur)
    for name, w in want.children.items():
        try:
            st: os.stat_result | None = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None and _kind(st.st_mode) is not type(w):  # swapped since the listing
            _remove(dfd, name, st)
            st = None
        if isinstance(w, _Dir):
            if st is None:
                os.mkdir(name, w.mode, dir_fd=dfd)
            sub = os.open(name, _DIR_FLAGS, dir_fd=dfd)
            try:
                _own(sub, os.fstat(sub), w.mode, owner)
                _sync_dir(sub, w, owner)
            finally:
                os.close(sub)
        elif isinstance(w, _Link):
            if st is not None and os.readlink(name, dir_fd=dfd) == w.target:
                continue
            if st is not None:
                os.unlink(name, dir_fd=dfd)
            os.symlink(w.target, name, dir_fd=dfd)
            if owner is not None:
                os.chown(name, *owner, dir_fd=dfd, follow_symlinks=False)
        else:
            fd = os.open(
                name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, w.mode, dir_fd=dfd
            )
            with os.fdopen(fd, "r+b") as f:
                fst = os.fstat(fd)
                if not stat.S_ISREG(fst.st_mode):
                    raise OSError(f"workspace entry {name!r} changed type during restore")
                if fst.st_size != len(w.data) or f.read() != w.data:
                    f.seek(0)
                    f.write(w.data)
                    f.truncate()
                    f.flush()
                _own(fd, fst, w.mode, owner)
                os.utime(fd, ns=(w.mtime_ns, w.mtime_ns))


def restore_tree(root: Path, snap: WorkspaceSnapshot, owner: tuple[int, int] | None = None) -> None:
    """Make `root` hold exactly the snapshot's entries (contents, modes, mtimes, links), owned by `owner`."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        _own(fd, os.fstat(fd), snap.root.mode, owner)
        _sync_dir(fd, snap.root, owner)
    finally:
        os.close(fd)
