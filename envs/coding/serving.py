"""What a coding client may set through the env server: a shipped task by name, never a path."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from envs.serving import ClientKwargs, ServerEntry


class CodingKwargs(ClientKwargs):
    """What a client may set when creating a coding session: a shipped task by name (never a path,
    which would let a client make the server run any folder's scripts), an isolating backend."""

    task: str | None = Field(None, max_length=200, description="a shipped task's name, or 'all' (by seed)")
    backend: Literal["bwrap", "docker"] = "bwrap"
    command_timeout: float = Field(60.0, gt=0, le=600)
    output_chars: int = Field(8_000, ge=200, le=100_000)
    port_wait_s: float = Field(20.0, gt=0, le=120)

    @field_validator("task")
    @classmethod
    def _shipped(cls, v: str | None) -> str | None:
        from envs.coding.tasks import shipped_tasks

        if v is not None and v != "all" and v not in shipped_tasks():
            raise ValueError(f"unknown task {v!r}; choose 'all' or one of {sorted(shipped_tasks())}")
        return v

    def to_env(self) -> dict[str, Any]:
        """The constructor kwargs; a client-chosen task is looked up by name only."""
        out = super().to_env()
        if "task" in out:
            out["allow_task_path"] = False
        return out


SERVER = ServerEntry(CodingKwargs)
