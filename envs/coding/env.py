"""`agentsim/Coding-v0`: develop a backend service in a sandbox; graded by hidden HTTP tests at submit.

    env = gymnasium.make("agentsim/Coding-v0", task="example-kv-delete")   # a shipped task's name
    obs, info = env.reset(seed=0)
    env.step("bash[ls]"); env.step("view[server.py]"); env.step("submit[]")

Actions are documented in `envs/coding/tools.py` (text and JSON forms; `CodingEnv.tool_schemas()`
gives OpenAI tool definitions, also in the reset info as `tools`). At `submit[]` the workspace is
graded (`envs/coding/grading.py`): reward 1 only when every hidden test passes, `info["grade"]`
holds the per-test outcomes, and `info["workspace_diff"]` the files the episode changed since reset
(`envs/coding/workspace_diff.py`: unified diffs, bounded, binary files named).

One sandbox per env, started at the first reset and reused: reset stops every process in it,
empties its /tmp and $HOME, and restores the task's pristine workspace (an incremental restore).
`snapshot()` / `restore()` cover the workspace's files and the env's state (bash session,
counters); processes are not part of a snapshot: `restore()` stops every process in the sandbox,
so a service the agent had started must be started again (grading starts its own anyway).
"""

from __future__ import annotations

import inspect
import os
import posixpath
import re
import secrets
import shlex
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import gymnasium as gym

from envs.coding import deps as deps_mod
from envs.coding.grading import GRADER_MOUNT, Grade, Stash, grade
from envs.coding.published import PublishedTask, UnreproducibleTaskError, check_reproducible
from envs.coding.published.images import BuiltImage
from envs.coding.published.verifier import PublishedGrade, run_verifier
from envs.coding.published.workspace import materialize, oracle_script, solution_yaml_script
from envs.coding.sandbox import (
    BackendUnavailableError,
    FileTooLargeError,
    Limits,
    NotRegularFileError,
    PathEscapeError,
    Sandbox,
    SandboxError,
    SnapshotTooLargeError,
    WorkspaceSnapshot,
    make_sandbox,
    unavailable_reason,
)
from envs.coding.serving import SERVER
from envs.coding.tasks import dataset_dirs, load_task, load_task_dir, shipped_tasks
from envs.coding.tasks.model import AnyTask
from envs.coding.tools import (
    SUBMIT,
    TEMPLATES,
    WORKSPACE,
    ActionError,
    Session,
    format_exec,
    parse_action,
    session_script,
    split_session,
    tool_call_action,
    tool_schemas,
)
from envs.coding.tools import create as tool_create
from envs.coding.tools import str_replace as tool_str_replace
from envs.coding.tools import view as tool_view
from envs.coding.workspace_diff import WorkspaceDiff, workspace_diff
from envs.contract import MAX_ACTION_CHARS, action_problem, episode_over_message, invalid_action_message
from envs.registry import register_env
from envs.spaces import FreeText

DEFAULT_TASK = "example-kv-delete"
ALL_TASKS = "all"  # task="all": every shipped task, the one of an episode chosen by its seed (sorted names, seed % n)
MAX_OBS_CHARS = 100_000
ENV_BACKENDS = ("bwrap", "docker")
LOCAL_REFUSED = (
    "the coding env does not run on the 'local' backend: its commands would run on the host as this user "
    "(root here), with no /workspace or /grader (tasks, the grader and reference solutions use those paths), "
    "no private loopback (the task's service port would clash with the host's and other envs'), no way to turn "
    "the network off, and no way to stop every process of the agent before grading, so grades would not be "
    "trustworthy. Use backend='bwrap' (or 'docker' where an engine runs); to try commands by hand without "
    "isolation, use envs.coding.sandbox.make_sandbox('local', allow_unsafe=True)"
)
# The oracle (the scripted expert's solution run) is recognised by this exact command. The key is
# per process, so a recorded trajectory cannot replay it elsewhere, and an agent cannot guess it.
ORACLE_KEY = secrets.token_hex(8)
ORACLE_DIR = f"oracle-{ORACLE_KEY}"
ORACLE_ACTION = f"bash[bash {GRADER_MOUNT}/{ORACLE_DIR}/solve.sh]"
CHECK_ACTION = "bash[ls]"


@dataclass(frozen=True)
class _State:
    session: Session = Session()
    steps: int = 0  # valid actions this episode
    oracle_step: int | None = None  # when the oracle ran
    ending: tuple[bool, bool] | None = None  # (terminated, truncated) once the episode ended
    grade: Grade | PublishedGrade | None = None
    changes: WorkspaceDiff | None = None  # the workspace against reset's, taken at submit


@dataclass(frozen=True)
class CodingSnapshot:
    """The workspace's files and the env's state (not processes: see the module doc)."""

    task: str
    workspace: WorkspaceSnapshot
    state: _State


# every tool call (bash / view / create / str_replace) counts, up to submit
@register_env("coding", id="agentsim/Coding-v0", max_episode_steps=50, server=SERVER)
class CodingEnv(gym.Env):
    """A backend-coding task in a sandbox (see the module doc and docs/coding.md)."""

    metadata = {"render_modes": []}
    steps_block = True  # steps wait on sandboxed processes: async loops run them in a thread (envs.capabilities)

    def __init__(
        self,
        task: str = DEFAULT_TASK,
        backend: str = "bwrap",
        limits: dict[str, Any] | Limits | None = None,
        command_timeout: float = 60.0,
        output_chars: int = 8_000,
        network: bool | None = None,
        port_wait_s: float = 20.0,
        allow_task_path: bool = True,
        approximate: bool = False,
    ) -> None:
        """`task`: a shipped task's name (or, when `allow_task_path`, a task folder's path: operators
        only; the env server never allows it). `backend`: bwrap (default) or docker (`local` is refused:
        `LOCAL_REFUSED` says why).
        `limits`: the sandbox's `Limits` (or a dict of its fields; the task's `storage_mb`, when it has one, is
        the workspace's disk quota unless `disk_bytes` is given). `command_timeout`: wall time of one
        bash call. `output_chars`: what a tool's observation keeps (head and tail). `network`:
        default the task's `allow_internet`. A task folder holding task folders is a dataset: episode seed s
        plays its s-th task (sorted names, modulo), as with task="all". `approximate`: run a published task
        whose Dockerfile declares steps bwrap cannot reproduce (refused otherwise, naming them)."""
        if backend == "local":
            raise ValueError(LOCAL_REFUSED)
        if backend not in ENV_BACKENDS:
            raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(ENV_BACKENDS)}")
        self.approximate = approximate
        self.backend = backend
        self._pool: dict[str, Path] | None = self._task_pool(task, allow_task_path, approximate, backend)
        self._all: list[str] | None = sorted(self._pool) if self._pool is not None else None
        self.task: AnyTask = self._load(self._all[0] if self._all else task, allow_task_path)
        self._limits = limits if isinstance(limits, Limits) else Limits(**(limits or {}))
        self.command_timeout = min(command_timeout, self._limits.timeout_s)
        self.output_chars = output_chars
        self._network = network
        self.network = self.task.allow_internet if network is None else network
        self.port_wait_s = port_wait_s
        self.observation_space = FreeText(MAX_OBS_CHARS)
        self.action_space = FreeText(MAX_ACTION_CHARS, min_length=1)
        self.instruction = self._instruction()
        self._sb: Sandbox | None = None
        self._stash: Stash | None = None
        self._deps: deps_mod.Deps | None = None
        self._pristine: WorkspaceSnapshot | None = None
        self._image: tuple[str, BuiltImage] | None = None  # (task, its image on the engine)
        self._state = _State()
        self._started_episode = False
        self._closed = False  # once closed, no sandbox is made again (a step still running in a thread)

    # --- setup -------------------------------------------------------------------------------------
    @classmethod
    def tasks_of(cls, kwargs: Mapping[str, Any]) -> list[str]:
        """The tasks an env made with these kwargs plays, in seed order, without a sandbox (`trials=` counts them):
        a dataset's checked as the constructor checks them; TypeError for a kwarg the constructor does not take."""
        bound = inspect.signature(cls).bind(**kwargs)
        bound.apply_defaults()
        a = bound.arguments
        pool = cls._task_pool(a["task"], a["allow_task_path"], a["approximate"], a["backend"])
        return sorted(pool) if pool is not None else [load_task(a["task"], allow_path=a["allow_task_path"]).name]

    @staticmethod
    def _task_pool(task: str, allow_path: bool, approximate: bool, backend: str) -> dict[str, Path] | None:
        """The tasks episodes choose from: every shipped task (task="all"), a dataset folder's, or None. A
        dataset's published tasks are checked up front: every unreproducible one is named at once."""
        if task == ALL_TASKS:
            return shipped_tasks()
        folders = dataset_dirs(task) if allow_path and ("/" in task or Path(task).is_dir()) else []
        if not folders:
            return None
        pool: dict[str, Path] = {}
        refused: list[UnreproducibleTaskError] = []
        for folder in folders:
            t = load_task_dir(folder)
            if t.name in pool:
                raise ValueError(f"dataset {task}: task name {t.name!r} is used by {pool[t.name]} and {folder}")
            pool[t.name] = folder
            if isinstance(t, PublishedTask):
                try:
                    check_reproducible(t, approximate, backend)
                except UnreproducibleTaskError as e:
                    refused.append(e)
        if refused:
            raise UnreproducibleTaskError.many(refused)
        return pool

    def task_names(self) -> list[str]:
        """Every task this env plays, in seed order (one unless task="all" or a dataset folder)."""
        return list(self._all) if self._all is not None else [self.task.name]

    def task_for_seed(self, seed: int) -> str:
        """The task an episode reset with this seed plays."""
        return self._all[seed % len(self._all)] if self._all else self.task.name

    def _load(self, name: str, allow_path: bool) -> AnyTask:
        """A task by name (of the pool, when there is one) or path; a published one must be reproducible
        here (or `approximate`): on bwrap, or on an engine that builds its Dockerfile (backend='docker')."""
        t = load_task_dir(self._pool[name]) if self._pool is not None else load_task(name, allow_path=allow_path)
        if isinstance(t, PublishedTask):
            check_reproducible(t, self.approximate, self.backend)
        return t

    @property
    def workdir(self) -> str:
        """Where the agent's workspace is shown: /workspace, or a published task's WORKDIR."""
        return self.task.workdir if isinstance(self.task, PublishedTask) else WORKSPACE

    def _mounts(self) -> dict[str, str]:
        """Where a published task's workspace shows ({sandbox path: folder in the workspace}); {} otherwise."""
        return self.task.environment.mounts() if isinstance(self.task, PublishedTask) else {}

    def _in_workspace(self, path: str) -> str:
        """A path the agent gave under the WORKDIR (or another root), as the file tools know it (/workspace/...)."""
        for dest, sub in sorted(self._mounts().items(), key=lambda m: -len(m[0])):
            if path == dest or path.startswith(dest + "/"):
                return posixpath.join(WORKSPACE, sub, path[len(dest) + 1 :]).rstrip("/")
        return path

    def _shown(self, text: str) -> str:
        """A file tool's message with the path as the agent knows it (its first line names the file)."""
        mounts = self._mounts()
        if not mounts:
            return text
        head, sep, rest = text.partition("\n")
        for dest, sub in sorted(mounts.items(), key=lambda m: -len(m[1])):
            inner = posixpath.join(WORKSPACE, sub).rstrip("/")
            head = re.sub(re.escape(inner) + r"(?=/|\b|$)", dest, head)
        return head + sep + rest

    def _roots_intact(self, sb: Sandbox) -> bool:
        """Each root folder the sandbox shows (`/data` -> workspace/data) is still the workspace's folder; a
        removed and re-created one leaves a stale mount, and the sandbox is then made afresh."""
        roots = {d: sub for d, sub in self._mounts().items() if sub}
        if not roots:
            return True
        res = sb.exec("stat -c %i " + " ".join(shlex.quote(d) for d in roots), timeout=10)
        try:
            host = [str(os.stat(sb.workspace / sub, follow_symlinks=False).st_ino) for sub in roots.values()]
        except OSError:
            return False
        return res.exit_code == 0 and res.stdout.split() == host

    def _switch(self, name: str) -> None:
        """Make `name` the current task (task="all" or a dataset): its own sandbox, deps and pristine workspace."""
        if name == self.task.name:
            return
        self._close_sandbox()
        self.task = self._load(name, allow_path=False)
        self.network = self.task.allow_internet if self._network is None else self._network
        self.instruction = self._instruction()

    @property
    def limits(self) -> Limits:
        """The sandbox's limits: the caller's, with the task's `storage_mb` as the workspace's disk quota and, on
        Docker, its `memory_mb` as the container's memory, unless the caller set those limits itself."""
        lim, mb = self._limits, self.task.storage_mb
        update: dict[str, int] = {}
        if mb is not None and "disk_bytes" not in lim.model_fields_set:
            update["disk_bytes"] = mb * 1024**2
        if self.backend == "docker" and self.task.memory_mb and "memory_bytes" not in lim.model_fields_set:
            # a container's memory is a total (cgroup), as Harbor means it; under bwrap memory_bytes is each
            # process's address space, which V8 and CPython reserve far beyond what they use: left as is
            update["memory_bytes"] = self.task.memory_mb * 1024**2
        return lim.model_copy(update=update) if update else lim

    def sandbox_options(self) -> dict[str, Any]:
        """What the backend is given besides the limits: the task's CPUs as the container's quota (Docker)."""
        if self.backend == "docker" and self.task.cpus:
            return {"cpus": float(self.task.cpus)}
        return {}

    def _instruction(self) -> str:
        t = self.task
        if isinstance(t, PublishedTask):
            return self._published_instruction(t)
        how = (
            f"Write /workspace/start.sh: `sh start.sh`, run in /workspace, must start the service in the foreground "
            f"on port {t.service_port} (the variable SERVICE_PORT holds it)."
            if t.env_aware
            else f"The service is started with `{t.start_command}` in /workspace and listens on port {t.service_port}."
        )
        return (
            f"{t.instruction}\n\n{how} The repository is in /workspace. Call submit[] when done: hidden tests will run."
        )

    @staticmethod
    def _published_instruction(t: PublishedTask) -> str:
        how = ""
        if t.service is not None and t.service.env_aware:
            how = (
                f" Write {t.workdir}/start.sh: `sh start.sh`, run in {t.workdir}, must start the service in the "
                f"foreground on port {t.service.port} (the variable SERVICE_PORT holds it)."
            )
        elif t.service is not None:
            how = f" The service is started with `{t.service.start_command}` in {t.workdir} and listens on port {t.service.port}."
        return f"{t.instruction}\n\nYou are in {t.workdir}.{how} Call submit[] when done: the task's tests will run."

    def _ensure_sandbox(self) -> Sandbox:
        if self._sb is not None and not self._sb.closed:
            return self._sb
        if self._closed:
            raise SandboxError("the env is closed: its sandbox is gone")
        reason = unavailable_reason(self.backend)
        if reason is not None:
            others = [b for b in ENV_BACKENDS if b != self.backend and unavailable_reason(b) is None]
            hint = f"; available here: backend={others[0]!r}" if others else "; no isolating backend runs here"
            raise BackendUnavailableError(f"the {self.backend} backend is unavailable on this machine: {reason}{hint}")
        self._deps = deps_mod.prepare(self.task.requirements, self.task.npm)
        self._stash = stash = Stash(GRADER_MOUNT)
        where: dict[str, Any] = {"workdir": self.workdir, "mounts": self._mounts()} if self._mounts() else {}
        published = isinstance(self.task, PublishedTask)
        if published and self.backend == "docker":
            where["image"] = self._task_image().tag
        sb = make_sandbox(
            self.backend,
            limits=self.limits,
            network=self.network,
            start=False,
            ro_binds={**self._deps.ro_binds(), **stash.ro_binds()},
            **self.sandbox_options(),
            **where,
        )
        if isinstance(self.task, PublishedTask) and self.backend == "docker":
            from envs.coding.published.images import extract_roots
            from envs.coding.sandbox.engine import client

            c = client()
            try:
                extract_roots(c, where["image"], self._mounts(), sb.workspace)
            finally:
                c.close()
        elif isinstance(self.task, PublishedTask):
            materialize(self.task, sb.workspace)
        else:
            shutil.copytree(self.task.repo_dir, sb.workspace, dirs_exist_ok=True, symlinks=True)
        try:
            stash.give_to(sb.owner())  # readable by the sandbox's user only
            sb.start()
        except BaseException:
            stash.remove()
            sb.close()
            raise
        self._sb = sb
        if self._closed:  # closed (a run stopping) while this sandbox started in a step's thread: one of the
            self._close_sandbox()  # two sees the other's write and closes it
            raise SandboxError("the env was closed while its sandbox started")
        self._pristine = sb.snapshot()
        return sb

    def _task_image(self) -> BuiltImage:
        """The published task's image on the engine, built (or reused) from its Dockerfile (`images.py`)."""
        from envs.coding.published.images import build_task_image
        from envs.coding.sandbox.engine import client

        assert isinstance(self.task, PublishedTask)
        if self._image is None or self._image[0] != self.task.name:
            c = client(timeout=1800)
            try:
                self._image = (self.task.name, build_task_image(c, self.task))
            finally:
                c.close()
        return self._image[1]

    @property
    def sandbox(self) -> Sandbox:
        return self._ensure_sandbox()

    def exec_env(self) -> dict[str, str]:
        """The environment of every command: the task's venv / node_modules on PATH."""
        assert self._deps is not None
        if isinstance(self.task, PublishedTask) and self.backend == "docker":
            # the image's own userland first (what its RUN steps installed), the task venv's extras after it
            image = self._task_image().env
            deps = self._deps.env()
            venv_bins = deps["PATH"].removesuffix(deps_mod.SYSTEM_PATH).strip(":")
            path = ":".join(p for p in (image.get("PATH", deps_mod.SYSTEM_PATH), venv_bins) if p)
            return {**image, **{k: v for k, v in deps.items() if k != "VIRTUAL_ENV"}, "PATH": path}
        if isinstance(self.task, PublishedTask):
            return {**self.task.environment.env, **self._deps.env()}
        return self._deps.env()

    def _clean(self) -> None:
        """No process of the agent survives (fork bombs, services and respawners included): the sandbox's
        every process is killed and it restarts with a fresh /tmp and $HOME (`Sandbox.kill_all`)."""
        self.sandbox.kill_all()

    # --- gymnasium ----------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        if self._all is not None:
            index = seed if seed is not None else int(self.np_random.integers(len(self._all)))
            self._switch(self._all[index % len(self._all)])
        sb = self.sandbox
        self._clean()
        assert self._pristine is not None
        sb.restore(self._pristine)
        if not self._roots_intact(sb):  # the agent removed a root's folder: its mount went stale
            self._close_sandbox()
            sb = self.sandbox
        self._state = _State(session=Session(cwd=self.workdir))
        self._started_episode = True
        info = self._info()
        info["tools"] = tool_schemas()
        obs = (
            f"{self.instruction}\n\nActions: bash[<command>], view[<path>], create[<path>] then the content on the "
            "next lines, str_replace[<path>] then a SEARCH/REPLACE block, submit[]."
        )
        return obs, info

    def _info(self) -> dict[str, Any]:
        over = self._state.ending is not None
        info: dict[str, Any] = {
            "instruction": self.instruction,
            "available_actions": [] if over else [SUBMIT],
            "action_templates": [] if over else list(TEMPLATES),
            "task": self.task.name,
            "cwd": self._state.session.cwd,
            "steps": self._state.steps,
        }
        if self._state.grade is not None:
            info["grade"] = self._state.grade.model_dump()
        if self._state.changes is not None:
            info["workspace_diff"] = self._state.changes.model_dump()
        return info

    def _invalid(self, problem: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        info = self._info()
        info["error"] = msg = invalid_action_message(problem, info["available_actions"], info["action_templates"])
        return msg, 0.0, False, False, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if not self._started_episode:
            raise RuntimeError("call reset() before step()")
        if self._state.ending is not None:
            info = self._info()
            info["error"] = msg = episode_over_message("the work was submitted and graded")
            return msg, 0.0, self._state.ending[0], self._state.ending[1], info
        problem = action_problem(action)
        if problem is not None:
            return self._invalid(problem)
        if action.strip() == ORACLE_ACTION:
            return self._oracle()
        try:
            call = parse_action(action)
            obs = self._run(call.tool, call.args)
        except (ActionError, PathEscapeError, NotRegularFileError, FileTooLargeError) as e:
            return self._invalid(self._shown(str(e)))
        except OSError as e:  # the agent's files can be anything: a bad one is the agent's error, not ours
            return self._invalid(self._shown(f"{e.strerror or e} ({e.filename or 'the file'})"))
        if call.tool == "submit":
            assert self._state.grade is not None
            return obs, self._state.grade.reward, True, False, self._info()
        self._state = replace(self._state, steps=self._state.steps + 1)
        return obs, 0.0, False, False, self._info()

    def _run(self, tool: str, args: dict[str, Any]) -> str:
        sb, cwd = self.sandbox, self._in_workspace(self._state.session.cwd)
        if tool == "bash":
            return self._bash(args["command"])
        if "path" in args:
            args = {**args, "path": self._in_workspace(args["path"])}
        if tool == "view":
            return self._shown(tool_view(sb, args["path"], cwd, args.get("start"), args.get("end"), self.output_chars))
        if tool == "create":
            return self._shown(tool_create(sb, args["path"], cwd, args["content"]))
        if tool == "str_replace":
            return self._shown(tool_str_replace(sb, args["path"], cwd, args["old"], args["new"]))
        assert tool == "submit"
        changes = self.workspace_diff()  # before grading, which runs the service in the workspace
        g = self.grade()
        self._state = replace(self._state, steps=self._state.steps + 1, ending=(True, False), grade=g, changes=changes)
        lines = [f"{t.outcome.upper():8} {t.name}" for t in g.tests]
        if isinstance(g, PublishedGrade) and set(g.rewards) - {"reward"}:
            lines.append("rewards: " + ", ".join(f"{k}={v:g}" for k, v in sorted(g.rewards.items())))
        return f"Submitted. Hidden tests: {g.passed}/{g.total} passed, reward {g.reward:g}.\n" + "\n".join(lines)

    def _bash(self, command: str) -> str:
        res = self.sandbox.exec(
            session_script(self._state.session, command), timeout=self.command_timeout, env=self.exec_env()
        )
        out, session = split_session(res.stdout, self._state.session)
        self._state = replace(self._state, session=session)
        return format_exec(out, res, self.command_timeout, self.output_chars)

    def workspace_diff(self) -> WorkspaceDiff:
        """The files changed since the episode's reset (the task's pristine workspace), as bounded diffs."""
        assert self._pristine is not None
        try:
            now = self.sandbox.snapshot()
        except SnapshotTooLargeError as e:
            return WorkspaceDiff(changed=0, files=[], truncated=True, note=f"no diff: {e}")
        return workspace_diff(self._pristine, now)

    def grade(self) -> Grade | PublishedGrade:
        """Grade the workspace now (the episode goes on; `submit[]` is what ends it)."""
        if isinstance(self.task, PublishedTask):
            return self._verify_published(self.task, self.sandbox)
        return grade(self.task, self.sandbox, self.exec_env(), port_wait_s=self.port_wait_s)

    def _verify_published(self, task: PublishedTask, sb: Sandbox) -> PublishedGrade:
        """The task's own verifier, in a one-shot sandbox over the workspace, once every agent process is gone."""
        assert self._deps is not None
        sb.kill_all()
        return run_verifier(
            task,
            sb.workspace,
            limits=self.limits,
            env=self.exec_env(),
            ro_binds=self._deps.ro_binds(),
            approximated=[s.describe() for s in task.environment.not_reproduced(self.backend)],
            port_wait_s=self.port_wait_s,
            backend=self.backend,
            image=self._task_image().tag if self.backend == "docker" else None,
        )

    # --- the scripted expert ---------------------------------------------------------------------------
    def _oracle(self) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Run the reference solution in /workspace: copied into the stash for this call only."""
        sb, stash = self.sandbox, self._stash
        assert stash is not None
        if isinstance(self.task, PublishedTask):
            return self._published_oracle(self.task, sb, stash)
        script = self.task.solution_script
        src = script.parent if self.task.layout == "harbor" else script
        inner = stash.put(src, ORACLE_DIR)
        try:
            cmd = f"cd /workspace && bash {inner}/{script.name}"
            res = sb.exec(cmd, timeout=self.task.verifier_timeout_sec, env=self.exec_env())
        finally:
            stash.clear()
        obs = format_exec(res.stdout, res, self.task.verifier_timeout_sec, self.output_chars)
        self._state = replace(self._state, steps=self._state.steps + 1, oracle_step=self._state.steps + 1)
        return obs, 0.0, False, False, self._info()

    def _published_oracle(
        self, task: PublishedTask, sb: Sandbox, stash: Stash
    ) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if task.solution is None:
            obs = f"[task {task.name!r} publishes no solution: there is no oracle to run]"
        else:
            if task.solution.suffix == ".yaml":
                tmp = Path(tempfile.mkdtemp(prefix="agentsim-oracle-"))
                (tmp / "solution-yaml.sh").write_text(solution_yaml_script(task.solution))
                inner = stash.put(tmp, ORACLE_DIR)
                shutil.rmtree(tmp)
            else:
                inner = stash.put(task.solution, ORACLE_DIR)
            try:
                timeout = task.agent_timeout_sec or task.verifier_timeout_sec
                res = sb.exec(oracle_script(task, inner), timeout=timeout, env=self.exec_env())
            finally:
                stash.clear()
            obs = format_exec(res.stdout, res, timeout, self.output_chars)
        self._state = replace(self._state, steps=self._state.steps + 1, oracle_step=self._state.steps + 1)
        return obs, 0.0, False, False, self._info()

    def expert_action(self) -> str:
        """Look (`bash[ls]`), run the reference solution (the oracle), look again, submit."""
        s = self._state
        if s.ending is not None:
            return SUBMIT
        if s.steps == 0:
            return CHECK_ACTION
        if s.oracle_step is None:
            return ORACLE_ACTION
        if s.steps == s.oracle_step:
            return CHECK_ACTION
        return SUBMIT

    # --- tools for tool-calling brains --------------------------------------------------------------------
    @staticmethod
    def tool_schemas() -> list[dict[str, Any]]:
        """OpenAI function-tool definitions of the actions (a call maps to an action with `tool_call_action`)."""
        return tool_schemas()

    @staticmethod
    def tool_call_action(name: str, arguments: dict[str, Any]) -> str:
        return tool_call_action(name, arguments)

    # --- snapshot / restore ----------------------------------------------------------------------------------
    def snapshot(self) -> CodingSnapshot:
        return CodingSnapshot(self.task.name, self.sandbox.snapshot(), self._state)

    def restore(self, snap: CodingSnapshot) -> None:
        if snap.task != self.task.name:
            if self._all is None or snap.task not in self._all:
                raise ValueError(f"a snapshot of task {snap.task!r} cannot be restored into {self.task.name!r}")
            self._switch(snap.task)
        self._clean()
        self.sandbox.restore(snap.workspace)
        if not self._roots_intact(self.sandbox):
            self._close_sandbox()
            self.sandbox.restore(snap.workspace)
        self._state = snap.state
        self._started_episode = True

    def close(self) -> None:
        self._closed = True
        self._close_sandbox()
        super().close()

    def _close_sandbox(self) -> None:
        if self._sb is not None:
            try:
                self._sb.close()
            except SandboxError:
                pass
            self._sb = None
        if self._stash is not None:
            self._stash.remove()
            self._stash = None
        self._pristine = None
