"""uvicorn's HTTP protocol with a deadline on request headers.

Why: uvicorn arms its keep-alive timer only after a response, so a client that connects and
sends nothing, or half a request line, holds its socket (and, with `limit_concurrency`, a
connection slot) forever. Here every connection must deliver a request's headers within
`read_timeout_s` of its first byte (or of connecting); the body has its own deadline in `guard.py`.
Falls back to uvicorn's default protocol (without this deadline) when httptools is missing.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

log = logging.getLogger(__name__)


def http_protocol(read_timeout_s: float) -> Any:
    """A protocol class for `uvicorn.run(http=...)`, or "auto" when httptools is not installed."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        log.warning("httptools is not installed: request headers have no read deadline (install uvicorn[standard])")
        return "auto"

    class DeadlineHttpToolsProtocol(HttpToolsProtocol):
        _header_timer: asyncio.TimerHandle | None = None

        def _arm(self) -> None:
            if self._header_timer is None:
                self._header_timer = self.loop.call_later(read_timeout_s, self._headers_late)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_late(self) -> None:
            self._header_timer = None
            if not self.transport.is_closing():
                log.info("closed a connection whose request headers did not arrive within %g s", read_timeout_s)
                self.transport.close()

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            if self.cycle is None or self.cycle.response_complete:  # bytes of a new request: its headers are due
                self._arm()
            super().data_received(data)

        def on_headers_complete(self) -> None:
            self._disarm()
            super().on_headers_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return DeadlineHttpToolsProtocol
