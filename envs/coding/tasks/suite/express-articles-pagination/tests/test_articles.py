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

def ids(body):
    return [a["id"] for a in body["data"]]


def test_first_page_by_default():
    status, body, _ = call("GET", "/api/articles")
    assert status == 200
    assert ids(body) == list(range(1, 11))
    assert body["page"] == 1 and body["per_page"] == 10
    assert body["total"] == 47 and body["total_pages"] == 5
    assert body["next_page"] == 2


def test_numbers_are_numbers():
    status, body, _ = call("GET", "/api/articles?page=2&per_page=20")
    assert status == 200
    assert ids(body) == list(range(21, 41))
    assert body["page"] == 2 and body["per_page"] == 20 and body["next_page"] == 3


def test_last_page():
    status, body, _ = call("GET", "/api/articles?page=5&per_page=10")
    assert status == 200
    assert ids(body) == [41, 42, 43, 44, 45, 46, 47]
    assert body["next_page"] is None


def test_page_past_the_end_is_empty():
    status, body, _ = call("GET", "/api/articles?page=9")
    assert status == 200 and body["data"] == [] and body["next_page"] is None


def test_category_filter_paginates_the_filtered_list():
    status, body, _ = call("GET", "/api/articles?category=tech&per_page=5&page=2")
    assert status == 200
    assert body["total"] == 16 and body["total_pages"] == 4
    assert ids(body) == [17, 20, 23, 26, 29]


def test_invalid_parameters_are_400():
    for query in ("page=0", "page=-1", "page=abc", "per_page=0", "per_page=51", "per_page=2.5"):
        status, body, _ = call("GET", "/api/articles?" + query)
        assert status == 400, query
        assert isinstance(body, dict) and body.get("error"), query
