"""Run a published task's own verifier in a one-shot bwrap sandbox and read its reward.

The agent's processes are stopped first (the caller's job); then a fresh sandbox is made over the same
workspace, shown at the task's WORKDIR, with the tests at `/tests` (copied in only now) and an empty `/logs`
that only this sandbox sees (so no reward file can be left there beforehand). The task's script runs as its
format says: Harbor `bash /tests/test.sh`, Terminal-Bench `bash /tests/run-tests.sh` (TEST_DIR=/tests), from
the WORKDIR. The reward:

- Harbor: `/logs/verifier/reward.json` (every named reward kept; the scalar is its `reward` key, else the mean)
  or else `reward.txt` (one number, named `reward`), as Harbor's verifier reads them; neither: 0.
- Terminal-Bench: its pytest parser over the script's output (the last short test summary): 1 when at least
  one test ran and every test passed, else 0.

Python runs with `PYTHONSAFEPATH=1` and the WORKDIR appended to `sys.path` (after the installed packages), so a
`pytest.py` (or any module) the agent plants in the workspace cannot stand in for an installed one.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from envs.coding.grading import Outcome, TestOutcome, mask, short_node, summary_excerpt, wait_for_port
from envs.coding.published.formats import LOGS_DIR, TEST_DIR
from envs.coding.published.model import PublishedTask
from envs.coding.sandbox import Limits, Sandbox

# Terminal-Bench's own verdict: its pytest parser reads the `-rA` short summary that run-tests.sh prints (the
# task's format; our shipped tasks are graded from a signed structured report instead, envs/coding/grading.py)
_SUMMARY = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S+)", re.M)
_OUTCOME: dict[str, Outcome] = {
    "PASSED": "passed",
    "FAILED": "failed",
    "ERROR": "error",
    "SKIPPED": "skipped",
    "XFAIL": "xfailed",
    "XPASS": "xpassed",
}


def parse_pytest(output: str) -> list[TestOutcome]:
    """Per-test outcomes from pytest's `-rA` short summary, named `file::test`."""
    seen: dict[str, Outcome] = {}
    for word, node in _SUMMARY.findall(output):
        if node.startswith("["):  # `SKIPPED [1] file:line: reason` names no test id
            continue
        seen.setdefault(short_node(node), _OUTCOME[word])
    for file, line in re.findall(r"^SKIPPED \[\d+\] (\S+?):(\d+)", output, re.M):
        seen.setdefault(f"{short_node(file)}:{line}", "skipped")
    return [TestOutcome(name=n, outcome=o) for n, o in sorted(seen.items())]


VERIFIER_LIB = "/opt/agentsim-verifier"  # sitecustomize.py: the WORKDIR after site-packages
SERVICE_LOG = "/tmp/.agentsim-service.log"
SERVICE_PID = "/tmp/.agentsim-service.pid"  # the path grading.wait_for_port reads
SITECUSTOMIZE = (
    "import os, sys\n"
    "# agentsim verifier: the current folder is importable, but after the installed packages (PYTHONSAFEPATH=1)\n"
    "try:\n    sys.path.append(os.getcwd())\nexcept OSError:\n    pass\n"
)


# Offline stand-ins for the formats' template verifiers (`curl ... uv/install.sh | sh`, then `uv run pytest` /
# `uvx -p 3.13 -w pytest==... pytest --ctrf ... /tests/test_outputs.py -rA`): the task venv's pytest runs the same
# tests. Only where the task runs approximately (its script's internet steps are listed as skipped).
UV = r"""#!/bin/bash
# agentsim verifier (offline): uv's project and install commands do nothing; `uv run CMD` runs CMD.
cmd="$1"; shift
case "$cmd" in
  run)
    while [ $# -gt 0 ]; do case "$1" in
      -w|--with|-p|--python|--project|--directory|--with-requirements) shift 2;;
      --) shift; break;;
      -*) shift;;
      *) break;;
    esac; done
    [ "$1" = pytest ] && { shift; exec uvx pytest "$@"; }
    exec "$@";;
  venv)  # an empty environment to `source`: the task venv's python and pytest are already on PATH
    d=.venv; for a in "$@"; do case "$a" in -*) ;; *) d="$a";; esac; done
    mkdir -p "$d/bin" && : >"$d/bin/activate"; exit 0;;
  init|add|sync|lock|pip|tool|cache|self|python) exit 0;;
  *) echo "uv (agentsim offline stand-in): '$cmd' is not supported" >&2; exit 2;;
esac
"""
UVX = r"""#!/bin/bash
# agentsim verifier (offline): `uvx [options] TOOL ARGS` runs TOOL from the task's venv; pytest without --ctrf.
while [ $# -gt 0 ]; do case "$1" in
  -w|--with|-p|--python|--from|--with-requirements) shift 2;;
  -*) shift;;
  *) break;;
esac; done
tool="$1"; shift
if [ "$tool" = pytest ]; then
  args=()
  while [ $# -gt 0 ]; do case "$1" in
    --ctrf) shift 2;;
    --ctrf=*) shift;;
    *) args+=("$1"); shift;;
  esac; done
  exec python3 -m pytest "${args[@]}"
fi
exec "$tool" "$@"
"""


class PublishedGrade(BaseModel):
    """The task's own verdict: `reward` (the scalar), every named reward, and the tests it reported."""

    model_config = ConfigDict(frozen=True)

    reward: float
    rewards: dict[str, float]
    passed: int
    total: int
    pass_fraction: float
    tests: list[TestOutcome]
    exit_code: int
    timed_out: bool
    service_started: bool | None  # None: the task declares no service
    verifier: str  # the script that ran
    log: str
    approximated: list[str]  # the declared steps bwrap did not reproduce (empty when reproduced)


def _reward_file(logs: Path) -> tuple[dict[str, float], str]:
    """Harbor's reading: reward.json first, else reward.txt; ({}, why) when neither gives a number."""
    jf, tf = logs / "verifier" / "reward.json", logs / "verifier" / "reward.txt"
    if jf.is_file():
        try:
            raw = json.loads(jf.read_text()[:100_000])
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            return {}, f"reward.json is not JSON: {e}"
        values = raw if isinstance(raw, dict) else {"reward": raw}
        rewards: dict[str, float] = {}
        for k, v in values.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                return {}, f"reward.json: {k!r} is not a finite number: {v!r}"
            rewards[str(k)] = float(v)
        return (rewards, "") if rewards else ({}, "reward.json holds no reward")
    if tf.is_file():
        text = tf.read_text(errors="replace")[:1000].strip()
        try:
            value = float(text)
        except ValueError:
            return {}, f"reward.txt is not a number: {text[:80]!r}"
        return ({"reward": value}, "") if math.isfinite(value) else ({}, f"reward.txt is not finite: {text!r}")
    return {}, "the verifier wrote no /logs/verifier/reward.txt or reward.json"


def scalar(rewards: Mapping[str, float]) -> float:
    """The episode's reward: `reward` when named, else the mean of the named rewards (Harbor keeps each)."""
    if not rewards:
        return 0.0
    return rewards["reward"] if "reward" in rewards else sum(rewards.values()) / len(rewards)


def _last_summary(output: str) -> str:
    """From the last pytest short test summary on (what an earlier, printed one cannot replace)."""
    at = output.rfind("short test summary info")
    return output[output.rfind("\n", 0, at) + 1 :] if at >= 0 else ""


def _stage_tests(task: PublishedTask, host: Path) -> str:
    """Copy the tests (and Terminal-Bench's run-tests.sh) into `host`, shown at /tests; the script's path."""
    if task.tests_dir is not None:
        shutil.copytree(task.tests_dir, host, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    script = host / task.test_script.name
    if not script.exists():
        shutil.copy2(task.test_script, script)
    for p in [host, *host.rglob("*")]:
        p.chmod(0o755 if p.is_dir() or p.suffix == ".sh" else 0o644)
    return f"{TEST_DIR}/{script.relative_to(host)}"


def run_verifier(
    task: PublishedTask,
    workspace: Path,
    *,
    limits: Limits,
    env: Mapping[str, str],
    ro_binds: Mapping[str, str],
    approximated: list[str],
    port_wait_s: float = 20.0,
    backend: str = "bwrap",
    image: str | None = None,
) -> PublishedGrade:
    """Verify `workspace` as it is now, in a new sandbox (the caller has stopped the agent's processes): a bwrap
    one, or (backend="docker") a fresh container of the task's built `image`, nothing of the agent's container
    kept but the workspace."""
    from envs.coding.sandbox import make_sandbox

    tmp = Path(tempfile.mkdtemp(prefix="agentsim-verify-"))
    tmp.chmod(0o755)
    tests, logs, lib = tmp / "tests", tmp / "logs", tmp / "lib"
    for d in (tests, logs / "verifier", logs / "agent", lib):
        d.mkdir(parents=True)
    (lib / "sitecustomize.py").write_text(SITECUSTOMIZE)
    (lib / "bin").mkdir()
    (lib / "bin" / "uv").write_text(UV)
    (lib / "bin" / "uvx").write_text(UVX)
    for p in (tmp, tests, logs, lib, lib / "sitecustomize.py", logs / "verifier", logs / "agent"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    for p in (lib / "bin", lib / "bin" / "uv", lib / "bin" / "uvx"):
        p.chmod(0o755)
    script = _stage_tests(task, tests)
    sb: Sandbox = make_sandbox(
        backend,
        workspace,
        limits,
        task.allow_internet,
        start=False,
        ro_binds={**ro_binds, str(tests): TEST_DIR, str(lib): VERIFIER_LIB},
        rw_binds={str(logs): LOGS_DIR},
        workdir=task.workdir,
        mounts=task.environment.mounts(),
        disk_quota="off",
        **({"image": image} if backend == "docker" else {}),
    )
    try:
        owner = sb.owner()
        assert owner is not None
        for p in [logs, *logs.rglob("*")]:
            os.chown(p, *owner)
        sb.start()
        run_env = {
            **task.environment.env,
            **env,
            "PATH": f"{env.get('PATH', '/usr/local/bin:/usr/bin:/bin')}:{VERIFIER_LIB}/bin",
            **task.verifier_env,
            "PYTHONSAFEPATH": "1",
            "PYTHONPATH": VERIFIER_LIB,
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTEST_ADDOPTS": "-p no:cacheprovider",  # /tests is read-only: no cache warnings in the log
        }
        started: bool | None = None
        if task.service is not None:
            port = str(task.service.port)
            run_env |= {"SERVICE_PORT": port, "PORT": port, "BASE_URL": f"http://127.0.0.1:{port}"}
            cmd = (
                f"nohup sh -c {shlex.quote(task.service.start_command)} >{SERVICE_LOG} 2>&1 </dev/null & "
                f"echo $! >{SERVICE_PID}"
            )
            sb.exec(cmd, timeout=10, env=run_env)
            started = wait_for_port(sb, task.service.port, port_wait_s)
        # the templates `source $HOME/.local/bin/env` after installing uv: an empty one stands in
        prep = 'mkdir -p "$HOME/.local/bin" && : >"$HOME/.local/bin/env"; '
        res = sb.exec(f"{prep}bash {shlex.quote(script)}", timeout=task.verifier_timeout_sec, env=run_env)
        output = res.stdout + ("\n" + res.stderr if res.stderr.strip() else "")
        # Terminal-Bench's verdict comes from the last summary; Harbor's from its reward file (the tests are shown)
        tests_seen = parse_pytest(_last_summary(res.stdout) if task.verdict == "pytest" else res.stdout)
        log = summary_excerpt(output)
        if task.verdict == "reward-file":
            rewards, why = _reward_file(logs)
        else:
            ok = bool(tests_seen) and all(t.outcome == "passed" for t in tests_seen)
            rewards, why = {"reward": 1.0 if ok else 0.0}, "" if tests_seen else "no pytest short test summary"
        if why:
            log += f"\n[{why}]"
        if res.timed_out:
            log += f"\n[the verifier timed out after {task.verifier_timeout_sec:g} s]"
        if started is False:
            svc = sb.exec(f"tail -c 1500 {SERVICE_LOG} 2>/dev/null", timeout=10).stdout
            log += (
                f"\n[the service did not open port {task.service.port if task.service else '?'}; its log:]\n{mask(svc)}"
            )
    finally:
        sb.close()
        shutil.rmtree(tmp, ignore_errors=True)
    passed = sum(t.outcome == "passed" for t in tests_seen)
    return PublishedGrade(
        reward=scalar(rewards) if not res.timed_out else 0.0,
        rewards=rewards,
        passed=passed,
        total=len(tests_seen),
        pass_fraction=passed / len(tests_seen) if tests_seen else 0.0,
        tests=tests_seen,
        exit_code=res.exit_code,
        timed_out=res.timed_out,
        service_started=started,
        verifier=script,
        log=log,
        approximated=approximated,
    )
