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


import uuid
from concurrent.futures import ThreadPoolExecutor


def new_event(seats):
    event = "ev-" + uuid.uuid4().hex[:8]
    status, _, _ = call("PUT", f"/stock/{event}", {"quantity": seats})
    assert status == 200
    return event


def burst(event, n, seats=1):
    with ThreadPoolExecutor(max_workers=n) as pool:
        return list(
            pool.map(lambda _: call("POST", "/reservations", {"event": event, "seats": seats}, timeout=30), range(n))
        )


def test_sequential_reservations():
    event = new_event(3)
    status, body, _ = call("POST", "/reservations", {"event": event, "seats": 2})
    assert status == 201 and body["seats"] == 2
    status, body, _ = call("POST", "/reservations", {"event": event, "seats": 2})
    assert status == 409 and body == {"detail": "sold out"}
    assert call("GET", f"/stock/{event}")[1]["available"] == 1


def test_unknown_event_is_404():
    assert call("POST", "/reservations", {"event": "nope-" + uuid.uuid4().hex, "seats": 1})[0] == 404


def test_twenty_buyers_for_five_seats():
    event = new_event(5)
    results = burst(event, 20)
    codes = sorted(status for status, _, _ in results)
    assert codes.count(201) == 5, codes
    assert codes.count(409) == 15, codes
    assert call("GET", f"/stock/{event}")[1]["available"] == 0


def test_multi_seat_burst_never_exceeds_stock():
    event = new_event(10)
    results = burst(event, 20, seats=3)
    sold = sum(body["seats"] for status, body, _ in results if status == 201)
    assert sold == 9
    assert call("GET", f"/stock/{event}")[1]["available"] == 1
