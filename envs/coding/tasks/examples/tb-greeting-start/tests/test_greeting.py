"""Hidden tests: run against the service at http://127.0.0.1:$SERVICE_PORT."""

import json
import os
import urllib.parse
import urllib.request

BASE = f"http://127.0.0.1:{os.environ.get('SERVICE_PORT', '8081')}"


def get(path: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(BASE + path, timeout=5) as resp:
        return resp.status, resp.read()


def test_health() -> None:
    assert get("/health")[0] == 200


def test_greets_by_name() -> None:
    status, body = get("/greet?" + urllib.parse.urlencode({"name": "Ada"}))
    assert status == 200
    assert json.loads(body) == {"message": "Hello, Ada!"}


def test_default_name_is_world() -> None:
    assert json.loads(get("/greet")[1]) == {"message": "Hello, World!"}
    assert json.loads(get("/greet?name=")[1]) == {"message": "Hello, World!"}
