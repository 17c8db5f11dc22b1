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

def make(**fields):
    body = {"url": "https://example.com", "title": "Example", "tags": ["a"]}
    body.update(fields)
    status, bm, _ = call("POST", "/bookmarks", body)
    assert status == 201
    return bm


def test_patch_title_only():
    bm = make()
    status, body, _ = call("PATCH", f"/bookmarks/{bm['id']}", {"title": "Renamed"})
    assert status == 200
    assert body == {**bm, "title": "Renamed"}
    assert call("GET", f"/bookmarks/{bm['id']}")[1]["title"] == "Renamed"


def test_patch_tags_and_url():
    bm = make()
    status, body, _ = call("PATCH", f"/bookmarks/{bm['id']}", {"tags": ["x", "y"], "url": "http://e.org/p"})
    assert status == 200
    assert body["tags"] == ["x", "y"] and body["url"] == "http://e.org/p" and body["title"] == "Example"
    _, listed, _ = call("GET", "/bookmarks?tag=y")
    assert any(b["id"] == bm["id"] for b in listed)


def test_patch_unknown_id_is_404():
    status, body, _ = call("PATCH", "/bookmarks/999999", {"title": "x"})
    assert status == 404 and body == {"error": "bookmark not found"}


def test_patch_invalid_input_is_400_and_changes_nothing():
    bm = make()
    for patch in ({"url": "ftp://x"}, {"title": ""}, {"tags": "a,b"}, {"tags": [1, 2]}, {"owner": "me"}):
        status, body, _ = call("PATCH", f"/bookmarks/{bm['id']}", patch)
        assert status == 400, patch
        assert isinstance(body, dict) and body.get("error"), patch
    assert call("GET", f"/bookmarks/{bm['id']}")[1] == bm
