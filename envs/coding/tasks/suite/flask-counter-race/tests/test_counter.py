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


def test_single_increment():
    name = "c-" + uuid.uuid4().hex[:8]
    assert call("GET", f"/counters/{name}")[1] == {"name": name, "value": 0}
    status, body, _ = call("POST", f"/counters/{name}/increment")
    assert status == 200 and body == {"name": name, "value": 1}
    assert call("GET", f"/counters/{name}")[1]["value"] == 1


def parallel_increments(name, n):
    with ThreadPoolExecutor(max_workers=n) as pool:
        results = list(pool.map(lambda _: call("POST", f"/counters/{name}/increment", timeout=30), range(n)))
    assert all(status == 200 for status, _, _ in results), [r[0] for r in results]
    return [body["value"] for _, body, _ in results]


def test_twenty_parallel_increments_are_not_lost():
    name = "c-" + uuid.uuid4().hex[:8]
    parallel_increments(name, 20)
    assert call("GET", f"/counters/{name}")[1]["value"] == 20


def test_parallel_increments_return_distinct_values():
    name = "c-" + uuid.uuid4().hex[:8]
    values = parallel_increments(name, 20)
    assert sorted(values) == list(range(1, 21))


def test_two_counters_in_parallel_stay_independent():
    a, b = "a-" + uuid.uuid4().hex[:8], "b-" + uuid.uuid4().hex[:8]
    with ThreadPoolExecutor(max_workers=20) as pool:
        list(pool.map(lambda i: call("POST", f"/counters/{(a, b)[i % 2]}/increment", timeout=30), range(20)))
    assert call("GET", f"/counters/{a}")[1]["value"] == 10
    assert call("GET", f"/counters/{b}")[1]["value"] == 10
