import os
import sqlite3

from flask import Flask, jsonify, request

DB_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "catalog.db")
app = Flask(__name__)


def get_db():
    conn = sqlite3.connect(DB_PATH)
    conn.row_factory = sqlite3.Row
    return conn


def init_db():
    with get_db() as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS products (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price REAL NOT NULL)"
        )
        if conn.execute("SELECT COUNT(*) FROM products").fetchone()[0] == 0:
            conn.executemany(
                "INSERT INTO products (id, name, price) VALUES (?, ?, ?)",
                [(i, f"product-{i:02d}", round(1.5 * i, 2)) for i in range(1, 24)],
            )


@app.get("/health")
def health():
    return jsonify(status="ok")


@app.get("/products")
def list_products():
    limit = int(request.args.get("limit", 10))
    offset = int(request.args.get("offset", 0))
    with get_db() as conn:
        total = conn.execute("SELECT COUNT(*) FROM products").fetchone()[0]
        rows = conn.execute(
            "SELECT id, name, price FROM products ORDER BY id LIMIT ? OFFSET ?",
            (limit, offset * limit),
        ).fetchall()
    next_offset = offset + limit
    next_link = f"/products?limit={limit}&offset={next_offset}" if next_offset <= total else None
    return jsonify(items=[dict(r) for r in rows], total=total, limit=limit, offset=offset, next=next_link)


init_db()

if __name__ == "__main__":
    app.run(host="0.0.0.0", port=8000, threaded=True)
