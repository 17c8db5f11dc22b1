"""`TaskFormatError`: a task folder that does not load (shared by the native and the published loaders)."""

from __future__ import annotations

from pathlib import Path


class TaskFormatError(ValueError):
    """A task folder that does not load: `file` and `field` say where."""

    def __init__(self, file: Path | str, field: str, message: str) -> None:
        self.file, self.field = str(file), field
        super().__init__(f"{file}: {field}: {message}" if field else f"{file}: {message}")
