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
    q = request.args.get("q", "")
    with get_db() as conn:
        rows = conn.execute(
            f"SELECT id, name, city FROM customers WHERE name LIKE '%{q}%' ORDER BY id"
        ).fetchall()
    return jsonify(results=[dict(r) for r in rows])


init_db()

if __name__ == "__main__":
    app.run(host="0.0.0.0", port=8000, threaded=True)
