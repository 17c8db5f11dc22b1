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

import uuid


def new_email():
    return f"user-{uuid.uuid4().hex[:8]}@example.com"


def test_valid_signup_hides_the_password():
    email = new_email()
    status, body, _ = call("POST", "/api/signup", {"email": email, "password": "correct horse", "age": 30})
    assert status == 201
    assert set(body) == {"id", "email", "age"} and body["email"] == email and body["age"] == 30
    status, got, _ = call("GET", f"/api/accounts/{body['id']}")
    assert status == 200 and got == body
    assert "correct horse" not in json.dumps(got)


def test_invalid_fields_are_all_reported():
    status, body, _ = call("POST", "/api/signup", {"email": "not-an-email", "password": "short", "age": 12})
    assert status == 400
    assert set(body["errors"]) == {"email", "password", "age"}
    assert all(isinstance(m, str) and m for m in body["errors"].values())


def test_single_invalid_field():
    for bad, field in ((dict(age="30"), "age"), (dict(age=121), "age"), (dict(age=20.5), "age"),
                       (dict(password=12345678), "password"), (dict(email="a@b"), "email")):
        payload = {"email": new_email(), "password": "long enough", "age": 30, **bad}
        status, body, _ = call("POST", "/api/signup", payload)
        assert status == 400, bad
        assert set(body["errors"]) == {field}, (bad, body)


def test_missing_body_is_400():
    status, body, _ = call("POST", "/api/signup", {})
    assert status == 400 and set(body["errors"]) == {"email", "password", "age"}


def test_duplicate_email_is_409_case_insensitive():
    email = new_email()
    status, first, _ = call("POST", "/api/signup", {"email": email, "password": "password-1", "age": 40})
    assert status == 201
    status, body, _ = call("POST", "/api/signup", {"email": email.upper(), "password": "password-2", "age": 50})
    assert status == 409 and body == {"error": "email already registered"}
    assert call("GET", f"/api/accounts/{first['id']}")[1]["age"] == 40
