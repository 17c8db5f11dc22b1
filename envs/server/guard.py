"""A pure-ASGI gate in front of every route: bearer token, body size, body-read deadline, UTF-8.

Pure ASGI (not `BaseHTTPMiddleware`) because it runs on every step of every client and must
cost microseconds. `/health` stays open so load balancers and supervisors can probe without a token.

The gate reads the whole body itself (it is at most `max_body_bytes`) so three client faults are
answered before any route runs: a body over the limit (413, also when chunked), a body that does
not arrive within `read_timeout_s` of the headers (408, connection closed: uvicorn's keep-alive
timeout only covers idle connections *between* requests, so a client announcing 100 bytes and
sending 10 would otherwise hold its socket forever), and a body that is not UTF-8 (422 with the
byte offset, like the character offset given for bad JSON, instead of FastAPI's bare 400).
"""

from __future__ import annotations

import hmac
import json
import logging

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger(__name__)

OPEN_PATHS = frozenset({"/health"})
CLOSE = [(b"connection", b"close")]


async def _reject(send: Send, status: int, detail: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            + (headers or []),
        }
    )
    await send({"type": "http.response.body", "body": body})


class _Refused(Exception):
    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status, self.detail = status, detail


class Guard:
    """ASGI middleware in front of the app: token check, body size and read deadline, UTF-8, before any route runs."""

    def __init__(self, app: ASGIApp, token: str | None, max_body_bytes: int, read_timeout_s: float = 30.0) -> None:
        self.app, self.max_body_bytes, self.read_timeout_s = app, max_body_bytes, read_timeout_s
        self._expected = f"Bearer {token}".encode() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        if self._expected is not None and scope.get("path") not in OPEN_PATHS:
            given = headers.get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                why = "missing bearer token" if not given else "wrong bearer token"
                await _reject(
                    send, 401, f"{why}: send 'Authorization: Bearer <token>'", [(b"www-authenticate", b"Bearer")]
                )
                return
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body_bytes:
            await _reject(
                send,
                413,
                f"request body of {int(length):,} bytes is over this server's limit of {self.max_body_bytes:,} bytes",
                CLOSE,
            )
            return
        if (length is None or length == b"0") and b"transfer-encoding" not in headers:  # no body to wait for
            await self.app(scope, receive, send)
            return
        try:
            body = await self._read_body(receive)
        except _Refused as e:
            await _reject(send, e.status, e.detail, CLOSE)  # the rest of the body is unread: close the connection
            return
        if body is None:  # the client went away mid-body
            return
        await self.app(scope, _replay(body, receive), send)

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A WebSocket handshake needs the same bearer token (refused with HTTP 403 before it is accepted);
        message sizes are uvicorn's `ws_max_size` and the route's own check."""
        if self._expected is not None:
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                await receive()  # websocket.connect
                await send({"type": "websocket.close", "code": 1008, "reason": "missing or wrong bearer token"})
                return
        await self.app(scope, receive, send)

    async def _read_body(self, receive: Receive) -> bytes | None:
        """The whole body within the deadline and the size limit, checked to be UTF-8."""
        chunks: list[bytes] = []
        seen = 0
        with anyio.move_on_after(self.read_timeout_s) as scope:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return None
                chunk = message.get("body", b"")
                seen += len(chunk)
                if seen > self.max_body_bytes:
                    raise _Refused(413, f"request body is over this server's limit of {self.max_body_bytes:,} bytes")
                chunks.append(chunk)
                if not message.get("more_body", False):
                    break
        if scope.cancelled_caught:
            log.info(
                "dropped a request whose body did not arrive within %g s (%d bytes came)", self.read_timeout_s, seen
            )
            raise _Refused(
                408,
                f"the request body did not arrive within {self.read_timeout_s:g} s "
                f"({seen:,} bytes received); the connection is closed",
            )
        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as e:
            raise _Refused(
                422,
                f"invalid request: the body is not valid UTF-8 (at byte {e.start}: {e.reason}); "
                "send JSON encoded as UTF-8",
            ) from None
        return body


def _replay(body: bytes, receive: Receive) -> Receive:
    """Hand the app the body already read, then the real channel (so a disconnect is still seen)."""
    sent = False

    async def wrapped() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return wrapped
