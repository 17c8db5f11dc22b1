"""Load a Harbor or Terminal-Bench 1 task folder as published into a `PublishedTask`.

The two formats' documented keys are read with our own pydantic models: PyPI's `harbor` (0.26) and
`terminal-bench` (0.2.18) declare `Requires-Python >=3.12` (this project runs 3.11) and pull in their whole
runners (litellm, supabase, fastmcp, ...), so their task models cannot be imported here. The models below follow
their schemas (Harbor's `TaskConfig`: `[task]`, `[metadata]`, `[agent]`, `[verifier]`, `[environment]`,
`[solution]`, every section optional; Terminal-Bench's `Task` and `TerminalCommand`) and tolerate unknown keys.

agentsim's keys are optional extensions: Harbor `[metadata]` / Terminal-Bench top level `start_command`,
`service_port`, `env_aware` (a service the verifier starts), `requirements`, `npm`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, model_validator

from envs.coding.published import dockerfile as df
from envs.coding.published.model import EnvironmentPlan, OracleStep, PublishedTask, Service, SkippedStep
from envs.coding.published.writable import task_scripts, writable_tops
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

NATIVE_WORKDIR = "/workspace"
TEST_DIR = "/tests"  # where both formats copy the tests at verification time
LOGS_DIR = "/logs"
# the harnesses' compose variables, as their harness would set them
HARNESS_ENV = {
    "T_BENCH_TEST_DIR": TEST_DIR,
    "T_BENCH_CONTAINER_LOGS_PATH": f"{LOGS_DIR}/verifier",
    "T_BENCH_CONTAINER_AGENT_LOGS_PATH": f"{LOGS_DIR}/agent",
    "TEST_DIR": TEST_DIR,
    "CONTEXT_DIR": ".",
}


class Extensions(Loose):
    """agentsim's optional keys."""

    start_command: str | None = None
    service_port: int | None = Field(default=None, ge=1, le=65535)
    env_aware: bool = False
    requirements: list[str] = Field(default_factory=list)
    npm: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _service(self) -> Extensions:
        if self.service_port is None and (self.start_command or self.env_aware):
            raise ValueError("start_command / env_aware describe a service: service_port is required with them")
        if self.service_port is not None and not self.start_command and not self.env_aware:
            raise ValueError("a service (service_port) needs start_command, unless env_aware = true")
        return self

    def service(self) -> Service | None:
        if self.service_port is None:
            return None
        cmd = "sh start.sh" if self.env_aware else (self.start_command or "")
        return Service(start_command=cmd, port=self.service_port, env_aware=self.env_aware)


# --- Harbor ----------------------------------------------------------------------------------------


class HarborPackage(Loose):
    name: str | None = None
    version: str | None = None
    description: str | None = None
    keywords: list[str] = Field(default_factory=list)


class HarborTimeout(Loose):
    timeout_sec: float | None = Field(default=None, gt=0)
    env: dict[str, str] = Field(default_factory=dict)


class HarborEnvironment(Loose):
    docker_image: str | None = None
    cpus: float | None = Field(default=None, gt=0)
    memory_mb: int | None = Field(default=None, gt=0)
    storage_mb: int | None = Field(default=None, gt=0)
    gpus: int | None = Field(default=None, ge=0)
    env: dict[str, str] = Field(default_factory=dict)
    workdir: str | None = None
    allow_internet: bool | None = None


class HarborSolution(Loose):
    env: dict[str, str] = Field(default_factory=dict)


class HarborConfig(Loose):
    """Harbor's task.toml: every section optional (Harbor's documented `TaskConfig`)."""

    task: HarborPackage | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    agent: HarborTimeout = Field(default_factory=HarborTimeout)
    verifier: HarborTimeout = Field(default_factory=HarborTimeout)
    environment: HarborEnvironment = Field(default_factory=HarborEnvironment)
    solution: HarborSolution = Field(default_factory=HarborSolution)
    steps: list[Any] | None = None


# --- Terminal-Bench 1 ------------------------------------------------------------------------------


class TBDescription(Loose):
    key: str = "base"
    description: str


class TBConfig(Extensions):
    """Terminal-Bench 1's task.yaml (its `Task` model; `descriptions` is the older form of `instruction`)."""

    instruction: str | None = None
    descriptions: list[TBDescription] = Field(default_factory=list)
    author_name: str | None = None
    author_email: str | None = None
    difficulty: str | None = None
    category: str | None = None
    tags: list[str] = Field(default_factory=list)
    parser_name: str = "pytest"
    max_agent_timeout_sec: float = Field(default=360.0, gt=0)
    max_test_timeout_sec: float = Field(default=60.0, gt=0)
    run_tests_in_same_shell: bool = False


def _final_workdir(dockerfile: Path) -> str | None:
    wd: str | None = None
    try:
        for ins in df.instructions(dockerfile.read_text()):
            if ins.keyword == "FROM":
                wd = None
            elif ins.keyword == "WORKDIR":
                wd = str(Path(wd or "/", ins.args.strip().strip("\"'")))
    except OSError:
        return None
    return wd


def is_agentsim_native(folder: Path) -> bool:
    """An agentsim task (our keys, the repository at /workspace, our grader) rather than a published one:
    it names a `service_port` and its Dockerfile's final WORKDIR is /workspace (or it has no Dockerfile)."""
    if (folder / HARBOR_CONFIG).is_file():
        meta = read_harbor_config(folder).get("metadata")
        port = meta.get("service_port") if isinstance(meta, Mapping) else None
        dockerfile = folder / "environment" / "Dockerfile"
    else:
        port = read_tb_config(folder).get("service_port")
        dockerfile = folder / "Dockerfile"
    if port is None:
        return False
    return not dockerfile.is_file() or _final_workdir(dockerfile) == NATIVE_WORKDIR


# --- the environment -------------------------------------------------------------------------------


def _plan(
    folder: Path,
    env_dir: Path,
    compose_names: tuple[str, ...],
    hidden: set[Path],
    *,
    workdir: str | None,
    docker_image: str | None,
    extra_env: Mapping[str, str],
    writes: list[str],
) -> EnvironmentPlan:
    """Dockerfile (or the compose file's main service) -> what the sandbox reproduces."""
    compose = next(
        (env_dir / n for n in ("docker-compose.yaml", "docker-compose.yml", "compose.yaml") if (env_dir / n).is_file()),
        None,
    )
    skipped: list[SkippedStep] = []
    env: dict[str, str] = {}
    dockerfile = env_dir / "Dockerfile"
    context = env_dir
    try:
        if compose is not None:
            main = df.read_compose(compose, compose_names, HARNESS_ENV)
            skipped += main.skipped
            env.update({k: v for k, v in main.env.items() if v != ""})
            workdir = workdir or main.working_dir
            if main.dockerfile is not None:
                dockerfile, context = main.dockerfile, main.context
            elif main.image:
                docker_image = main.image
                dockerfile = env_dir / "(none)"
        if not dockerfile.is_file():
            label = _label(compose or env_dir, folder)
            if docker_image:
                skipped.append(
                    SkippedStep(where=label, step=f"image {docker_image}", why="a prebuilt image is not reproduced")
                )
            else:
                raise TaskFormatError(env_dir, "Dockerfile", "missing file (no Dockerfile and no image to run)")
            plan = df.plan_from(
                df.empty_build(label, context), workdir=workdir, extra_env={**env, **extra_env}, writes=writes
            )
        else:
            b = df.read_dockerfile(dockerfile, context, file_label=_label(dockerfile, folder), hidden=hidden)
            plan = df.plan_from(b, workdir=workdir, extra_env={**env, **extra_env}, writes=writes)
    except df.DockerfileError as e:
        raise TaskFormatError(dockerfile if dockerfile.is_file() else env_dir, "Dockerfile", str(e)) from None
    return plan.model_copy(
        update={"dockerfile": dockerfile if dockerfile.is_file() else None, "skipped": skipped + plan.skipped}
    )


ONLINE = re.compile(r"^\s*(?:sudo\s+)?(apt-get|apt|apk|curl|wget|pip3?|uv|uvx|npm|yarn)\b")


def online_steps(script: Path, folder: Path) -> list[SkippedStep]:
    """Lines of the verifier script that fetch from the internet (the formats' templates install curl and uv,
    then run pytest through `uv run` / `uvx`). Offline, the verifier serves `uv` / `uvx` with the task venv's
    pytest (`verifier.py`) and the installs fail harmlessly; each such line is listed."""
    found: list[SkippedStep] = []
    for n, line in enumerate(script.read_text(errors="replace").splitlines(), 1):
        m = ONLINE.match(line)
        if m and not line.lstrip().startswith("#"):
            found.append(
                SkippedStep(
                    where=f"{_label(script, folder)}:{n}",
                    step=line.strip()[:120],
                    why=f"{m.group(1)}: "
                    + (
                        "served offline by the task venv's pytest"
                        if m.group(1) in ("uv", "uvx")
                        else "fetches from the internet (no network here)"
                    ),
                )
            )
    return found


def _with_verifier(plan: EnvironmentPlan, script: Path, folder: Path) -> EnvironmentPlan:
    steps = online_steps(script, folder)
    return plan.model_copy(update={"skipped": [*plan.skipped, *steps]}) if steps else plan


def _label(path: Path, folder: Path) -> str:
    try:
        return str(path.resolve().relative_to(folder.resolve()))
    except ValueError:
        return str(path)


def _optional(path: Path) -> Path | None:
    return path.resolve() if path.exists() else None


# --- the two formats -------------------------------------------------------------------------------


def load_harbor(folder: Path) -> PublishedTask:
    file = folder / HARBOR_CONFIG
    raw = read_harbor_config(folder)
    cfg: HarborConfig = validate(HarborConfig, raw, file)
    if cfg.steps:
        raise TaskFormatError(file, "steps", "multi-step tasks ([[steps]]) are not supported; use one-step tasks")
    ext: Extensions = validate(Extensions, cfg.metadata, file, "metadata")
    instruction_file = require(folder / "instruction.md", "instruction")
    instruction = instruction_file.read_text().strip()
    if not instruction:
        raise TaskFormatError(instruction_file, "instruction", "empty")
    env_dir = folder / "environment"
    if not env_dir.is_dir():
        raise TaskFormatError(env_dir, "environment", "missing folder (the Dockerfile or compose file lives there)")
    tests = folder / "tests"
    test_script = require(tests / "test.sh", "tests/test.sh")
    solution = _optional(folder / "solution")
    if solution is not None and not (solution / "solve.sh").is_file():
        raise TaskFormatError(folder / "solution", "solution/solve.sh", "missing file (the oracle's entry point)")
    e = cfg.environment
    writes = writable_tops(instruction, task_scripts(solution, tests))
    plan = _plan(
        folder,
        env_dir,
        ("main",),
        set(),
        workdir=e.workdir,
        docker_image=e.docker_image,
        extra_env=e.env,
        writes=writes,
    )
    plan = _with_verifier(plan, test_script, folder)
    if e.gpus:
        plan = plan.model_copy(
            update={
                "skipped": [
                    *plan.skipped,
                    SkippedStep(where=HARBOR_CONFIG, step=f"gpus = {e.gpus}", why="no GPU in a bwrap sandbox"),
                ]
            }
        )
    meta = cfg.metadata
    name = (cfg.task.name if cfg.task and cfg.task.name else None) or meta.get("name") or folder.name
    tags = meta.get("tags") or (cfg.task.keywords if cfg.task else [])
    return PublishedTask(
        name=str(name),
        layout="harbor",
        path=folder.resolve(),
        instruction=instruction,
        difficulty=_str(meta.get("difficulty")),
        category=_str(meta.get("category")),
        tags=[str(t) for t in tags] if isinstance(tags, list) else [],
        metadata=meta,
        service=ext.service(),
        requirements=ext.requirements,
        npm=ext.npm,
        agent_timeout_sec=cfg.agent.timeout_sec,
        verifier_timeout_sec=cfg.verifier.timeout_sec or 600.0,
        cpus=e.cpus,
        memory_mb=e.memory_mb,
        storage_mb=e.storage_mb,
        allow_internet=bool(e.allow_internet),
        docker_image=e.docker_image,
        environment=plan,
        tests_dir=tests.resolve(),
        test_script=test_script,
        verdict="reward-file",
        verifier_env=cfg.verifier.env,
        solution=solution,
        solution_env=cfg.solution.env,
    )


def load_terminal_bench(folder: Path) -> PublishedTask:
    file = folder / TB_CONFIG
    cfg: TBConfig = validate(TBConfig, read_tb_config(folder), file)
    instruction = cfg.instruction or next((d.description for d in cfg.descriptions if d.key == "base"), None)
    if not instruction or not instruction.strip():
        raise TaskFormatError(file, "instruction", "missing or empty (the task's instruction to the agent)")
    if cfg.parser_name != "pytest":
        raise TaskFormatError(file, "parser_name", f"{cfg.parser_name!r} is not supported; only 'pytest' (the default)")
    test_script = require(folder / "run-tests.sh", "run-tests.sh")
    solution = _optional(folder / "solution.sh") or _optional(folder / "solution.yaml")
    if solution is not None and solution.suffix == ".yaml":
        read_solution_yaml(solution)  # a broken one fails at load, not when the oracle runs
    tests = _optional(folder / "tests")
    hidden = {p for p in (tests, test_script, solution, folder / "solution.sh", folder / "solution.yaml") if p}
    writes = writable_tops(instruction, task_scripts(solution, test_script, tests))
    plan = _plan(
        folder, folder, ("client", "main"), hidden, workdir=None, docker_image=None, extra_env={}, writes=writes
    )
    plan = _with_verifier(plan, test_script, folder)
    return PublishedTask(
        name=folder.name,
        layout="terminal-bench",
        path=folder.resolve(),
        instruction=instruction.strip(),
        difficulty=cfg.difficulty,
        category=cfg.category,
        tags=cfg.tags,
        metadata={k: v for k, v in (("author_name", cfg.author_name), ("author_email", cfg.author_email)) if v},
        service=cfg.service(),
        requirements=cfg.requirements,
        npm=cfg.npm,
        agent_timeout_sec=cfg.max_agent_timeout_sec,
        verifier_timeout_sec=cfg.max_test_timeout_sec,
        environment=plan,
        tests_dir=tests,
        test_script=test_script,
        verdict="pytest",
        verifier_env={"TEST_DIR": TEST_DIR},
        solution=solution,
    )


def read_solution_yaml(path: Path) -> list[OracleStep]:
    """Terminal-Bench's `solution.yaml`: a list of terminal commands."""
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise TaskFormatError(path, "(syntax)", str(e)) from None
    if not isinstance(raw, list) or not raw:
        raise TaskFormatError(path, "(top level)", "expected a non-empty list of {command: ...} entries")
    return [validate(OracleStep, item, path, str(i)) for i, item in enumerate(raw)]


def _str(v: object) -> str | None:
    return None if v is None else str(v)


def load_published(folder: str | Path) -> PublishedTask:
    """A published task folder (Harbor: task.toml; Terminal-Bench 1: task.yaml)."""
    folder = Path(folder)
    if (folder / HARBOR_CONFIG).is_file():
        return load_harbor(folder)
    if (folder / TB_CONFIG).is_file():
        return load_terminal_bench(folder)
    raise TaskFormatError(folder, "", f"neither {HARBOR_CONFIG} (Harbor) nor {TB_CONFIG} (Terminal-Bench) found")
