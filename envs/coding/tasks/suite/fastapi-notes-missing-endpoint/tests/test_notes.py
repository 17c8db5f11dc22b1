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


def test_create_and_list_still_work():
    status, note, _ = call("POST", "/notes", {"title": "groceries", "body": "milk"})
    assert status == 201
    status, notes, _ = call("GET", "/notes")
    assert status == 200
    assert any(n["id"] == note["id"] for n in notes)


def test_get_note_by_id():
    _, note, _ = call("POST", "/notes", {"title": "t1", "body": "b1"})
    status, got, _ = call("GET", f"/notes/{note['id']}")
    assert status == 200
    assert got == {"id": note["id"], "title": "t1", "body": "b1"}


def test_get_missing_note_is_404():
    status, body, _ = call("GET", "/notes/999999")
    assert status == 404
    assert body == {"detail": "note not found"}


def test_delete_note():
    _, note, _ = call("POST", "/notes", {"title": "to delete"})
    status, body, _ = call("DELETE", f"/notes/{note['id']}")
    assert status == 204
    assert body in (None, "")
    status, _, _ = call("GET", f"/notes/{note['id']}")
    assert status == 404
    _, notes, _ = call("GET", "/notes")
    assert all(n["id"] != note["id"] for n in notes)


def test_delete_missing_note_is_404():
    status, body, _ = call("DELETE", "/notes/888888")
    assert status == 404
    assert body == {"detail": "note not found"}
