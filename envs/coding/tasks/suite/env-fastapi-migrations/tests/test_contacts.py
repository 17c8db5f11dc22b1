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

import sqlite3
import uuid

WORKSPACE = os.environ.get("WORKSPACE", "/workspace")
DB_FILE = os.path.join(WORKSPACE, "data", "contacts.db")


def test_health_reports_latest_schema():
    status, body, _ = call("GET", "/health")
    assert status == 200
    assert body == {"status": "ok", "schema_version": 2}


def test_create_and_read_contact():
    email = uuid.uuid4().hex[:8] + "@example.com"
    status, body, _ = call("POST", "/contacts", {"name": "Ada", "email": email})
    assert status == 201 and body["email"] == email
    status, got, _ = call("GET", f"/contacts/{body['id']}")
    assert status == 200 and got == body
    assert call("GET", "/contacts/424242")[0] == 404


def test_data_lives_in_the_database_file():
    email = uuid.uuid4().hex[:8] + "@example.org"
    call("POST", "/contacts", {"name": "Grace", "email": email})
    assert os.path.exists(DB_FILE), DB_FILE
    conn = sqlite3.connect(f"file:{DB_FILE}?mode=ro", uri=True)
    try:
        assert conn.execute("SELECT name FROM contacts WHERE email = ?", (email,)).fetchall() == [("Grace",)]
        assert [v for (v,) in conn.execute("SELECT version FROM schema_migrations ORDER BY version")] == [1, 2]
    finally:
        conn.close()
