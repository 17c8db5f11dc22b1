"""A real local HTTP server that misbehaves on purpose: 429s, 500s, garbage JSON, hangs.

These faults cannot be caused on demand with a real model server, so this is the one fake the
test suite allows; it is still a real socket server, so the SDK's retry and timeout paths run for real.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GOOD = {
    "id": "x",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "Action: click[ok]"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
}


class MisbehavingServer:
    """`mode`: 'ok', '429-then-ok' (first `fail_times` answers are 429), '500', 'garbage', 'hang'."""

    def __init__(self, mode: str, fail_times: int = 2) -> None:
        self.mode, self.fail_times, self.requests = mode, fail_times, 0
        self._stop = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def _send(self, code: int, body: bytes, ctype: str = "application/json", headers=None) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                self._send(200, json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode())

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.requests += 1
                m = outer.mode
                if m == "429-then-ok" and outer.requests <= outer.fail_times:
                    self._send(429, b'{"error": {"message": "slow down"}}', headers={"retry-after-ms": "10"})
                elif m == "500":
                    self._send(500, b'{"error": {"message": "internal"}}')
                elif m == "garbage":
                    self._send(200, b'{"choices": [ this is not json')
                elif m == "hang":
                    outer._stop.wait(30)
                else:
                    self._send(200, json.dumps(GOOD).encode())

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> MisbehavingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()
