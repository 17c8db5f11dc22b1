#!/bin/sh
# Reference solution: applied inside the workspace; idempotent, no network.
set -e
cd "${WORKSPACE:-/workspace}"
cat > app.py <<'EOF'
import os
import sqlite3
import time

from flask import Flask, jsonify

DB_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "counters.db")
app = Flask(__name__)


def get_db():
    conn = sqlite3.connect(DB_PATH, timeout=30, isolation_level=None)
    conn.row_factory = sqlite3.Row
    return conn


def init_db():
    with get_db() as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)")


def notify_analytics(name):
    # Stands in for the call to the analytics service (a few milliseconds over the network).
    time.sleep(0.01)


@app.get("/health")
def health():
    return jsonify(status="ok")


@app.get("/counters/<name>")
def get_counter(name):
    with get_db() as conn:
        row = conn.execute("SELECT value FROM counters WHERE name = ?", (name,)).fetchone()
    return jsonify(name=name, value=row["value"] if row else 0)


@app.post("/counters/<name>/increment")
def increment(name):
    conn = get_db()
    try:
        # One atomic statement under a write lock: concurrent requests cannot interleave
        # between the read and the write.
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "INSERT INTO counters (name, value) VALUES (?, 1) "
            "ON CONFLICT(name) DO UPDATE SET value = value + 1",
            (name,),
        )
        value = conn.execute("SELECT value FROM counters WHERE name = ?", (name,)).fetchone()["value"]
        conn.commit()
    finally:
        conn.close()
    notify_analytics(name)
    return jsonify(name=name, value=value)


init_db()

if __name__ == "__main__":
    app.run(host="0.0.0.0", port=8000, threaded=True)
EOF
