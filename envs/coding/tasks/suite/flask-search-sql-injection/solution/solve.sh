#!/bin/sh
# Reference solution: applied inside the workspace; idempotent, no network.
set -e
cd "${WORKSPACE:-/workspace}"
cat > app.py <<'EOF'
import os
import sqlite3

from flask import Flask, jsonify, request

DB_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "crm.db")
app = Flask(__name__)

SEED = [
    ("Ada Lovelace", "London"),
    ("Conor O'Brien", "Dublin"),
    ("Grace Hopper", "New York"),
    ("100% Cotton Ltd", "Manchester"),
    ("acme_corp", "Springfield"),
    ("acmeXcorp", "Shelbyville"),
    ("Alan Turing", "Manchester"),
]


def get_db():
    conn = sqlite3.connect(DB_PATH)
    conn.row_factory = sqlite3.Row
    return conn


def init_db():
    with get_db() as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT NOT NULL)")
        if conn.execute("SELECT COUNT(*) FROM customers").fetchone()[0] == 0:
            conn.executemany("INSERT INTO customers (name, city) VALUES (?, ?)", SEED)


@app.get("/health")
def health():
    return jsonify(status="ok")


@app.get("/customers/search")
def search():
    q = request.args.get("q", "").strip()
    if not q:
        return jsonify(error="query parameter q is required"), 400
    # Bound parameter (no SQL injection) and LIKE wildcards escaped: q is a literal substring.
    pattern = "%" + q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    with get_db() as conn:
        rows = conn.execute(
            "SELECT id, name, city FROM customers WHERE name LIKE ? ESCAPE '\\' ORDER BY id",
            (pattern,),
        ).fetchall()
    return jsonify(results=[dict(r) for r in rows])


init_db()

if __name__ == "__main__":
    app.run(host="0.0.0.0", port=8000, threaded=True)
EOF
