#!/bin/sh
# Reference solution: applied inside the workspace; idempotent, no network.
set -e
cd "${WORKSPACE:-/workspace}"
cat > main.py <<'EOF'
from itertools import count

from fastapi import FastAPI, HTTPException, Response
from pydantic import BaseModel

app = FastAPI(title="notes")

_ids = count(1)
NOTES: dict[int, dict] = {}


class NoteIn(BaseModel):
    title: str
    body: str = ""


@app.get("/health")
def health():
    return {"status": "ok"}


@app.post("/notes", status_code=201)
def create_note(note: NoteIn):
    note_id = next(_ids)
    NOTES[note_id] = {"id": note_id, "title": note.title, "body": note.body}
    return NOTES[note_id]


@app.get("/notes")
def list_notes():
    return list(NOTES.values())


@app.get("/notes/{note_id}")
def get_note(note_id: int):
    if note_id not in NOTES:
        raise HTTPException(status_code=404, detail="note not found")
    return NOTES[note_id]


@app.delete("/notes/{note_id}", status_code=204)
def delete_note(note_id: int):
    if NOTES.pop(note_id, None) is None:
        raise HTTPException(status_code=404, detail="note not found")
    return Response(status_code=204)
EOF
