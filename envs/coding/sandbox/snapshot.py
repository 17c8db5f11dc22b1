"""Snapshot/restore of a workspace: its files held in memory, restored incrementally.

Why not a tar or a hardlinked copy tree: hardlinks share contents, so an in-place write after the
snapshot would change the snapshot too; a tar restore deletes and re-creates every file, and
creating files is the slow part on ext4 (0.5-1 ms each here, bench/coding_sandbox.py). A
restore here compares the live tree with the snapshot and only removes what is extra, creates
what is missing and rewrites files whose contents differ; unchanged files cost a stat and a read.

The sandboxed process may run during snapshot or restore and may swap a directory for a symlink
at any moment, so both walk the tree through directory fds with O_NOFOLLOW: nothing outside the
workspace is ever read, written or deleted. FIFOs, sockets and devices are not kept.

Bounded host cost (issue 43): a file is kept as its data extents (`SEEK_DATA`/`SEEK_HOLE`), so a
sparse file's holes cost nothing (a 1 GiB file with no blocks is kept in a few bytes), and the
data a snapshot holds is capped (`max_bytes`, the sandbox's `Limits.snapshot_bytes`): a workspace
holding more file data than that is refused with `SnapshotTooLargeError`, which names the cap,
before the file that would pass it is read. Restore compares and writes extent by extent, in
chunks, so a huge live file costs bounded memory too.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
CHUNK = 1024 * 1024


class SnapshotTooLargeError(ValueError):
    """The workspace holds more file data than a snapshot may keep in memory (the cap is named)."""


@dataclass(frozen=True)
class _File:
    extents: tuple[tuple[int, bytes], ...]  # (offset, data) of each data extent; the rest is holes
    size: int
    mode: int
    mtime_ns: int

    @property
    def nbytes(self) -> int:
        return sum(len(d) for _, d in self.extents)


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


def data_extents(fd: int, size: int) -> list[tuple[int, int]]:
    """(offset, length) of the data in a file (holes left out); the whole file where SEEK_DATA is unsupported."""
    out: list[tuple[int, int]] = []
    pos = 0
    try:
        while pos < size:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError as e:
                if e.errno == errno.ENXIO:  # only a hole from pos to the end
                    break
                raise
            end = min(os.lseek(fd, start, os.SEEK_HOLE), size)
            if end > start:
                out.append((start, end - start))
            pos = end
    except OSError as e:
        if e.errno not in (errno.EINVAL, errno.EOPNOTSUPP):
            raise
        return [(0, size)] if size else []
    return out


def _read_extents(fd: int, extents: list[tuple[int, int]]) -> tuple[tuple[int, bytes], ...]:
    got = []
    for off, length in extents:
        parts, at = [], off
        while at < off + length:
            chunk = os.pread(fd, min(CHUNK, off + length - at), at)
            if not chunk:  # truncated under us
                break
            parts.append(chunk)
            at += len(chunk)
        if parts:
            got.append((off, b"".join(parts)))
    return tuple(got)


def _read_dir(dfd: int, counts: list[int], max_bytes: int | None) -> _Dir:
    children: dict[str, _File | _Link | _Dir] = {}
    for name in sorted(os.listdir(dfd)):
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                sub = os.open(name, _DIR_FLAGS, dir_fd=dfd)
                try:
                    children[name] = _read_dir(sub, counts, max_bytes)
                finally:
                    os.close(sub)
            elif stat.S_ISLNK(st.st_mode):
                children[name] = _Link(os.readlink(name, dir_fd=dfd))
            elif stat.S_ISREG(st.st_mode):
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
                try:
                    fst = os.fstat(fd)
                    if not stat.S_ISREG(fst.st_mode):
                        continue
                    extents = data_extents(fd, fst.st_size)
                    want = sum(n for _, n in extents)
                    if max_bytes is not None and counts[1] + want > max_bytes:
                        raise SnapshotTooLargeError(
                            f"the workspace holds more than {max_bytes:,} bytes of file data "
                            f"({name!r}: {want:,} bytes of data in {fst.st_size:,}), the most a snapshot keeps "
                            "(Limits.snapshot_bytes); delete or shrink files, or raise the limit"
                        )
                    data = _read_extents(fd, extents)
                finally:
                    os.close(fd)
                f = _File(data, fst.st_size, stat.S_IMODE(fst.st_mode), fst.st_mtime_ns)
                children[name] = f
                counts[1] += f.nbytes
            else:
                continue
            counts[0] += 1
        except OSError as e:  # vanished or swapped for a link mid-walk: skip it
            if e.errno in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR):
                continue
            raise
    st = os.fstat(dfd)
    return _Dir(stat.S_IMODE(st.st_mode), children)


def snapshot_tree(root: Path, max_bytes: int | None = None) -> WorkspaceSnapshot:
    """Read every directory, regular file and symlink under `root` into memory (file data up to
    `max_bytes` in all, holes free; past it `SnapshotTooLargeError`)."""
    fd = os.open(root, _DIR_FLAGS)
    counts = [0, 0]
    try:
        tree = _read_dir(fd, counts, max_bytes)
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
            try:
                fst = os.fstat(fd)
                if not stat.S_ISREG(fst.st_mode):
                    raise OSError(f"workspace entry {name!r} changed type during restore")
                if not _same(fd, fst.st_size, w):
                    os.ftruncate(fd, 0)
                    os.ftruncate(fd, w.size)
                    for off, data in w.extents:
                        _pwrite_all(fd, data, off)
                _own(fd, fst, w.mode, owner)
                os.utime(fd, ns=(w.mtime_ns, w.mtime_ns))
            finally:
                os.close(fd)


def _same(fd: int, size: int, want: _File) -> bool:
    """Whether the open file holds exactly `want` (compared in chunks: a huge file costs no memory)."""
    if size != want.size:
        return False
    expect = {off: data for off, data in want.extents}
    pos = 0
    for off, length in data_extents(fd, size):
        data = expect.get(off)
        if data is None or len(data) != length:
            # the layout differs (a hole became data or the reverse): compare the bytes themselves
            return _same_bytes(fd, want)
        for at in range(0, length, CHUNK):
            if os.pread(fd, min(CHUNK, length - at), off + at) != data[at : at + CHUNK]:
                return False
        pos += 1
    return pos == len(want.extents)


def _same_bytes(fd: int, want: _File) -> bool:
    """Byte-for-byte against the extents (holes read as zeros), in chunks."""
    at = 0
    extents = list(want.extents)
    while at < want.size:
        n = min(CHUNK, want.size - at)
        live = os.pread(fd, n, at)
        expect = bytearray(n)
        for off, data in extents:
            lo, hi = max(off, at), min(off + len(data), at + n)
            if lo < hi:
                expect[lo - at : hi - at] = data[lo - off : hi - off]
        if live != expect:
            return False
        at += n
    return True


def _pwrite_all(fd: int, data: bytes, off: int) -> None:
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view[:CHUNK], off)
        view, off = view[n:], off + n


def restore_tree(root: Path, snap: WorkspaceSnapshot, owner: tuple[int, int] | None = None) -> None:
    """Make `root` hold exactly the snapshot's entries (contents, modes, mtimes, links), owned by `owner`."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        _own(fd, os.fstat(fd), snap.root.mode, owner)
        _sync_dir(fd, snap.root, owner)
    finally:
        os.close(fd)
