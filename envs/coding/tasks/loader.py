"""Load a task folder (Harbor or Terminal-Bench 1 layout) into a `CodingTask`.

A broken folder raises `TaskFormatError` naming the file and the field (`task.toml: metadata.service_port:
...`). Shipped tasks live under `envs/coding/tasks/` (`examples/*`, `suite/*`): any folder holding a
`task.toml` or a `task.yaml` is a task, named by its metadata `name` (default: the folder's name).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pydantic import Field

from envs.coding.tasks.errors import TaskFormatError
from envs.coding.tasks.files import (
    HARBOR_CONFIG,
    TB_CONFIG,
    Loose,
    read_harbor_config,
    read_tb_config,
    require,
    validate,
)
from envs.coding.tasks.model import AgentsimKeys, AnyTask, CodingTask

TASKS_ROOT = Path(__file__).resolve().parent
NOT_REPO = {"tests", "solution", "environment", "__pycache__"}  # TB1: folders that are not the repository


# --- the files' sections (what each layout may say; unknown keys tolerated) --------------------


class _HarborMetadata(AgentsimKeys):
    name: str | None = None
    difficulty: str | None = None
    category: str | None = None
    tags: list[str] = Field(default_factory=list)


class _Timeout(Loose):
    timeout_sec: float | None = Field(default=None, gt=0)


class _HarborEnvironment(Loose):
    cpus: float | None = Field(default=None, gt=0)
    memory_mb: int | None = Field(default=None, gt=0)
    storage_mb: int | None = Field(default=None, gt=0)
    allow_internet: bool | None = None
    docker_image: str | None = None


class _HarborConfig(Loose):
    metadata: _HarborMetadata
    agent: _Timeout = Field(default_factory=_Timeout)
    verifier: _Timeout = Field(default_factory=_Timeout)
    environment: _HarborEnvironment = Field(default_factory=_HarborEnvironment)


class _TBConfig(AgentsimKeys):
    instruction: str = Field(min_length=1)
    name: str | None = None
    difficulty: str | None = None
    category: str | None = None
    tags: list[str] = Field(default_factory=list)
    max_agent_timeout_sec: float | None = Field(default=None, gt=0)
    max_test_timeout_sec: float | None = Field(default=None, gt=0)
    repo_dir: str | None = None  # agentsim: the repository folder, when the folder holds more than one
    allow_internet: bool = False
    cpus: float | None = Field(default=None, gt=0)
    memory_mb: int | None = Field(default=None, gt=0)
    storage_mb: int | None = Field(default=None, gt=0)  # agentsim: Harbor's [environment] storage_mb


def _test_files(tests: Path) -> list[str]:
    found = sorted(p.name for p in tests.glob("test_*.py") if p.is_file())
    if not found:
        raise TaskFormatError(tests, "tests", "no test_*.py file (the hidden pytest tests)")
    return found


# --- the two layouts -----------------------------------------------------------------------------


def _load_harbor(folder: Path) -> CodingTask:
    file = folder / HARBOR_CONFIG
    raw = read_harbor_config(folder)
    if not isinstance(raw.get("metadata"), Mapping):
        raise TaskFormatError(file, "metadata", "the [metadata] table is missing")
    cfg: _HarborConfig = validate(_HarborConfig, raw, file)
    instruction_file = require(folder / "instruction.md", "instruction")
    instruction = instruction_file.read_text().strip()
    if not instruction:
        raise TaskFormatError(instruction_file, "instruction", "empty")
    env_dir = require(folder / "environment", "environment", directory=True)
    tests = require(folder / "tests", "tests", directory=True)
    m, env = cfg.metadata, cfg.environment
    return CodingTask(
        name=m.name or folder.name,
        layout="harbor",
        path=folder.resolve(),
        instruction=instruction,
        difficulty=m.difficulty,
        category=m.category,
        tags=m.tags,
        start_command=m.start_command or "",
        service_port=m.service_port,
        env_aware=m.env_aware,
        requirements=m.requirements,
        npm=m.npm,
        agent_timeout_sec=cfg.agent.timeout_sec,
        verifier_timeout_sec=cfg.verifier.timeout_sec or 600.0,
        cpus=env.cpus,
        memory_mb=env.memory_mb,
        storage_mb=env.storage_mb,
        allow_internet=bool(env.allow_internet),
        docker_image=env.docker_image,
        repo_dir=require(env_dir / "app", "environment/app", directory=True),
        tests_dir=tests,
        test_files=_test_files(tests),
        test_script=require(tests / "test.sh", "tests/test.sh"),
        solution_script=require(folder / "solution" / "solve.sh", "solution/solve.sh"),
    )


def _load_terminal_bench(folder: Path) -> CodingTask:
    file = folder / TB_CONFIG
    raw = read_tb_config(folder)
    cfg: _TBConfig = validate(_TBConfig, raw, file)
    if cfg.repo_dir is not None:
        repo = require(folder / cfg.repo_dir, "repo_dir", directory=True)
    else:
        dirs = sorted(p for p in folder.iterdir() if p.is_dir() and p.name not in NOT_REPO and p.name[0] != ".")
        if len(dirs) != 1:
            names = ", ".join(p.name for p in dirs) or "none"
            raise TaskFormatError(file, "repo_dir", f"cannot tell the repository folder (found: {names}); set repo_dir")
        repo = dirs[0].resolve()
    tests = require(folder / "tests", "tests", directory=True)
    return CodingTask(
        name=cfg.name or folder.name,
        layout="terminal-bench",
        path=folder.resolve(),
        instruction=cfg.instruction.strip(),
        difficulty=cfg.difficulty,
        category=cfg.category,
        tags=cfg.tags,
        start_command=cfg.start_command or "",
        service_port=cfg.service_port,
        env_aware=cfg.env_aware,
        requirements=cfg.requirements,
        npm=cfg.npm,
        agent_timeout_sec=cfg.max_agent_timeout_sec,
        verifier_timeout_sec=cfg.max_test_timeout_sec or 600.0,
        cpus=cfg.cpus,
        memory_mb=cfg.memory_mb,
        storage_mb=cfg.storage_mb,
        allow_internet=cfg.allow_internet,
        docker_image=None,
        repo_dir=repo,
        tests_dir=tests,
        test_files=_test_files(tests),
        test_script=require(folder / "run-tests.sh", "run-tests.sh"),
        solution_script=require(folder / "solution.sh", "solution.sh"),
    )


def load_task_dir(folder: str | Path) -> AnyTask:
    """Load one task folder, whichever layout; `TaskFormatError` names the file and field if broken.

    An agentsim task (our `service_port`, WORKDIR /workspace) loads as a `CodingTask`; any other Harbor or
    Terminal-Bench task loads as published (`envs.coding.published`: its WORKDIR, its own verifier)."""
    from envs.coding.published import is_agentsim_native, load_published

    folder = Path(folder)
    if not folder.is_dir():
        raise TaskFormatError(folder, "", "not a folder")
    if not (folder / HARBOR_CONFIG).is_file() and not (folder / TB_CONFIG).is_file():
        raise TaskFormatError(
            folder,
            "",
            f"neither {HARBOR_CONFIG} (Harbor) nor {TB_CONFIG} (Terminal-Bench) found, nor any task folder under it "
            "(a dataset)",
        )
    if not is_agentsim_native(folder):
        return load_published(folder)
    if (folder / HARBOR_CONFIG).is_file():
        return _load_harbor(folder)
    if (folder / TB_CONFIG).is_file():
        return _load_terminal_bench(folder)
    raise TaskFormatError(folder, "", f"neither {HARBOR_CONFIG} (Harbor) nor {TB_CONFIG} (Terminal-Bench) found")


def task_dirs(root: Path = TASKS_ROOT) -> list[Path]:
    """Every task folder under `root` (a folder with task.toml or task.yaml), sorted."""
    found = {p.parent for pattern in (HARBOR_CONFIG, TB_CONFIG) for p in root.rglob(pattern)}
    return sorted(p for p in found if "__pycache__" not in p.parts)


def _shipped() -> dict[str, Path]:
    """Read afresh on every call (a few ms): tasks may be added while a process runs."""
    names: dict[str, Path] = {}
    for folder in task_dirs():
        name = load_task_dir(folder).name
        if name in names:
            raise TaskFormatError(folder, "name", f"task name {name!r} also used by {names[name]}")
        names[name] = folder
    return names


def shipped_tasks() -> dict[str, Path]:
    """Shipped task names -> folders (names are unique; a clash is an error)."""
    return dict(_shipped())


def dataset_dirs(folder: str | Path) -> list[Path]:
    """A dataset: every task folder under `folder` (which holds no task itself); [] when it is a task."""
    folder = Path(folder)
    if not folder.is_dir() or (folder / HARBOR_CONFIG).is_file() or (folder / TB_CONFIG).is_file():
        return []
    return task_dirs(folder)


def load_task(name_or_path: str | Path, *, allow_path: bool = True) -> AnyTask:
    """A shipped task by name, or (when `allow_path`, operators only) a task folder by path."""
    shipped = _shipped()
    if isinstance(name_or_path, str) and name_or_path in shipped:
        return load_task_dir(shipped[name_or_path])
    if allow_path and ("/" in str(name_or_path) or Path(name_or_path).is_dir()):
        return load_task_dir(name_or_path)
    raise KeyError(f"unknown coding task {str(name_or_path)!r}; shipped tasks: {', '.join(sorted(shipped))}")
