"""The token check off loopback, for browsers: the env server's `Guard`, fed from a query parameter or a cookie.

Browsers do not send `Authorization` headers on page loads, so the token may come as `?token=...`
once (the answer sets an HttpOnly cookie, so later pages and the live page's polls carry it);
either is turned into the bearer header `envs.server.guard.Guard` checks in constant time.
"""

from __future__ import annotations

from http.cookies import SimpleCookie
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from envs.server.guard import Guard

COOKIE = "agentsim_ui_token"
MAX_BODY = 4096  # the UI takes no bodies (GET only)


class BrowserToken:
    """Moves a `?token=` or the cookie into `Authorization: Bearer`, then lets `Guard` decide."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.guard = Guard(app, token, MAX_BODY)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.guard(scope, receive, send)
            return
        headers = list(scope.get("headers") or [])
        given = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"))).get("token")
        from_query = given is not None
        if given is None:
            raw = dict(headers).get(b"cookie", b"").decode("latin-1")
            jar: SimpleCookie = SimpleCookie()
            try:
                jar.load(raw)
            except Exception:  # a malformed cookie header is the same as none
                jar = SimpleCookie()
            given = jar[COOKIE].value if COOKIE in jar else None
        if given is not None and not any(k == b"authorization" for k, _ in headers):
            headers.append((b"authorization", f"Bearer {given}".encode("latin-1", "replace")))
            scope = dict(scope, headers=headers)
        if not from_query:
            await self.guard(scope, receive, send)
            return
        cookie = f"{COOKIE}={given}; HttpOnly; SameSite=Strict; Path=/".encode("latin-1", "replace")

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start" and message.get("status", 500) < 400:
                message = dict(message, headers=[*message.get("headers", []), (b"set-cookie", cookie)])
            await send(message)

        await self.guard(scope, receive, send_with_cookie)
