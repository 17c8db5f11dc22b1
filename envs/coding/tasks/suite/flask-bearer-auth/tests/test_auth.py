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


ALICE = {"Authorization": "Bearer tok-alice-7f3a9c"}


def assert_401(status, body, headers):
    assert status == 401
    assert body == {"error": "unauthorized"}
    assert headers.get("WWW-Authenticate", "").lower().startswith("bearer")


def test_health_is_public():
    status, body, _ = call("GET", "/health")
    assert status == 200


def test_profile_without_header_is_401():
    assert_401(*call("GET", "/api/profile"))


def test_profile_with_unknown_token_is_401():
    assert_401(*call("GET", "/api/profile", headers={"Authorization": "Bearer nope"}))


def test_other_scheme_and_empty_token_are_401():
    assert_401(*call("GET", "/api/profile", headers={"Authorization": "Basic dG9rLWFsaWNlLTdmM2E5Yw=="}))
    assert_401(*call("GET", "/api/profile", headers={"Authorization": "Bearer "}))
    assert_401(*call("GET", "/api/profile", headers={"Authorization": "tok-alice-7f3a9c"}))


def test_profile_with_valid_tokens():
    status, body, _ = call("GET", "/api/profile", headers=ALICE)
    assert status == 200 and body == {"user": "alice"}
    status, body, _ = call("GET", "/api/profile", headers={"Authorization": "bearer tok-bob-19d2e4"})
    assert status == 200 and body == {"user": "bob"}


def test_reports_require_token():
    assert_401(*call("GET", "/api/reports"))
    status, body, _ = call("GET", "/api/reports", headers=ALICE)
    assert status == 200
    assert len(body["reports"]) == 2
