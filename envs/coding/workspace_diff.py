"""The files an episode changed: the workspace at reset against the workspace at submit, as unified diffs.

The per-step edits (create / str_replace) miss what commands change (a `sed -i`, a generated
file, the oracle's script), so the env compares its two in-memory snapshots (`sandbox.snapshot`)
at `submit[]` and puts the result in that step's `info["workspace_diff"]`, which the trajectory
keeps. It is bounded, as everything in a step's info must be: at most `MAX_FILES` files listed,
`MAX_DIFF_CHARS` of diff text in all and `MAX_FILE_DIFF_CHARS` per file, each cut said so
(`truncated`, a file's `note`). Binary files (a NUL byte, or not UTF-8) and files over
`MAX_DIFF_FILE_BYTES` are named, not diffed; `__pycache__` folders are left out (bytecode the
grader's own runs write).
"""

from __future__ import annotations

import difflib
import stat
from typing import Literal

from pydantic import BaseModel

from envs.coding.sandbox.snapshot import WorkspaceSnapshot, _Dir, _File, _Link

MAX_FILES = 50
MAX_DIFF_CHARS = 100_000
MAX_FILE_DIFF_CHARS = 20_000
MAX_DIFF_FILE_BYTES = 512 * 1024  # larger files are named with their sizes, not diffed
SKIPPED_DIRS = frozenset({"__pycache__"})

Entry = _File | _Link


class FileChange(BaseModel):
    """One changed path: how, and its unified diff when it is a text file small enough to diff."""

    path: str
    status: Literal["added", "deleted", "modified", "mode", "kind"]  # mode: permissions only; kind: file <-> link
    binary: bool = False
    diff: str | None = None  # unified diff (`---`/`+++` headers included); None when not diffed
    note: str | None = None  # why not diffed, or that the diff was cut
    size_before: int | None = None
    size_after: int | None = None


class WorkspaceDiff(BaseModel):
    """Every file the episode changed (the first `MAX_FILES`), and whether anything was left out."""

    changed: int  # paths changed in all
    files: list[FileChange]
    truncated: bool = False
    note: str | None = None


def _flatten(d: _Dir, prefix: str = "") -> dict[str, Entry]:
    out: dict[str, Entry] = {}
    for name, child in d.children.items():
        path = f"{prefix}{name}"
        if isinstance(child, _Dir):
            if name not in SKIPPED_DIRS:
                out.update(_flatten(child, path + "/"))
        else:
            out[path] = child
    return out


def _content(f: _File) -> bytes | None:
    """The file's bytes (holes as zeros), or None when it is too big to diff."""
    if f.size > MAX_DIFF_FILE_BYTES:
        return None
    buf = bytearray(f.size)
    for off, data in f.extents:
        buf[off : off + len(data)] = data[: max(0, f.size - off)]
    return bytes(buf)


def _text(data: bytes) -> list[str] | None:
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return None


def _same(a: Entry, b: Entry) -> bool:
    if isinstance(a, _Link) or isinstance(b, _Link):
        return a == b
    return a.size == b.size and a.mode == b.mode and _content_equal(a, b)


def _content_equal(a: _File, b: _File) -> bool:
    if a.extents == b.extents:
        return True
    ca, cb = _content(a), _content(b)
    if ca is None or cb is None:  # too big to rebuild: compare the data extents' bytes
        return b"".join(d for _, d in a.extents) == b"".join(d for _, d in b.extents)
    return ca == cb


def _size(e: Entry | None) -> int | None:
    return e.size if isinstance(e, _File) else None


def _change(path: str, before: Entry | None, after: Entry | None) -> FileChange:
    status: Literal["added", "deleted", "modified", "mode", "kind"]
    if before is None:
        status = "added"
    elif after is None:
        status = "deleted"
    elif type(before) is not type(after):
        status = "kind"
    elif isinstance(before, _File) and isinstance(after, _File) and _content_equal(before, after):
        status = "mode"
    else:
        status = "modified"
    change = FileChange(path=path, status=status, size_before=_size(before), size_after=_size(after))
    if status == "mode":
        assert isinstance(before, _File) and isinstance(after, _File)
        change.note = f"mode {stat.filemode(before.mode)[1:]} -> {stat.filemode(after.mode)[1:]}"
        return change
    sides: list[list[str]] = []
    for e in (before, after):
        if e is None:
            sides.append([])
        elif isinstance(e, _Link):
            sides.append([f"-> {e.target}\n"])  # a link is shown as its target
        else:
            data = _content(e)
            if data is None:
                change.note = f"not diffed: over {MAX_DIFF_FILE_BYTES:,} bytes"
                return change
            lines = _text(data)
            if lines is None:
                change.binary, change.note = True, "binary file: not diffed"
                return change
            sides.append(lines)
    a_name = "/dev/null" if before is None else f"a/{path}"
    b_name = "/dev/null" if after is None else f"b/{path}"
    diff = "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
        for line in difflib.unified_diff(sides[0], sides[1], a_name, b_name, n=3)
    )
    if len(diff) > MAX_FILE_DIFF_CHARS:
        diff = diff[:MAX_FILE_DIFF_CHARS]
        change.note = f"diff cut at {MAX_FILE_DIFF_CHARS:,} characters"
    change.diff = diff
    return change


def workspace_diff(before: WorkspaceSnapshot, after: WorkspaceSnapshot) -> WorkspaceDiff:
    """What changed from `before` to `after`, sorted by path, within the module's bounds."""
    a, b = _flatten(before.root), _flatten(after.root)
    paths = sorted(p for p in a.keys() | b.keys() if p not in a or p not in b or not _same(a[p], b[p]))
    files: list[FileChange] = []
    budget = MAX_DIFF_CHARS
    truncated = False
    for p in paths[:MAX_FILES]:
        change = _change(p, a.get(p), b.get(p))
        if change.diff is not None and len(change.diff) > budget:
            change.diff = change.diff[:budget] if budget > 0 else None
            change.note = f"diff cut: the diffs of this episode passed {MAX_DIFF_CHARS:,} characters"
            truncated = True
        budget -= len(change.diff or "")
        files.append(change)
    note = None
    if len(paths) > MAX_FILES:
        truncated = True
        note = f"{len(paths):,} files changed; the first {MAX_FILES} (by path) are listed"
    return WorkspaceDiff(changed=len(paths), files=files, truncated=truncated, note=note)
