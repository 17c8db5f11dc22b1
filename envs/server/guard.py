"""A pure-ASGI gate in front of every route: bearer token and request-size limit.

Pure ASGI (not `BaseHTTPMiddleware`) because it runs on every step of every client and must
cost microseconds. `/health` stays open so load balancers and supervisors can probe without a token.
"""

from __future__ import annotations

import hmac
import json
from typing import Any, Awaitable, Callable

from starlette.exceptions import HTTPException

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

OPEN_PATHS = frozenset({"/health"})


async def _reject(send: Send, status: int, detail: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
                + (headers or [])})
    await send({"type": "http.response.body", "body": body})


class Guard:
    def __init__(self, app: ASGIApp, token: str | None, max_body_bytes: int) -> None:
        self.app, self.max_body_bytes = app, max_body_bytes
        self._expected = f"Bearer {token}".encode() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        if self._expected is not None and scope.get("path") not in OPEN_PATHS:
            given = headers.get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                why = "missing bearer token" if not given else "wrong bearer token"
                await _reject(send, 401, f"{why}: send 'Authorization: Bearer <token>'",
                              [(b"www-authenticate", b"Bearer")])
                return
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body_bytes:
            await _reject(send, 413, f"request body of {int(length):,} bytes is over this server's limit of "
                                     f"{self.max_body_bytes:,} bytes")
            return
        if length is None and scope.get("method") in ("POST", "PUT", "PATCH"):
            receive = self._capped(receive)
        await self.app(scope, receive, send)

    def _capped(self, receive: Receive) -> Receive:
        """Count a chunked body as it streams in; refuse once it passes the limit."""
        seen = 0

        async def wrapped() -> dict[str, Any]:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.max_body_bytes:
                raise BodyTooLarge(self.max_body_bytes)
            return message

        return wrapped


class BodyTooLarge(HTTPException):
    """An HTTPException, so FastAPI answers 413 instead of its generic 400 for body-read failures."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body is over this server's limit of {limit:,} bytes")
