from itertools import count

from fastapi import FastAPI
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
