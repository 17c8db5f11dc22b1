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

def titles(body):
    return [e["title"] for e in body["events"]]


def test_whole_month_includes_last_day():
    status, body, _ = call("GET", "/events?from=2024-03-01&to=2024-03-31")
    assert status == 200
    assert titles(body) == ["Kick-off", "Design review", "Sprint demo", "Retro"]
    assert body["from"] == "2024-03-01" and body["to"] == "2024-03-31"


def test_single_day():
    status, body, _ = call("GET", "/events?from=2024-03-31&to=2024-03-31")
    assert status == 200
    assert titles(body) == ["Sprint demo", "Retro"]


def test_next_day_starts_at_midnight():
    status, body, _ = call("GET", "/events?from=2024-04-01&to=2024-04-30")
    assert status == 200
    assert titles(body) == ["Planning", "All hands"]


def test_invalid_dates_are_422():
    for query in ("from=2024-13-01&to=2024-12-31", "from=yesterday&to=2024-03-01", "from=2024-03-01"):
        status, body, _ = call("GET", "/events?" + query)
        assert status == 422, query


def test_reversed_range_is_400():
    status, body, _ = call("GET", "/events?from=2024-04-01&to=2024-03-01")
    assert status == 400
    assert isinstance(body, dict) and isinstance(body.get("detail"), str)
