import os
import sqlite3
import threading

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel

app = FastAPI(title="tasks")

DB_PATH = os.environ.get("TASKS_DB", ":memory:")
LOCK = threading.Lock()
conn = sqlite3.connect(DB_PATH, check_same_thread=False)
conn.row_factory = sqlite3.Row
conn.execute(
    "CREATE TABLE IF NOT EXISTS tasks ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL, done INTEGER NOT NULL DEFAULT 0)"
)


class TaskIn(BaseModel):
    title: str


class TaskPatch(BaseModel):
    done: bool


def row_to_task(row):
    return {"id": row["id"], "title": row["title"], "done": bool(row["done"])}


@app.get("/health")
def health():
    return {"status": "ok"}


@app.post("/tasks", status_code=201)
def create_task(task: TaskIn):
    with LOCK:
        cur = conn.execute("INSERT INTO tasks (title) VALUES (?)", (task.title,))
        row = conn.execute("SELECT * FROM tasks WHERE id = ?", (cur.lastrowid,)).fetchone()
    return row_to_task(row)


@app.get("/tasks")
def list_tasks():
    with LOCK:
        rows = conn.execute("SELECT * FROM tasks ORDER BY id").fetchall()
    return [row_to_task(r) for r in rows]


@app.get("/tasks/{task_id}")
def get_task(task_id: int):
    with LOCK:
        row = conn.execute("SELECT * FROM tasks WHERE id = ?", (task_id,)).fetchone()
    if row is None:
        raise HTTPException(status_code=404, detail="task not found")
    return row_to_task(row)


@app.patch("/tasks/{task_id}")
def update_task(task_id: int, patch: TaskPatch):
    with LOCK:
        cur = conn.execute("UPDATE tasks SET done = ? WHERE id = ?", (int(patch.done), task_id))
        if cur.rowcount == 0:
            raise HTTPException(status_code=404, detail="task not found")
        row = conn.execute("SELECT * FROM tasks WHERE id = ?", (task_id,)).fetchone()
    return row_to_task(row)
