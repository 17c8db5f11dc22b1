import json
import os
import urllib.error
import urllib.request

PORT = int(os.environ.get("SERVICE_PORT", "8000"))
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

def test_health():
    status, body, _ = call("GET", "/health")
    assert status == 200 and body == {"status": "ok"}


def test_items():
    status, body, _ = call("GET", "/items")
    assert status == 200
    assert [i["sku"] for i in body] == ["BLT-10", "NUT-10", "WSH-10"]


def test_low_stock_filter():
    status, body, _ = call("GET", "/items?low_stock=true")
    assert status == 200
    assert [i["sku"] for i in body] == ["NUT-10", "WSH-10"]


def test_item_and_404():
    status, body, _ = call("GET", "/items/NUT-10")
    assert status == 200 and body["quantity"] == 3
    assert call("GET", "/items/NOPE")[0] == 404
