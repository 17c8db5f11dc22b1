import os
import sqlite3

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel, Field

DATABASE_PATH = os.environ.get("DATABASE_PATH")
if not DATABASE_PATH:
    raise RuntimeError("DATABASE_PATH is not set")

app = FastAPI(title="contacts")


def db():
    conn = sqlite3.connect(DATABASE_PATH, timeout=10)
    conn.row_factory = sqlite3.Row
    return conn


class ContactIn(BaseModel):
    name: str = Field(min_length=1)
    email: str = Field(pattern=r"^[^@\s]+@[^@\s]+$")


@app.get("/health")
def health():
    with db() as conn:
        version = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0]
    return {"status": "ok", "schema_version": version}


@app.post("/contacts", status_code=201)
def create_contact(contact: ContactIn):
    with db() as conn:
        cur = conn.execute("INSERT INTO contacts (name, email) VALUES (?, ?)", (contact.name, contact.email))
        row = conn.execute("SELECT id, name, email FROM contacts WHERE id = ?", (cur.lastrowid,)).fetchone()
    return dict(row)


@app.get("/contacts")
def list_contacts():
    with db() as conn:
        rows = conn.execute("SELECT id, name, email FROM contacts ORDER BY id").fetchall()
    return [dict(r) for r in rows]


@app.get("/contacts/{contact_id}")
def get_contact(contact_id: int):
    with db() as conn:
        row = conn.execute("SELECT id, name, email FROM contacts WHERE id = ?", (contact_id,)).fetchone()
    if row is None:
        raise HTTPException(status_code=404, detail="contact not found")
    return dict(row)
