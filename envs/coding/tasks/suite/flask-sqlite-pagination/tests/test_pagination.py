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


def ids(body):
    return [p["id"] for p in body["items"]]


def test_default_page():
    status, body, _ = call("GET", "/products")
    assert status == 200
    assert ids(body) == list(range(1, 11))
    assert body["total"] == 23
    assert body["limit"] == 10 and body["offset"] == 0
    assert body["next"] == "/products?limit=10&offset=10"


def test_offset_is_an_item_offset():
    status, body, _ = call("GET", "/products?limit=5&offset=5")
    assert status == 200
    assert ids(body) == [6, 7, 8, 9, 10]
    assert body["next"] == "/products?limit=5&offset=10"


def test_last_partial_page_has_no_next():
    status, body, _ = call("GET", "/products?limit=5&offset=20")
    assert status == 200
    assert ids(body) == [21, 22, 23]
    assert body["next"] is None


def test_exact_last_page_has_no_next():
    status, body, _ = call("GET", "/products?limit=23&offset=0")
    assert status == 200
    assert len(body["items"]) == 23
    assert body["next"] is None


def test_following_next_links_visits_every_product_once():
    seen, link, hops = [], "/products?limit=7", 0
    while link and hops < 10:
        status, body, _ = call("GET", link)
        assert status == 200
        seen += ids(body)
        link, hops = body["next"], hops + 1
    assert seen == list(range(1, 24))


def test_invalid_parameters_are_400():
    for query in ("limit=0", "limit=101", "limit=abc", "offset=-1", "offset=x"):
        status, body, _ = call("GET", "/products?" + query)
        assert status == 400, query
        assert isinstance(body, dict) and body.get("error"), query
