"""Grading a coding task: start the service, wait for its port, run the hidden tests, parse them.

`grade(task, sandbox, stash, env)`:

1. stop every process the agent left in the sandbox (`stop_processes`), so the service under
   test is the one started now, from the workspace as the agent left it;
2. start the service in the background: the task's `start_command` (for env_aware tasks,
   `sh start.sh`, which the agent wrote) in /workspace, with `SERVICE_PORT` / `PORT` set;
3. wait (bounded) until 127.0.0.1:port accepts a connection;
4. copy the hidden tests in only now, into the stash (a folder mounted read-only outside the
   workspace: `/grader` in a bwrap or Docker sandbox), and run `pytest -rA` on them with the task's venv;
5. parse the per-test outcomes from pytest's summary; reward 1 only when every test passed;
6. stop the service, empty the stash.

The result (`Grade`) holds nothing time-dependent (pytest's durations are masked), so the same
workspace grades the same way twice.
"""

from __future__ import annotations

import re
import shlex
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from envs.coding.sandbox import Sandbox
from envs.coding.tasks.model import CodingTask

GRADER_MOUNT = "/grader"  # where the stash appears inside the sandbox (bwrap, docker)
PORT_WAIT_S = 20.0
LOG_CHARS = 2_000
SERVICE_LOG = "/tmp/.agentsim-service.log"
SERVICE_PID = "/tmp/.agentsim-service.pid"

Outcome = Literal["passed", "failed", "error", "skipped", "xfailed", "xpassed"]
_SUMMARY = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S+)", re.M)
_OUTCOME: dict[str, Outcome] = {
    "PASSED": "passed",
    "FAILED": "failed",
    "ERROR": "error",
    "SKIPPED": "skipped",
    "XFAIL": "xfailed",
    "XPASS": "xpassed",
}


class TestOutcome(BaseModel):
    """One hidden test's result, named `file::test` (path-independent)."""

    __test__ = False  # not a pytest class
    model_config = ConfigDict(frozen=True)

    name: str
    outcome: Outcome


class Grade(BaseModel):
    """Reward 1 only when every hidden test passed; the fraction and each test's outcome beside it."""

    model_config = ConfigDict(frozen=True)

    reward: float
    passed: int
    total: int
    pass_fraction: float
    tests: list[TestOutcome]
    service_started: bool
    log: str  # excerpt of pytest's summary (durations masked), plus the service's log if it did not start


class Stash:
    """A host folder the sandbox sees read-only at `inner` (empty except while grading / the oracle runs).

    Mounted with the sandbox's `ro_binds` (bwrap and docker) at /grader; the host folder's changes show live."""

    def __init__(self, inner: str | None = None) -> None:
        self.host = Path(tempfile.mkdtemp(prefix="agentsim-stash-"))
        self.host.chmod(0o755)  # bwrap binds it as an unprivileged uid
        self.inner = inner or str(self.host)

    def ro_binds(self) -> dict[str, str]:
        return {str(self.host): self.inner}

    def put(self, src: Path, name: str) -> str:
        """Copy `src` (a folder or one file) to `name` in the stash; its path inside the sandbox."""
        dest = self.host / name
        if src.is_dir():
            shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache"))
        else:
            dest.mkdir()
            shutil.copy2(src, dest / src.name)
        for p in [dest, *dest.rglob("*")]:
            p.chmod(0o755 if p.is_dir() or p.suffix == ".sh" else 0o644)
        return f"{self.inner}/{name}"

    def clear(self) -> None:
        for p in self.host.iterdir():
            shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()

    def remove(self) -> None:
        shutil.rmtree(self.host, ignore_errors=True)


def keep_pids(sandbox: Sandbox) -> list[int]:
    """The sandbox's own processes (its init's children: bwrap's lifeline, Docker's `sleep infinity`),
    recorded right after start."""
    if sandbox.backend == "local":
        return []
    res = sandbox.exec("cat /proc/1/task/1/children", timeout=10)
    return [int(p) for p in res.stdout.split()]


def stop_processes(sandbox: Sandbox, keep: list[int]) -> None:
    """Kill every process in the sandbox but its init, `keep` and ourselves (local backend: nothing to do).

    A service the agent left running would otherwise answer the tests, and one left from the
    previous episode would leak into the next."""
    if sandbox.backend == "local":
        return
    keep_s = " ".join(str(p) for p in [1, *keep])
    script = (
        "for _ in 1 2 3 4 5 6 7 8 9 10; do left=0; "
        "for d in /proc/[0-9]*; do p=${d#/proc/}; "
        f'case " {keep_s} $$ " in *" $p "*) ;; *) kill -9 "$p" 2>/dev/null && left=1;; esac; done; '
        '[ "$left" = 0 ] && break; sleep 0.05; done'
    )
    sandbox.exec(script, timeout=15)


def start_service(sandbox: Sandbox, task: CodingTask, env: Mapping[str, str]) -> None:
    """Start the task's service in the background, in /workspace, logging to SERVICE_LOG."""
    cmd = (
        f"cd /workspace && nohup sh -c {shlex.quote(task.start_command)} >{SERVICE_LOG} 2>&1 </dev/null & "
        f"echo $! >{SERVICE_PID}"
    )
    sandbox.exec(cmd, timeout=10, env=service_env(task, env))


def service_env(task: CodingTask, env: Mapping[str, str]) -> dict[str, str]:
    port = str(task.service_port)
    return {**env, "SERVICE_PORT": port, "PORT": port, "BASE_URL": f"http://127.0.0.1:{port}"}


def wait_for_port(sandbox: Sandbox, port: int, timeout: float = PORT_WAIT_S) -> bool:
    """True once 127.0.0.1:port accepts a connection (polled inside the sandbox); False at the deadline
    or as soon as the service's process has exited."""
    probe = (
        "import os,socket,sys,time\n"
        f"end=time.monotonic()+{timeout}\n"
        f"pid=int(open('{SERVICE_PID}').read())\n"
        "while time.monotonic()<end:\n"
        "    try:\n"
        f"        socket.create_connection(('127.0.0.1',{port}),0.5).close(); sys.exit(0)\n"
        "    except OSError: time.sleep(0.05)\n"
        "    try: os.kill(pid,0)\n"
        "    except OSError: sys.exit(2)\n"
        "    if open(f'/proc/{pid}/stat').read().split(')')[-1].split()[0]=='Z': sys.exit(2)\n"
        "sys.exit(1)\n"
    )
    res = sandbox.exec(f"/usr/bin/python3 -c {shlex.quote(probe)}", timeout=timeout + 5)
    return res.exit_code == 0


def mask(text: str) -> str:
    """Remove what changes from run to run: durations, addresses."""
    text = re.sub(r"\bin \d+(\.\d+)?s\b( \([0-9:]+\))?", "in <t>s", text)
    return re.sub(r"0x[0-9a-fA-F]{6,}", "0x…", text)


def _short(node: str) -> str:
    """`/grader/tests/test_a.py::test_x[1]` -> `test_a.py::test_x[1]` (the folder is not part of the name)."""
    file, sep, rest = node.partition("::")
    return file.rsplit("/", 1)[-1] + sep + rest


def parse_pytest(output: str) -> list[TestOutcome]:
    """Per-test outcomes from pytest's `-rA` short summary, named `file::test`."""
    seen: dict[str, Outcome] = {}
    for word, node in _SUMMARY.findall(output):
        if node.startswith("["):  # `SKIPPED [1] file:line: reason` names no test id
            continue
        seen.setdefault(_short(node), _OUTCOME[word])
    for file, line in re.findall(r"^SKIPPED \[\d+\] (\S+?):(\d+)", output, re.M):
        seen.setdefault(f"{_short(file)}:{line}", "skipped")
    return [TestOutcome(name=n, outcome=o) for n, o in sorted(seen.items())]


def summary_excerpt(output: str) -> str:
    """The part of pytest's output from its short test summary on (or the tail), masked and bounded."""
    at = output.find("short test summary info")
    text = output[output.rfind("\n", 0, at) + 1 :] if at >= 0 else output[-LOG_CHARS:]
    text = mask(text.strip())
    return text if len(text) <= LOG_CHARS else text[: LOG_CHARS // 2] + "\n[...]\n" + text[-LOG_CHARS // 2 :]


def grade(
    task: CodingTask,
    sandbox: Sandbox,
    stash: Stash,
    env: Mapping[str, str],
    *,
    keep: list[int] | None = None,
    port_wait_s: float = PORT_WAIT_S,
) -> Grade:
    """Grade the workspace as it is now (see the module doc); the sandbox is left with no service running."""
    keep = keep if keep is not None else []
    stop_processes(sandbox, keep)
    try:
        start_service(sandbox, task, env)
        started = wait_for_port(sandbox, task.service_port, port_wait_s)
        tests_dir = stash.put(task.tests_dir, "tests")
        files = " ".join(shlex.quote(f"{tests_dir}/{f}") for f in task.test_files)
        cmd = f"cd /tmp && python -m pytest -q -rA -p no:cacheprovider --color=no {files}"
        res = sandbox.exec(cmd, timeout=task.verifier_timeout_sec, env=service_env(task, env))
        output = res.stdout + ("\n" + res.stderr if res.stderr.strip() else "")
        tests = parse_pytest(res.stdout)
        log = summary_excerpt(output)
        if res.timed_out:
            log += f"\n[the tests timed out after {task.verifier_timeout_sec:g} s]"
        if not started:
            svc = sandbox.exec(f"tail -c 1500 {SERVICE_LOG} 2>/dev/null", timeout=10).stdout
            log += f"\n[the service did not open port {task.service_port}; its log:]\n{mask(svc)}"
    finally:
        stop_processes(sandbox, keep)
        stash.clear()
    passed = sum(t.outcome == "passed" for t in tests)
    bad = sum(t.outcome in ("failed", "error", "xpassed") for t in tests)
    all_ok = passed > 0 and bad == 0 and res.exit_code == 0 and not res.timed_out
    return Grade(
        reward=1.0 if all_ok else 0.0,
        passed=passed,
        total=len(tests),
        pass_fraction=passed / len(tests) if tests else 0.0,
        tests=tests,
        service_started=started,
        log=log,
    )
