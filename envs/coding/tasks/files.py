"""Reading a task folder's config files, for both loaders (our tasks in `tasks/loader.py`, published Harbor /
Terminal-Bench tasks in `published/formats.py`): one syntax check and one validation error per bad file, naming the
file and the key."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from envs.coding.tasks.errors import TaskFormatError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

HARBOR_CONFIG = "task.toml"
TB_CONFIG = "task.yaml"


class Loose(BaseModel):
    """A section of a task file: unknown keys tolerated (the formats grow; what we do not read is not an error)."""

    model_config = ConfigDict(extra="ignore")


def validate(model: type[BaseModel], data: object, file: Path, prefix: str = "") -> Any:
    """`model` from `data`, or a TaskFormatError naming the file and the first bad key."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(p) for p in (prefix, *err["loc"]) if p != "") or "(top level)"
        raise TaskFormatError(file, field, err["msg"]) from None


def require(path: Path, what: str, *, directory: bool = False) -> Path:
    """`path` resolved, or a TaskFormatError saying the file (or folder) `what` is missing."""
    ok = path.is_dir() if directory else path.is_file()
    if not ok:
        raise TaskFormatError(path, what, f"missing {'folder' if directory else 'file'}")
    return path.resolve()


def read_harbor_config(folder: Path) -> dict[str, Any]:
    """`task.toml` as a table, or a TaskFormatError with the TOML syntax error."""
    file = folder / HARBOR_CONFIG
    try:
        return tomllib.loads(file.read_text())
    except tomllib.TOMLDecodeError as e:
        raise TaskFormatError(file, "(syntax)", str(e)) from None


def read_tb_config(folder: Path) -> dict[str, Any]:
    """`task.yaml` as a mapping, or a TaskFormatError with the YAML syntax error or the wrong top level."""
    file = folder / TB_CONFIG
    try:
        raw = yaml.safe_load(file.read_text())
    except yaml.YAMLError as e:
        raise TaskFormatError(file, "(syntax)", str(e)) from None
    if not isinstance(raw, Mapping):
        raise TaskFormatError(file, "(top level)", "expected a mapping of keys")
    return dict(raw)
