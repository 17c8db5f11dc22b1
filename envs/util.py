"""Helpers every layer needs (envs, agents, prm, societies), kept at the ground floor so each can import them.

- `is_loopback`: whether a host is this machine: the one place that decides who may skip a token.
- `to_jsonable`: info dicts, kwargs and metadata holding numpy scalars, tuples, sets, NaN or pydantic models,
  made strict JSON.
- `publish_file`, `atomic_write_bytes`, `atomic_write_text`: a file appears whole or not at all.
"""

from __future__ import annotations

import ipaddress
import math
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from pydantic import BaseModel

LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address) is this machine: the one place that decides it."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_loopback_url(url: str) -> bool:
    """Whether `url`'s host is this machine."""
    return is_loopback(urlparse(url).hostname or "")


def to_jsonable(value: Any) -> Any:
    """`value` as strict JSON: dict keys as strings, tuples and sets as lists, numpy scalars as numbers, pydantic
    models as their JSON dump, non-finite floats as their repr; anything else (a numpy array too) as its repr."""
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    if isinstance(value, BaseModel):
        return to_jsonable(value.model_dump(mode="json"))
    item = getattr(value, "item", None)
    if callable(item):
        try:
            return to_jsonable(item())
        except (TypeError, ValueError):  # an array of several elements: its repr (info dicts stay small)
            pass
    return repr(value)


def publish_file(path: Path, write: Callable[[Path], object]) -> Path:
    """Make `path` by `write(tmp)` on a private file beside it, fsynced and renamed into place (the folder fsynced
    too): a reader, a concurrent writer or a machine that lost power sees the old file or the new one, never half of
    either. The file gets the mode a plainly created one would; on any failure the partial file is removed."""
    path = Path(path)
    # a private name (`partial_files` finds leftovers), ending in the target's suffix, which some writers read
    tmp = path.with_name(f".{path.stem}.{uuid.uuid4().hex[:12]}.part{path.suffix}")
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))  # the umask applies, as for open()
    try:
        write(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


def partial_files(path: Path) -> list[Path]:
    """What `publish_file` calls for `path` left beside it (a process killed mid-write), to sweep."""
    path = Path(path)
    return sorted(path.parent.glob(f".{path.stem}.*.part{path.suffix}"))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """`publish_file` of `data`."""
    publish_file(path, lambda tmp: tmp.write_bytes(data))


def atomic_write_text(path: Path, text: str) -> None:
    """`publish_file` of UTF-8 text (summaries, manifests, memory state, markers)."""
    atomic_write_bytes(path, text.encode("utf-8"))
