"""A greeting service (standard library only)."""

import json
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


def greeting(name: str) -> str:
    return "Hello, World!"


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        url = urlparse(self.path)
        if url.path == "/health":
            body, code = b"ok", 200
        elif url.path == "/greet":
            name = parse_qs(url.query).get("name", [""])[0]
            body, code = json.dumps({"message": greeting(name)}).encode(), 200
        else:
            body, code = b"not found", 404
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def main() -> None:
    port = int(os.environ.get("SERVICE_PORT", "8000"))
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
