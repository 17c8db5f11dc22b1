"""`CodingTask`: one pydantic model for a coding task, whichever layout it was loaded from.

Two layouts load into it (`envs.coding.tasks.loader`):

- Harbor: `task.toml` (`[metadata]`, `[agent]`, `[verifier]`, `[environment]`), `instruction.md`,
  `environment/` (Dockerfile + `app/`, the repository), `tests/test.sh` + `tests/test_*.py`,
  `solution/solve.sh`.
- Terminal-Bench 1: `task.yaml`, `Dockerfile`, `run-tests.sh`, `tests/`, `solution.sh`, and the
  repository folder.

agentsim's own keys (Harbor: in `[metadata]`; Terminal-Bench: at the top level of task.yaml):
`start_command`, `service_port`, `env_aware`, `requirements`, `npm` (see `AgentsimKeys`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

START_SCRIPT = "start.sh"  # what the agent writes in an env_aware task
ENV_AWARE_START = f"sh {START_SCRIPT}"


class AgentsimKeys(BaseModel):
    """The keys agentsim adds to a task's config (unknown keys of the file are tolerated elsewhere)."""

    model_config = ConfigDict(extra="ignore")

    start_command: str | None = Field(
        default=None, description="shell command, run in /workspace, that starts the service in the foreground"
    )
    service_port: int = Field(ge=1, le=65535, description="the port the service listens on (127.0.0.1)")
    env_aware: bool = Field(default=False, description="the agent must write start.sh itself")
    requirements: list[str] = Field(default_factory=list, description="pip requirement strings")
    npm: list[str] = Field(default_factory=list, description="npm packages")

    @model_validator(mode="after")
    def _start(self) -> AgentsimKeys:
        if self.env_aware:
            if self.start_command not in (None, ENV_AWARE_START):
                raise ValueError(f"an env_aware task starts with {ENV_AWARE_START!r}, not {self.start_command!r}")
            self.start_command = ENV_AWARE_START
        elif not self.start_command:
            raise ValueError("start_command is required unless env_aware = true")
        return self


class CodingTask(BaseModel):
    """A loaded, checked task. Paths are absolute and exist (the loader checks them)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    layout: Literal["harbor", "terminal-bench"]
    path: Path  # the task folder
    instruction: str = Field(min_length=1)
    difficulty: str | None = None
    category: str | None = None
    tags: list[str] = Field(default_factory=list)
    # agentsim keys
    start_command: str
    service_port: int = Field(ge=1, le=65535)
    env_aware: bool = False
    requirements: list[str] = Field(default_factory=list)
    npm: list[str] = Field(default_factory=list)
    # limits and environment
    agent_timeout_sec: float | None = None
    verifier_timeout_sec: float = 600.0
    cpus: float | None = None
    memory_mb: int | None = None
    storage_mb: int | None = None  # the workspace's disk quota (the env's Limits.disk_bytes) when set
    allow_internet: bool = False
    docker_image: str | None = None
    # files
    repo_dir: Path  # copied to /workspace
    tests_dir: Path  # hidden until grading
    test_files: list[str] = Field(min_length=1)  # test_*.py under tests_dir
    test_script: Path  # tests/test.sh or run-tests.sh (for Harbor / Terminal-Bench's own harness)
    solution_script: Path  # solution/solve.sh or solution.sh (the oracle; hidden from the agent)


if TYPE_CHECKING:
    from envs.coding.published.model import PublishedTask

AnyTask = Union[CodingTask, "PublishedTask"]  # an agentsim task, or a published one (envs/coding/published)
