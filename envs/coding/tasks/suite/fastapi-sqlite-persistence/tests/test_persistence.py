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

import shutil
import signal
import sqlite3
import socket
import subprocess
import sys
import time
import uuid

WORKSPACE = os.environ.get("WORKSPACE", "/workspace")
DB_FILE = os.path.join(WORKSPACE, "tasks.db")


def read_db(sql, args=()):
    assert os.path.exists(DB_FILE), f"{DB_FILE} does not exist"
    conn = sqlite3.connect(f"file:{DB_FILE}?mode=ro", uri=True, timeout=10)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def test_api_roundtrip():
    status, task, _ = call("POST", "/tasks", {"title": "write report"})
    assert status == 201 and task["done"] is False
    status, got, _ = call("GET", f"/tasks/{task['id']}")
    assert status == 200 and got == task
    status, _, _ = call("GET", "/tasks/987654")
    assert status == 404


def test_created_task_is_in_the_sqlite_file():
    title = "persist-" + uuid.uuid4().hex[:8]
    status, task, _ = call("POST", "/tasks", {"title": title})
    assert status == 201
    rows = read_db("SELECT id, title, done FROM tasks WHERE title = ?", (title,))
    assert rows == [(task["id"], title, 0)]


def test_update_is_in_the_sqlite_file():
    _, task, _ = call("POST", "/tasks", {"title": "finish me"})
    status, patched, _ = call("PATCH", f"/tasks/{task['id']}", {"done": True})
    assert status == 200 and patched["done"] is True
    rows = read_db("SELECT done FROM tasks WHERE id = ?", (task["id"],))
    assert rows == [(1,)]


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_a_restarted_service_still_serves_the_data():
    title = "survivor-" + uuid.uuid4().hex[:8]
    _, task, _ = call("POST", "/tasks", {"title": title})
    port = _free_port()
    python = shutil.which("python") or sys.executable
    proc = subprocess.Popen(
        [python, "-m", "uvicorn", "main:app", "--host", "127.0.0.1", "--port", str(port)],
        cwd=WORKSPACE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        deadline = time.time() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/tasks/{task['id']}", timeout=2) as r:
                    body = json.loads(r.read())
                break
            except urllib.error.HTTPError as err:
                body = {"status": err.code}
                break
            except OSError:
                assert proc.poll() is None, "second instance of the service exited"
                assert time.time() < deadline, "second instance never answered"
                time.sleep(0.2)
        assert body == task
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
