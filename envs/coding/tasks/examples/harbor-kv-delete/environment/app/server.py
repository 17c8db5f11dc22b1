"""A tiny in-memory key-value store over HTTP (standard library only)."""

import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STORE: dict[str, bytes] = {}


class Handler(BaseHTTPRequestHandler):
    def _key(self) -> str | None:
        prefix = "/items/"
        return self.path[len(prefix) :] if self.path.startswith(prefix) and len(self.path) > len(prefix) else None

    def _send(self, code: int, body: bytes = b"") -> None:
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/health":
            return self._send(200, b"ok")
        key = self._key()
        if key is None or key not in STORE:
            return self._send(404, b"not found")
        self._send(200, STORE[key])

    def do_PUT(self) -> None:
        key = self._key()
        if key is None:
            return self._send(404, b"not found")
        length = int(self.headers.get("Content-Length", 0))
        STORE[key] = self.rfile.read(length)
        self._send(201)

    def log_message(self, *args: object) -> None:
        pass


if __name__ == "__main__":
    port = int(os.environ.get("SERVICE_PORT", "8080"))
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
