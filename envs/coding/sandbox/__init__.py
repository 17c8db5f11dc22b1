"""Sandboxes for the coding env: one interface (`Sandbox`), three backends.

    with make_sandbox("bwrap", limits=Limits(memory_bytes=2**30), network=False) as sb:
        sb.write_file("app.py", "print('hi')")
        res = sb.exec("python3 app.py", timeout=10)   # ExecResult(exit_code, stdout, stderr, truncated, ...)
        snap = sb.snapshot(); ...; sb.restore(snap)

`bwrap` (namespaces; runs here), `docker` (the docker SDK, where an engine answers), `local`
(no isolation: only with allow_unsafe=True). See docs/coding.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envs.coding.sandbox.base import BackendUnavailableError, ExecResult, Limits, Sandbox, SandboxError
from envs.coding.sandbox.disk import DiskUsage
from envs.coding.sandbox.paths import FileTooLargeError, NotRegularFileError, PathEscapeError
from envs.coding.sandbox.snapshot import SnapshotTooLargeError, WorkspaceSnapshot

BACKENDS = ("bwrap", "docker", "local")

__all__ = [
    "BACKENDS",
    "BackendUnavailableError",
    "DiskUsage",
    "ExecResult",
    "FileTooLargeError",
    "NotRegularFileError",
    "SnapshotTooLargeError",
    "Limits",
    "PathEscapeError",
    "Sandbox",
    "SandboxError",
    "WorkspaceSnapshot",
    "available_backends",
    "make_sandbox",
    "unavailable_reason",
]


def make_sandbox(
    backend: str,
    workspace: str | Path | None = None,
    limits: Limits | None = None,
    network: bool = False,
    *,
    start: bool = True,
    **options: Any,
) -> Sandbox:
    """A sandbox of the named backend, started unless `start=False`.

    `options` go to the backend: bwrap `ro_binds`, `use_cgroup`, `disk_quota`; docker `image`,
    `cpus`, `user`, `ro_binds`, `disk_quota`; local `allow_unsafe` (required). `workspace=None`
    makes a temporary one, removed at close.
    """
    if backend == "bwrap":
        from envs.coding.sandbox.bwrap import BwrapSandbox

        sb: Sandbox = BwrapSandbox(workspace, limits, network, **options)
    elif backend == "docker":
        from envs.coding.sandbox.docker_backend import DockerSandbox

        sb = DockerSandbox(workspace, limits, network, **options)
    elif backend == "local":
        from envs.coding.sandbox.local import LocalSandbox

        sb = LocalSandbox(workspace, limits, network, **options)
    else:
        raise ValueError(f"unknown sandbox backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    return sb.start() if start else sb


def unavailable_reason(backend: str) -> str | None:
    """None when `backend` works on this machine, else why not (local: always works, unsafely)."""
    if backend == "bwrap":
        from envs.coding.sandbox.bwrap import bwrap_unavailable_reason

        return bwrap_unavailable_reason()
    if backend == "docker":
        from envs.coding.sandbox.docker_backend import docker_unavailable_reason

        return docker_unavailable_reason()
    if backend == "local":
        return None
    raise ValueError(f"unknown sandbox backend {backend!r}")


def available_backends(include_local: bool = False) -> list[str]:
    """The isolating backends that work here (plus local when asked)."""
    names = [b for b in ("bwrap", "docker") if unavailable_reason(b) is None]
    return [*names, "local"] if include_local else names
