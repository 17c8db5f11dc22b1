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

from urllib.parse import quote


def search(q):
    return call("GET", "/customers/search?q=" + quote(q, safe=""))


def names(body):
    return [c["name"] for c in body["results"]]


def test_plain_search_is_case_insensitive():
    status, body, _ = search("ACE")
    assert status == 200
    assert names(body) == ["Ada Lovelace", "Grace Hopper"]


def test_apostrophe():
    status, body, _ = search("O'Brien")
    assert status == 200
    assert names(body) == ["Conor O'Brien"]


def test_injection_returns_nothing():
    for q in ("' OR '1'='1", "x' OR 1=1 --", "%' --"):
        status, body, _ = search(q)
        assert status == 200, q
        assert body["results"] == [], q


def test_wildcards_are_literal():
    status, body, _ = search("_")
    assert status == 200 and names(body) == ["acme_corp"]
    status, body, _ = search("100%")
    assert status == 200 and names(body) == ["100% Cotton Ltd"]
    status, body, _ = search("%")
    assert status == 200 and names(body) == ["100% Cotton Ltd"]


def test_missing_query_is_400():
    for path in ("/customers/search", "/customers/search?q=", "/customers/search?q=%20%20"):
        status, body, _ = call("GET", path)
        assert status == 400, path
        assert isinstance(body, dict) and body.get("error"), path
