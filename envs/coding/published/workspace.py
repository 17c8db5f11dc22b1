"""A published task's start state and oracle: the workspace its Dockerfile copies, the solution as a script."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

from envs.coding.published.dockerfile import dockerignored
from envs.coding.published.formats import read_solution_yaml
from envs.coding.published.model import PublishedTask

HOW = "Run it anyway with approximate=true (env.kwargs.approximate=true), or on a container engine."


class UnreproducibleTaskError(ValueError):
    """The task declares steps bwrap cannot reproduce; `approximate=True` runs it without them."""

    def __init__(self, task: PublishedTask, message: str | None = None, backend: str = "bwrap") -> None:
        self.task = task
        self.backend = backend
        super().__init__(
            message
            or f"task {task.name!r} ({task.path}) declares steps {_WHO[backend]} cannot reproduce, so its start "
            f"state would differ from the published one:\n{task.environment.unreproduced(backend)}\n{_how(backend)}"
        )

    @classmethod
    def many(cls, errors: list[UnreproducibleTaskError]) -> UnreproducibleTaskError:
        """One error naming every refused task of a dataset."""
        if len(errors) == 1:
            return errors[0]
        backend = errors[0].backend
        parts = [f"{e.task.name!r} ({e.task.path}):\n{e.task.environment.unreproduced(backend)}" for e in errors]
        head = f"{len(errors)} tasks declare steps {_WHO[backend]} cannot reproduce:\n"
        return cls(errors[0].task, head + "\n".join(parts) + "\n" + _how(backend), backend)


_WHO = {"bwrap": "a bwrap sandbox", "docker": "the container engine"}


def _how(backend: str) -> str:
    return HOW if backend == "bwrap" else "Run it anyway with approximate=true (env.kwargs.approximate=true)."


def check_reproducible(task: PublishedTask, approximate: bool, backend: str = "bwrap") -> None:
    """Refuse (`UnreproducibleTaskError`) a task with steps `backend` skips unless `approximate`."""
    if task.environment.not_reproduced(backend) and not approximate:
        raise UnreproducibleTaskError(task, backend=backend)


def hidden_paths(task: PublishedTask) -> set[Path]:
    """What the agent must never see: tests, the test script, the solution (a `COPY .` would bring them)."""
    found = {task.test_script, *(p for p in (task.tests_dir, task.solution) if p is not None)}
    found |= {task.path / n for n in ("solution.sh", "solution.yaml", "solution", "run-tests.sh", "tests")}
    return {p.resolve() for p in found}


def materialize(task: PublishedTask, workspace: Path) -> None:
    """Copy the Dockerfile's COPY/ADD sources into `workspace` (the WORKDIR, or one folder per root), hidden
    files left out."""
    hidden = hidden_paths(task)
    plan = task.environment

    def ignored(path: Path) -> bool:
        if path.resolve() in hidden:
            return True
        if plan.context is None or not plan.dockerignore or not path.resolve().is_relative_to(plan.context):
            return False
        return dockerignored(str(path.resolve().relative_to(plan.context)), plan.dockerignore)

    def ignore(folder: str, names: list[str]) -> set[str]:
        return {n for n in names if n == "__pycache__" or ignored(Path(folder) / n)}

    for sub in plan.roots.values():
        (workspace / sub).mkdir(parents=True, exist_ok=True)
    for c in task.environment.copies:
        if c.source.resolve() in hidden:
            continue
        dest = workspace / c.dest if c.dest else workspace
        if c.source.is_dir():
            shutil.copytree(c.source, dest, dirs_exist_ok=True, symlinks=True, ignore=ignore)
        else:
            target = dest / c.source.name if c.into or dest.is_dir() else dest
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(c.source, target)


def oracle_script(task: PublishedTask, inner: str) -> str:
    """The shell command that runs the task's solution, copied into the sandbox at `inner`, in the WORKDIR."""
    assert task.solution is not None
    cd = f"cd {shlex.quote(task.workdir)}"
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in task.solution_env.items())
    prefix = f"env {env} " if env else ""
    if task.solution.is_dir():  # Harbor: solution/solve.sh
        return f"{cd} && {prefix}bash {inner}/solve.sh"
    if task.solution.suffix == ".sh":
        return f"{cd} && {prefix}bash {inner}/{task.solution.name}"
    return f"{cd} && {prefix}bash {inner}/solution-yaml.sh"


def solution_yaml_script(path: Path) -> str:
    """Terminal-Bench's `solution.yaml` as one bash script: the commands run in order in one shell, as typed
    into the task's terminal (a command typed without Enter is left out: it is a keystroke, not a command)."""
    lines = ["#!/bin/bash", f"# from {path.name}"]
    for step in read_solution_yaml(path):
        if not step.append_enter:
            lines.append(f"# left out (typed without Enter): {step.command!r}")
            continue
        lines.append(step.command)
        if step.min_timeout_sec:
            lines.append(f"sleep {step.min_timeout_sec:g}")
    return "\n".join(lines) + "\n"
