import json
import os
import urllib.error
import urllib.request

PORT = int(os.environ.get("SERVICE_PORT", "8080"))
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

def test_health_on_the_platform_port():
    status, body, _ = call("GET", "/health")
    assert status == 200
    assert body == {"status": "ok", "service": "quotes"}


def test_quotes_list():
    status, body, _ = call("GET", "/quotes")
    assert status == 200 and len(body) == 2


def test_quote_by_id_and_404():
    status, body, _ = call("GET", "/quotes/2")
    assert status == 200 and body["author"] == "Donald Knuth"
    status, body, _ = call("GET", "/quotes/9")
    assert status == 404 and body == {"error": "quote not found"}
