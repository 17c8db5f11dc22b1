"""`PublishedTask`: a Harbor or Terminal-Bench 1 task read as its authors published it (docs/coding_tasks.md).

Beside agentsim's own tasks (`envs.coding.tasks.model.CodingTask`: our keys, /workspace, our grader), a
published task keeps its format's meaning: the workspace is the Dockerfile's final `WORKDIR`, the verifier is
the task's own `tests/test.sh` / `run-tests.sh`, and the reward is what that verifier says. What bubblewrap
cannot reproduce of the declared environment is listed in `EnvironmentPlan.skipped`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Layout = Literal["harbor", "terminal-bench"]
Verdict = Literal["reward-file", "pytest"]  # Harbor: /logs/verifier/reward.{json,txt}; TB1: its pytest parser


class Service(BaseModel):
    """agentsim's optional extension: a service the verifier starts before the task's tests run."""

    model_config = ConfigDict(frozen=True)

    start_command: str = Field(min_length=1)
    port: int = Field(ge=1, le=65535)
    env_aware: bool = False  # the agent writes start.sh itself


class FileCopy(BaseModel):
    """One `COPY`/`ADD` source, as it lands in the workspace."""

    model_config = ConfigDict(frozen=True)

    source: Path  # on the host, inside the build context
    dest: str  # path inside the workspace (relative; "" is the workspace itself; see EnvironmentPlan.roots)
    into: bool  # True: a folder's contents go into `dest`; False: `dest` is the file's (or folder's) new name


class SkippedStep(BaseModel):
    """A step of the declared environment that bubblewrap does not reproduce, and why."""

    model_config = ConfigDict(frozen=True)

    where: str  # "environment/Dockerfile:7" or "docker-compose.yaml: services.db"
    step: str  # the instruction, shortened
    why: str
    engine: bool = False  # a container engine reproduces it (a Dockerfile step: the image is built for real)

    def describe(self) -> str:
        return f"{self.where}: {self.step} ({self.why})"


class EnvironmentPlan(BaseModel):
    """What the sandbox reproduces of the task's Dockerfile / compose file, and what it does not."""

    model_config = ConfigDict(frozen=True)

    dockerfile: Path | None
    context: Path | None = None  # the build context COPY sources are read from
    dockerignore: list[str] = Field(default_factory=list)  # its .dockerignore patterns
    base_image: str | None  # FROM (the host's /usr stands in for it)
    workdir: str  # the final WORKDIR: where the agent's shell starts
    # where the workspace shows, {sandbox path: folder in the workspace}: {} = the workspace is the WORKDIR;
    # else one folder per top-level path the Dockerfile writes ({"/app": "app", "/data": "data"})
    roots: dict[str, str] = Field(default_factory=dict)
    # roots the task writes to that its Dockerfile does not create (`/output`): empty writable folders
    undeclared: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)  # ENV / ARG defaults / compose environment
    copies: list[FileCopy] = Field(default_factory=list)
    kept_out: list[str] = Field(default_factory=list)  # hidden files a `COPY .` would have brought in
    skipped: list[SkippedStep] = Field(default_factory=list)

    def mounts(self) -> dict[str, str]:
        """{sandbox path: workspace-relative folder} (the sandbox's `mounts`)."""
        return dict(self.roots) or {self.workdir: ""}

    def not_reproduced(self, backend: str = "bwrap") -> list[SkippedStep]:
        """The declared steps `backend` does not reproduce (an engine builds the Dockerfile itself)."""
        return [s for s in self.skipped if backend == "bwrap" or not s.engine]

    def unreproduced(self, backend: str = "bwrap") -> str:
        return "\n".join(f"  - {s.describe()}" for s in self.not_reproduced(backend))


class OracleStep(BaseModel):
    """One entry of Terminal-Bench's `solution.yaml` (keys as Terminal-Bench documents them)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    command: str
    min_timeout_sec: float = Field(default=0.0, ge=0)
    max_timeout_sec: float = Field(default=180.0, gt=0)
    block: bool = False
    append_enter: bool = True


class PublishedTask(BaseModel):
    """A loaded published task. Paths are absolute and exist (the loader checks them)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    layout: Layout
    path: Path
    instruction: str = Field(min_length=1)
    difficulty: str | None = None
    category: str | None = None
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, object] = Field(default_factory=dict)  # the format's metadata, as written
    service: Service | None = None
    requirements: list[str] = Field(default_factory=list)  # agentsim extension: pip requirements
    npm: list[str] = Field(default_factory=list)  # agentsim extension
    agent_timeout_sec: float | None = None
    verifier_timeout_sec: float = 600.0
    cpus: float | None = None
    memory_mb: int | None = None
    storage_mb: int | None = None
    allow_internet: bool = False
    docker_image: str | None = None
    environment: EnvironmentPlan
    tests_dir: Path | None  # copied to /tests at verification time only
    test_script: Path  # tests/test.sh (Harbor) or run-tests.sh (Terminal-Bench)
    verdict: Verdict
    verifier_env: dict[str, str] = Field(default_factory=dict)
    solution: Path | None = None  # solution/ (Harbor), solution.sh or solution.yaml (Terminal-Bench)
    solution_env: dict[str, str] = Field(default_factory=dict)

    @property
    def workdir(self) -> str:
        return self.environment.workdir
