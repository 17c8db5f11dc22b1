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

KEY = {"X-Api-Key": "adm-3f9c2e71b4"}


def test_public_routes_need_no_key():
    assert call("GET", "/health")[0] == 200
    status, body, _ = call("GET", "/users/2")
    assert status == 200 and body == {"id": 2, "name": "Linus"}


def test_admin_list_without_key_is_401():
    status, body, _ = call("GET", "/admin/users")
    assert status == 401 and body == {"error": "invalid api key"}


def test_admin_list_with_wrong_key_is_401():
    status, body, _ = call("GET", "/admin/users", headers={"X-Api-Key": "guess"})
    assert status == 401 and body == {"error": "invalid api key"}


def test_admin_list_with_key():
    status, body, _ = call("GET", "/admin/users", headers=KEY)
    assert status == 200
    assert {u["email"] for u in body} >= {"ada@example.com"}


def test_header_name_is_case_insensitive():
    status, _, _ = call("GET", "/admin/users", headers={"x-api-key": "adm-3f9c2e71b4"})
    assert status == 200


def test_delete_requires_key_and_changes_nothing_without_it():
    status, _, _ = call("DELETE", "/admin/users/3")
    assert status == 401
    assert call("GET", "/users/3")[0] == 200
    status, _, _ = call("DELETE", "/admin/users/3", headers=KEY)
    assert status == 204
    assert call("GET", "/users/3")[0] == 404
    assert call("DELETE", "/admin/users/3", headers=KEY)[0] == 404
