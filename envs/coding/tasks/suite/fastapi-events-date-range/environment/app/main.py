import os
import sqlite3
from datetime import date, timedelta

from fastapi import FastAPI, HTTPException, Query

DB_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "events.db")
app = FastAPI(title="events")

SEED = [
    ("Kick-off", "2024-03-01T09:00:00"),
    ("Design review", "2024-03-15T14:30:00"),
    ("Sprint demo", "2024-03-31T16:00:00"),
    ("Retro", "2024-03-31T23:59:59"),
    ("Planning", "2024-04-01T00:00:00"),
    ("All hands", "2024-04-12T10:00:00"),
]


def db():
    conn = sqlite3.connect(DB_PATH)
    conn.row_factory = sqlite3.Row
    return conn


def init_db():
    with db() as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY, title TEXT NOT NULL, starts_at TEXT NOT NULL)")
        if conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 0:
            conn.executemany("INSERT INTO events (title, starts_at) VALUES (?, ?)", SEED)


init_db()


@app.get("/health")
def health():
    return {"status": "ok"}


@app.get("/events")
def list_events(start: str = Query(alias="from"), end: str = Query(alias="to")):
    with db() as conn:
        rows = conn.execute(
            "SELECT id, title, starts_at FROM events WHERE starts_at BETWEEN ? AND ? ORDER BY starts_at",
            (start, end),
        ).fetchall()
    return {"from": start, "to": end, "events": [dict(r) for r in rows]}
