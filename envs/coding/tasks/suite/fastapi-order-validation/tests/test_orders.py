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


import json


def test_valid_order():
    status, body, _ = call("POST", "/orders", {"sku": "XYZ-0420", "quantity": 3})
    assert status == 201
    assert body["total"] == 30.0 and body["quantity"] == 3 and body["sku"] == "XYZ-0420"


def test_quantity_bounds_are_inclusive():
    status, body, _ = call("POST", "/orders", {"sku": "ABC-0001", "quantity": 1000})
    assert status == 201 and body["total"] == 2500.0
    status, _, _ = call("POST", "/orders", {"sku": "ABC-0001", "quantity": 1})
    assert status == 201


def test_bad_quantity_is_422_naming_the_field():
    for qty in (0, -3, 1001):
        status, body, _ = call("POST", "/orders", {"sku": "ABC-0001", "quantity": qty})
        assert status == 422, qty
        assert any("quantity" in err["loc"] for err in body["detail"]), body


def test_malformed_sku_is_422():
    for sku in ("abc-0001", "ABC0001", "ABCD-12", ""):
        status, body, _ = call("POST", "/orders", {"sku": sku, "quantity": 1})
        assert status == 422, sku
        assert any("sku" in err["loc"] for err in body["detail"]), body


def test_long_note_is_422():
    status, body, _ = call("POST", "/orders", {"sku": "ABC-0001", "quantity": 1, "note": "x" * 201})
    assert status == 422
    assert "note" in json.dumps(body)


def test_unknown_sku_is_404():
    status, body, _ = call("POST", "/orders", {"sku": "ZZZ-9999", "quantity": 2})
    assert status == 404
    assert body == {"detail": "unknown sku"}
