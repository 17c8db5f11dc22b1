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

MOUNT_POINT = "/workspace"
MAX_SYMLINKS = 40


class PathEscapeError(PermissionError):
    """The path points outside the workspace (or through a symlink that does)."""


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


def read_file(root: Path, path: str, max_bytes: int | None = None) -> bytes:
    """Read a regular file under `root` (see module doc); FIFOs and devices are refused."""
    dfd, name = _open_dir(root, _split(path), create=False)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
    finally:
        os.close(dfd)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PermissionError(f"{path!r} is not a regular file")
        return f.read() if max_bytes is None else f.read(max_bytes)


def write_file(root: Path, path: str, data: bytes, mode: int = 0o644, owner: tuple[int, int] | None = None) -> None:
    """Create or replace a regular file under `root`, making parent directories (owned by `owner`)."""
    dfd, name = _open_dir(root, _split(path), create=True, owner=owner)
    try:
        fd = os.open(
            name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode, dir_fd=dfd
        )
    finally:
        os.close(dfd)
    with os.fdopen(fd, "wb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PermissionError(f"{path!r} is not a regular file")
        f.write(data)
        if owner is not None:
            os.fchown(fd, *owner)
