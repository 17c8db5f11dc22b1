"""Fixtures for the sandbox tests: backends (skipped with the reason when absent), a host TCP
server to reach, a planted host secret."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from envs.coding.sandbox import Limits, Sandbox, make_sandbox, unavailable_reason

# task folders used as test data: their own tests run inside sandboxes at grading, never in this pytest session
collect_ignore = ["fixtures", "conformance"]

ISOLATING = ("bwrap", "docker")


def _skip_unless(backend: str) -> None:
    reason = unavailable_reason(backend)
    if reason is not None:
        pytest.skip(f"{backend} backend unavailable: {reason}")


@pytest.fixture(params=ISOLATING)
def backend(request: pytest.FixtureRequest) -> str:
    """Every isolating backend; the ones that cannot run here are skipped with the reason."""
    _skip_unless(request.param)
    return request.param


@pytest.fixture
def make(backend: str) -> Iterator[Callable[..., Sandbox]]:
    """Start sandboxes of the current backend; every one is closed at teardown."""
    made: list[Sandbox] = []

    def _make(**kw: object) -> Sandbox:
        sb = make_sandbox(backend, **kw)  # type: ignore[arg-type]
        made.append(sb)
        return sb

    yield _make
    for sb in made:
        sb.close()


@pytest.fixture
def bwrap_sb() -> Iterator[Sandbox]:
    """One bwrap sandbox with small limits (for the tests of shared behaviour)."""
    _skip_unless("bwrap")
    with make_sandbox("bwrap", limits=Limits(processes=64, memory_bytes=1024**3, timeout_s=20)) as sb:
        yield sb


@pytest.fixture
def host_tcp_server() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP server on the host's 127.0.0.1 that records what any client sends."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.2)
    got: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1)
                try:
                    got.append(conn.recv(100) or b"<connected>")
                except OSError:
                    got.append(b"<connected>")

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield srv.getsockname()[1], got
    stop.set()
    t.join(2)
    srv.close()


@pytest.fixture
def planted_secret(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A host file outside any workspace, readable by the host's root."""
    d = tmp_path_factory.mktemp("host-secret")
    p = d / "secret.txt"
    p.write_text("TOP-SECRET-4242\n")
    return p
