"""A real OpenAI-compatible HTTP endpoint on 127.0.0.1 that fails every n-th chat call with a 500.

A real model server cannot be made to fail on demand, so this is a scripted one; it still goes
through the openai SDK and real sockets. Its answer, `say[...]`, is valid in the corridor env.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ANSWER = {
    "id": "x",
    "object": "chat.completion",
    "created": 0,
    "model": "flaky",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Thought: talk.\nAction: say[hello]"},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16},
}


class FlakyBrainServer:
    def __init__(self, fail_every: int) -> None:
        self.fail_every, self.calls, self.failures = fail_every, 0, 0
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: object) -> None:
                pass

            def _send(self, code: int, payload: dict) -> None:
                body = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                self._send(200, {"object": "list", "data": [{"id": "flaky", "object": "model"}]})

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with outer._lock:
                    outer.calls += 1
                    fail = outer.fail_every > 0 and outer.calls % outer.fail_every == 0
                    outer.failures += fail
                if fail:
                    self._send(500, {"error": {"message": "model worker crashed"}})
                else:
                    self._send(200, ANSWER)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FlakyBrainServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
