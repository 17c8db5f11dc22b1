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

def test_health_uses_env_file():
    status, body, _ = call("GET", "/health")
    assert status == 200
    assert body == {"status": "ok", "shop": "Boulangerie Rue Cler"}


def test_quote_uses_vat_and_currency_from_env_file():
    status, body, _ = call("POST", "/quote", {"items": {"espresso": 2, "croissant": 1}})
    assert status == 200
    assert body == {"net": 6.2, "vat": 0.34, "total": 6.54, "currency": "EUR"}


def test_quote_errors():
    assert call("POST", "/quote", {"items": {}})[0] == 400
    status, body, _ = call("POST", "/quote", {"items": {"pizza": 1}})
    assert status == 400 and "pizza" in body["error"]
