import json
import os
import urllib.error
import urllib.request

PORT = int(os.environ.get("SERVICE_PORT", "3000"))
BASE = f"http://127.0.0.1:{PORT}"


def call(method, path, body=None, headers=None, timeout=10):
    """One HTTP request; returns (status, parsed JSON body or text, response headers)."""
    data = json.dumps(body).encode() if body is not None else None
    hdrs = {"Content-Type": "application/json"} if data is not None else {}
    hdrs.update(headers or {})
    req = urllib.request.Request(BASE + path, data=data, method=method, headers=hdrs)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status, raw, rh = resp.status, resp.read(), dict(resp.headers)
    except urllib.error.HTTPError as err:
        status, raw, rh = err.code, err.read(), dict(err.headers)
    try:
        payload = json.loads(raw) if raw else None
    except ValueError:
        payload = raw.decode("utf-8", "replace")
    return status, payload, rh

import uuid


def test_health_reports_production():
    status, body, _ = call("GET", "/health")
    assert status == 200
    assert body == {"status": "ok", "env": "production"}


def test_create_and_resolve_link():
    code = "c-" + uuid.uuid4().hex[:8]
    status, body, _ = call("POST", "/api/links", {"url": "https://example.com/a", "code": code})
    assert status == 201 and body["hits"] == 0
    status, body, _ = call("GET", f"/api/links/{code}")
    assert status == 200 and body["url"] == "https://example.com/a" and body["hits"] == 1


def test_errors():
    code = "d-" + uuid.uuid4().hex[:8]
    assert call("POST", "/api/links", {"url": "nope", "code": code})[0] == 400
    assert call("POST", "/api/links", {"url": "https://e.org", "code": code})[0] == 201
    assert call("POST", "/api/links", {"url": "https://e.org", "code": code})[0] == 409
    assert call("GET", "/api/links/missing-" + code)[0] == 404
