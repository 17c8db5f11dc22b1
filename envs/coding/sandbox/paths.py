"""File access inside a workspace that cannot be steered out of it.

The sandboxed process controls the workspace's contents, so it may plant `..` components or
symlinks (`escape -> /`) for the host-side read/write tools to follow. Paths are walked one
component at a time with `O_NOFOLLOW` relative to an open directory fd: a symlink is resolved
by us against the workspace root (an absolute target means `/workspace/...` as the sandbox
sees it), and anything that would leave the root is refused. Swapping a component for a symlink
between our check and our open fails the `O_NOFOLLOW` open instead of escaping.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

MOUNT_POINT = "/workspace"
MAX_SYMLINKS = 40


class PathEscapeError(PermissionError):
    """The path points outside the workspace (or through a symlink that does)."""


class NotRegularFileError(ValueError):
    """The path names a FIFO, socket or device: the file tools read and write regular files only."""


class FileTooLargeError(ValueError):
    """A file is bigger than what the caller may read into memory (the cap is in the message)."""


def kind_name(mode: int) -> str:
    """`fifo`, `socket`, `character device`, ... for a stat mode (for error messages)."""
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISLNK, "a symlink"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _split(path: str) -> list[str]:
    """Components of `path` relative to the workspace; absolute paths must be under /workspace."""
    if path.startswith("/"):
        if path != MOUNT_POINT and not path.startswith(MOUNT_POINT + "/"):
            raise PathEscapeError(f"{path!r} is outside {MOUNT_POINT}")
        path = path[len(MOUNT_POINT) :]
    return [p for p in path.split("/") if p not in ("", ".")]


def _open_dir(root: Path, parts: list[str], create: bool, owner: tuple[int, int] | None = None) -> tuple[int, str]:
    """Open the directory holding the last component; returns (dir fd, final name). Caller closes.

    Missing directories are made when `create` (and given to `owner`); the final name may not exist.
    """
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    stack = [os.open(root, flags)]
    todo = list(parts)
    hops = 0
    try:
        while True:
            if not todo:
                raise IsADirectoryError("the path names a directory, not a file")
            name = todo.pop(0)
            if name == "..":
                if len(stack) == 1:
                    raise PathEscapeError("'..' leaves the workspace")
                os.close(stack.pop())
                continue
            last = not todo
            try:
                st = os.stat(name, dir_fd=stack[-1], follow_symlinks=False)
            except FileNotFoundError:
                if last:
                    return stack.pop(), name
                if not create:
                    raise
                os.mkdir(name, 0o755, dir_fd=stack[-1])
                if owner is not None:
                    os.chown(name, *owner, dir_fd=stack[-1], follow_symlinks=False)
                st = os.stat(name, dir_fd=stack[-1], follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                hops += 1
                if hops > MAX_SYMLINKS:
                    raise OSError(errno.ELOOP, "too many levels of symbolic links", name)
                target = os.readlink(name, dir_fd=stack[-1])
                if target.startswith("/"):  # absolute = as the sandbox sees it: from /workspace
                    for fd in stack[1:]:
                        os.close(fd)
                    del stack[1:]
                todo = _split(target) + todo
                continue
            if last:
                return stack.pop(), name
            stack.append(os.open(name, flags, dir_fd=stack[-1]))
    finally:
        for fd in stack:
            os.close(fd)


def open_file(root: Path, path: str) -> BinaryIO:
    """A regular file under `root` opened for reading (see module doc); the caller reads it in chunks.

    FIFOs, sockets and devices raise `NotRegularFileError` without blocking (O_NONBLOCK; the type is
    checked on the open descriptor, so a swap between check and open cannot slip one in)."""
    dfd, name = _open_dir(root, _split(path), create=False)
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
            raise NotRegularFileError(f"{path!r} is {kind_name(st.st_mode)}, not a regular file")
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
    finally:
        os.close(dfd)
    mode = os.fstat(fd).st_mode
    if stat.S_ISDIR(mode):
        os.close(fd)
        raise IsADirectoryError(f"{path!r} is a folder")
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotRegularFileError(f"{path!r} is {kind_name(mode)}, not a regular file")
    return os.fdopen(fd, "rb")


def read_file(root: Path, path: str, max_bytes: int | None = None, *, refuse_larger: bool = False) -> bytes:
    """Read a regular file under `root`: at most `max_bytes` of it, or (`refuse_larger`) all of it
    when it is no bigger than that, else `FileTooLargeError` naming the cap. Never more than asked."""
    with open_file(root, path) as f:
        if max_bytes is None:
            return f.read()
        size = os.fstat(f.fileno()).st_size
        if refuse_larger and size > max_bytes:
            raise FileTooLargeError(f"{path!r} holds {size:,} bytes, more than the {max_bytes:,} bytes allowed here")
        return f.read(max_bytes)


def write_file(root: Path, path: str, data: bytes, mode: int = 0o644, owner: tuple[int, int] | None = None) -> None:
    """Create or replace a regular file under `root`, making parent directories (owned by `owner`)."""
    dfd, name = _open_dir(root, _split(path), create=True, owner=owner)
    try:
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode) or stat.S_ISDIR(st.st_mode)):
                raise NotRegularFileError(f"{path!r} is {kind_name(st.st_mode)}, not a regular file")
        except FileNotFoundError:
            pass
        fd = os.open(
            name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode, dir_fd=dfd
        )
    finally:
        os.close(dfd)
    with os.fdopen(fd, "wb") as f:
        mode_now = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode_now):
            raise NotRegularFileError(f"{path!r} is {kind_name(mode_now)}, not a regular file")
        f.write(data)
        if owner is not None:
            os.fchown(fd, *owner)
