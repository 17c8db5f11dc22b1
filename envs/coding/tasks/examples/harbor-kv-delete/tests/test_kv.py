"""Hidden tests: run against the service at http://127.0.0.1:$SERVICE_PORT."""

import os
import urllib.error
import urllib.request

import pytest

BASE = f"http://127.0.0.1:{os.environ.get('SERVICE_PORT', '8080')}"


def call(method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(BASE + path, data=body, method=method)
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_put_and_get_still_work() -> None:
    assert call("PUT", "/items/a", b"alpha")[0] == 201
    assert call("GET", "/items/a") == (200, b"alpha")


def test_delete_removes_the_key() -> None:
    call("PUT", "/items/b", b"beta")
    status, body = call("DELETE", "/items/b")
    assert (status, body) == (204, b"")
    assert call("GET", "/items/b")[0] == 404


@pytest.mark.parametrize("key", ["missing", "never-stored"])
def test_delete_unknown_key_is_404(key: str) -> None:
    assert call("DELETE", f"/items/{key}")[0] == 404
