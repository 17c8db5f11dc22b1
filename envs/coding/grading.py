"""Grading a coding task where the agent cannot reach the verdict (issue 43; docs/coding.md).

`grade(task, sandbox, env)` (what `CodingEnv` runs at `submit[]`):

1. `sandbox.kill_all()`: every process of the agent dies (fork bombs, respawners, a fake service
   left listening), and the call returns only once none is left, on the host's /proc;
2. start the service from the workspace as the agent left it (the task's `start_command`; for
   env_aware tasks `sh start.sh`, which the agent wrote) and wait (bounded) for its port;
3. make a private verifier folder (0700, `leftovers.private_dir`): the hidden tests copied in only
   now from the task folder (the agent never sees them), our runner and our own pytest ini, a
   fresh per-grading key, an empty report folder and an empty `/logs` (reward files cleared);
4. run the tests in a one-shot verifier sandbox (`Sandbox.run_verifier`) that shares only the
   network (the service's loopback) and the workspace (read-only) with the agent's, as another
   uid: the task venv's `python -I -B` (isolated: no cwd, user site, PYTHONPATH or script folder
   on sys.path), a fixed PATH and environment (`PYTHONSAFEPATH`, `PYTHONNOUSERSITE`), pytest with
   `-c` our ini, `--rootdir` / `--confcutdir` the tests' folder, `-o addopts=`, no cache;
5. the verdict is the runner's JSON report (`verifier_runner.py`), HMAC-signed with the key: a
   missing, unreadable or forged report scores 0, and the text the tests print is never parsed
   for outcomes; reward 1 only when every test passed;
6. `kill_all()` again (the service and anything it started), remove the verifier folder.

`grade_script(...)` runs a Harbor-style `tests/test.sh` the same way (same verifier sandbox, same
environment), its reward read from `/logs/verifier/reward.txt` or `reward.json` in the verifier's
own `/logs`, which starts empty. The pieces (`VerifierFolder`, `run_verifier_pytest`,
`read_signed_report`, `read_rewards`) are public for other task formats.

The result (`Grade`) holds nothing time-dependent (pytest's durations are masked), so the same
workspace grades the same way twice.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import re
import secrets
import shlex
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from envs.coding.sandbox import ExecResult, Sandbox
from envs.coding.sandbox.leftovers import private_dir
from envs.coding.tasks.model import CodingTask

GRADER_MOUNT = "/grader"  # where the stash (the oracle's solution, while it runs) appears in the agent's sandbox
PORT_WAIT_S = 20.0
LOG_CHARS = 2_000
SERVICE_LOG = "/tmp/.agentsim-service.log"
SERVICE_PID = "/tmp/.agentsim-service.pid"
# inside the verifier sandbox
VERIFIER_ROOT = "/verifier"
VERIFIER_TESTS = f"{VERIFIER_ROOT}/tests"  # the hidden tests (read-only)
VERIFIER_BIN = f"{VERIFIER_ROOT}/bin"  # our runner and ini (read-only)
VERIFIER_OUT = f"{VERIFIER_ROOT}/out"  # the key (deleted by the runner) and the signed report
VERIFIER_LOGS = "/logs"  # Harbor's: verifier/reward.txt or reward.json
RUNNER = Path(__file__).resolve().parent / "verifier_runner.py"
REPORT_NAME = "report.json"
REPORT_MAX_BYTES = 4 * 1024 * 1024
REWARD_MAX_BYTES = 64 * 1024
PYTEST_INI = "[pytest]\naddopts =\n"
PYTEST_FLAGS = ["-q", "-rA", "--color=no", "-p", "no:cacheprovider", "-o", "addopts=", "-o", "cache_dir=/tmp/.pytest"]

Outcome = Literal["passed", "failed", "error", "skipped", "xfailed", "xpassed"]
OUTCOMES: tuple[str, ...] = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")


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
    report_problem: str | None = None  # why the verdict scored 0 without a valid report (missing, forged)
    rewards: dict[str, float] = {}  # a script verifier's named rewards (reward.json), or {"reward": x}


class Stash:
    """A private host folder (0700, `leftovers.private_dir`) the agent's sandbox sees read-only at `inner`:
    empty except while the oracle runs (its reference solution). The hidden tests never go here.

    Mounted with the sandbox's `ro_binds` (bwrap and docker) at /grader; `give_to` hands it to the
    sandbox's host uid, so the sandbox user can read it and nobody else on the host can."""

    def __init__(self, inner: str | None = None) -> None:
        self.host = private_dir("stash")
        self.inner = inner or str(self.host)

    def give_to(self, owner: tuple[int, int] | None) -> None:
        if owner is not None:
            os.chown(self.host, *owner)

    def ro_binds(self) -> dict[str, str]:
        return {str(self.host): self.inner}

    def put(self, src: Path, name: str) -> str:
        """Copy `src` (a folder or one file) to `name` in the stash; its path inside the sandbox."""
        _copy_in(src, self.host / name)
        return f"{self.inner}/{name}"

    def clear(self) -> None:
        for p in self.host.iterdir():
            shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()

    def remove(self) -> None:
        shutil.rmtree(self.host, ignore_errors=True)


def _copy_in(src: Path, dest: Path) -> None:
    """Copy a folder (links followed: a task's own files) or one file to `dest`, world-readable inside."""
    if src.is_dir():
        shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache"))
    else:
        dest.mkdir()
        shutil.copy2(src, dest / src.name)
    for p in [dest, *dest.rglob("*")]:
        p.chmod(0o755 if p.is_dir() or p.suffix == ".sh" else 0o644)


# --- the service under test -----------------------------------------------------------------------


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
    res = sandbox.exec(f"/usr/bin/python3 -I -c {shlex.quote(probe)}", timeout=timeout + 5)
    return res.exit_code == 0


def service_log(sandbox: Sandbox, port: int) -> str:
    svc = sandbox.exec(f"tail -c 1500 {SERVICE_LOG} 2>/dev/null", timeout=10).stdout
    return f"\n[the service did not open port {port}; its log:]\n{mask(svc)}"


# --- text helpers -------------------------------------------------------------------------------------


def mask(text: str) -> str:
    """Remove what changes from run to run: durations, addresses."""
    text = re.sub(r"\bin \d+(\.\d+)?s\b( \([0-9:]+\))?", "in <t>s", text)
    return re.sub(r"0x[0-9a-fA-F]{6,}", "0x…", text)


def short_node(node: str) -> str:
    """`/verifier/tests/test_a.py::test_x[1]` -> `test_a.py::test_x[1]` (the folder is not part of the name)."""
    file, sep, rest = node.partition("::")
    return file.rsplit("/", 1)[-1] + sep + rest


def summary_excerpt(output: str) -> str:
    """The part of pytest's output from its short test summary on (or the tail), masked and bounded.
    For the log only: outcomes come from the signed report."""
    at = output.find("short test summary info")
    text = output[output.rfind("\n", 0, at) + 1 :] if at >= 0 else output[-LOG_CHARS:]
    text = mask(text.strip())
    return text if len(text) <= LOG_CHARS else text[: LOG_CHARS // 2] + "\n[...]\n" + text[-LOG_CHARS // 2 :]


# --- the verifier -------------------------------------------------------------------------------------


class VerifierFolder:
    """One grading's private host folder: `tests/` and `bin/` (read-only inside), `out/` (the key, then
    the report) and `logs/` (Harbor's /logs), all fresh: no reward file or report exists before the
    verifier runs. `remove()` when done (a crash's folder is swept at the next start: leftovers.py)."""

    def __init__(self, tests_dir: Path, owner: tuple[int, int] | None = None) -> None:
        self.host = private_dir("verifier", owner)  # 0700, the sandbox's uid: bwrap resolves binds as it
        self.tests, self.bin = self.host / "tests", self.host / "bin"
        self.out, self.logs = self.host / "out", self.host / "logs"
        _copy_in(tests_dir, self.tests)
        self.bin.mkdir(mode=0o755)
        shutil.copyfile(RUNNER, self.bin / "run.py")
        (self.bin / "pytest.ini").write_text(PYTEST_INI)
        for p in self.bin.iterdir():
            p.chmod(0o644)
        self.out.mkdir(mode=0o700)
        self.logs.mkdir(mode=0o700)
        (self.logs / "verifier").mkdir(mode=0o700)
        self.key = secrets.token_hex(32).encode()
        (self.out / "key").write_bytes(self.key)

    def ro_binds(self) -> dict[str, str]:
        return {str(self.tests): VERIFIER_TESTS, str(self.bin): VERIFIER_BIN}

    def rw_binds(self) -> dict[str, str]:
        return {str(self.out): VERIFIER_OUT, str(self.logs): VERIFIER_LOGS}

    def remove(self) -> None:
        shutil.rmtree(self.host, ignore_errors=True)


def verifier_env(task: CodingTask, env: Mapping[str, str]) -> dict[str, str]:
    """The verifier's whole environment: the task venv's PATH, the service's address, isolated Python.
    Nothing of the agent's session (its exports, PATH, PYTHONPATH) is in it."""
    keep = {k: env[k] for k in ("PATH", "VIRTUAL_ENV", "NODE_PATH") if k in env}
    return {
        **service_env(task, keep),
        "HOME": "/home/user",
        "PYTHONSAFEPATH": "1",
        "PYTHONNOUSERSITE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "TEST_DIR": VERIFIER_TESTS,
    }


def run_verifier_pytest(
    sandbox: Sandbox, folder: VerifierFolder, task: CodingTask, env: Mapping[str, str], python: str
) -> ExecResult:
    """Run the hidden tests with `python -I -B` (the task venv's) and our runner in the verifier sandbox."""
    files = [f"{VERIFIER_TESTS}/{f}" for f in task.test_files]
    argv = [python, "-I", "-B", f"{VERIFIER_BIN}/run.py", f"{VERIFIER_OUT}/key", f"{VERIFIER_OUT}/{REPORT_NAME}"]
    argv += ["--", "-c", f"{VERIFIER_BIN}/pytest.ini", f"--rootdir={VERIFIER_TESTS}", f"--confcutdir={VERIFIER_TESTS}"]
    argv += [*PYTEST_FLAGS, *files]
    return sandbox.run_verifier(
        argv,
        ro_binds={**_dep_binds(env), **folder.ro_binds()},
        rw_binds=folder.rw_binds(),
        env=verifier_env(task, env),
        cwd=VERIFIER_TESTS,
        timeout=task.verifier_timeout_sec,
    )


def _dep_binds(env: Mapping[str, str]) -> dict[str, str]:
    """The task venv and node_modules folder (the same path inside, read-only), from the deps env."""
    binds = {}
    if env.get("VIRTUAL_ENV"):
        binds[env["VIRTUAL_ENV"]] = env["VIRTUAL_ENV"]
    if env.get("NODE_PATH"):
        node_dir = str(Path(env["NODE_PATH"]).parent)
        binds[node_dir] = node_dir
    return binds


class Report(BaseModel):
    """The runner's verdict, once its signature checked."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    exit_code: int
    tests: dict[str, Outcome]
    collect_errors: list[str]


def read_signed_report(folder: VerifierFolder) -> tuple[Report | None, str | None]:
    """(the report, None) when it exists, is bounded, parses and its HMAC matches this grading's key;
    else (None, why)."""
    path = folder.out / REPORT_NAME
    try:
        if path.is_symlink() or not path.is_file():
            return None, "the verifier wrote no report (it crashed, was killed or timed out)"
        if path.stat().st_size > REPORT_MAX_BYTES:
            return None, f"the report is over {REPORT_MAX_BYTES:,} bytes"
        outer = json.loads(path.read_text())
        payload, sig = outer["payload"], outer["hmac"]
        if not isinstance(payload, str) or not isinstance(sig, str):
            raise TypeError("payload and hmac must be strings")
    except (OSError, ValueError, KeyError, TypeError) as e:
        return None, f"the report does not parse: {e}"
    want = hmac.new(folder.key, payload.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(want, sig):
        return None, "the report's signature does not match this grading's key (forged)"
    try:
        return Report.model_validate_json(payload), None
    except ValueError as e:
        return None, f"the signed report is malformed: {e}"


def read_rewards(folder: VerifierFolder) -> tuple[dict[str, float], str | None]:
    """Harbor's reward files from the verifier's own /logs: `verifier/reward.txt` (one number) or
    `verifier/reward.json` ({name: number}); ({}, why) when neither is there or readable."""
    base = folder.logs / "verifier"
    for name in ("reward.json", "reward.txt"):
        path = base / name
        if path.is_symlink() or not path.is_file():
            continue
        if path.stat().st_size > REWARD_MAX_BYTES:
            return {}, f"{name} is over {REWARD_MAX_BYTES:,} bytes"
        text = path.read_text(errors="replace").strip()
        try:
            raw = json.loads(text) if name.endswith(".json") else {"reward": float(text)}
            if not isinstance(raw, dict):
                raise ValueError("not an object")
            rewards = {str(k): float(v) for k, v in raw.items()}
        except (ValueError, TypeError) as e:
            return {}, f"{name} does not parse: {e}"
        if not rewards or not all(math.isfinite(v) for v in rewards.values()):
            return {}, f"{name} holds no finite reward"
        return rewards, None
    return {}, "the verifier wrote no /logs/verifier/reward.txt or reward.json"


def grade_from_report(report: Report | None, problem: str | None, res: ExecResult, started: bool) -> Grade:
    """Reward 1 only with a valid signed report in which pytest exited 0, collected every file
    without error and every test passed (skips and xfails allowed, at least one pass)."""
    tests = [TestOutcome(name=short_node(n), outcome=o) for n, o in sorted((report.tests if report else {}).items())]
    passed = sum(t.outcome == "passed" for t in tests)
    bad = sum(t.outcome in ("failed", "error", "xpassed") for t in tests)
    all_ok = (
        report is not None
        and report.exit_code == 0
        and not report.collect_errors
        and passed > 0
        and bad == 0
        and not res.timed_out
    )
    log = summary_excerpt(res.stdout + ("\n" + res.stderr if res.stderr.strip() else ""))
    if problem:
        log += f"\n[no verdict: {problem}; reward 0]"
    return Grade(
        reward=1.0 if all_ok else 0.0,
        passed=passed,
        total=len(tests),
        pass_fraction=passed / len(tests) if tests else 0.0,
        tests=tests,
        service_started=started,
        log=log,
        report_problem=problem,
    )


def _venv_python(env: Mapping[str, str]) -> str:
    venv = env.get("VIRTUAL_ENV")
    return f"{venv}/bin/python" if venv else "/usr/bin/python3"


def grade(
    task: CodingTask,
    sandbox: Sandbox,
    env: Mapping[str, str],
    *,
    port_wait_s: float = PORT_WAIT_S,
) -> Grade:
    """Grade the workspace as it is now (see the module doc); the sandbox is left with no process running."""
    sandbox.kill_all()
    folder = VerifierFolder(task.tests_dir, sandbox.owner())
    try:
        start_service(sandbox, task, env)
        started = wait_for_port(sandbox, task.service_port, port_wait_s)
        res = run_verifier_pytest(sandbox, folder, task, env, _venv_python(env))
        report, problem = read_signed_report(folder)
        g = grade_from_report(report, problem, res, started)
        log = g.log
        if res.timed_out:
            log += f"\n[the tests timed out after {task.verifier_timeout_sec:g} s]"
        if not started:
            log += service_log(sandbox, task.service_port)
    finally:
        folder.remove()
        sandbox.kill_all()
    return g.model_copy(update={"log": log})


def grade_script(
    task: CodingTask,
    sandbox: Sandbox,
    env: Mapping[str, str],
    *,
    script: str | None = None,
    port_wait_s: float = PORT_WAIT_S,
    start: bool = True,
) -> Grade:
    """Grade with a Harbor-style verifier script (default the task's `tests/test.sh`, run with bash from
    the tests' folder) under the same rules as `grade`: the agent's processes killed first, the script
    in the verifier sandbox with the same fixed environment, its reward read from the verifier's own
    `/logs/verifier/reward.txt` or `reward.json` (empty before it runs); no reward file scores 0.
    `start=False` when the script starts the service itself."""
    sandbox.kill_all()
    folder = VerifierFolder(task.tests_dir, sandbox.owner())
    name = script or task.test_script.name
    try:
        started = False
        if start:
            start_service(sandbox, task, env)
            started = wait_for_port(sandbox, task.service_port, port_wait_s)
        res = sandbox.run_verifier(
            ["/bin/bash", f"{VERIFIER_TESTS}/{name}"],
            ro_binds={**_dep_binds(env), **folder.ro_binds()},
            rw_binds=folder.rw_binds(),
            env=verifier_env(task, env),
            cwd=VERIFIER_TESTS,
            timeout=task.verifier_timeout_sec,
        )
        rewards, problem = read_rewards(folder)
        log = summary_excerpt(res.stdout + ("\n" + res.stderr if res.stderr.strip() else ""))
        if problem:
            log += f"\n[no verdict: {problem}; reward 0]"
        if res.timed_out:
            log += f"\n[the verifier timed out after {task.verifier_timeout_sec:g} s]"
        if start and not started:
            log += service_log(sandbox, task.service_port)
    finally:
        folder.remove()
        sandbox.kill_all()
    reward = rewards.get("reward", next(iter(rewards.values()), 0.0)) if not res.timed_out else 0.0
    return Grade(
        reward=float(reward),
        passed=0,
        total=0,
        pass_fraction=0.0,
        tests=[],
        service_started=started,
        log=log,
        report_problem=problem,
        rewards=rewards,
    )
