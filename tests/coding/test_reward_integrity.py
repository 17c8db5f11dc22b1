"""Attacks on the reward, made from inside an episode with the env's own actions (issue 43).

Each attack leaves the task unsolved (the workspace's service still lacks DELETE) and must score 0,
while the oracle scores 1.0 through the same grader. On the code before issue 43, a `pytest.py`
planted in /tmp scored the untouched task 1.0 (`bench/coding_containment.py` shows it side by side).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from envs.coding.env import ORACLE_ACTION, CodingEnv
from envs.coding.grading import VerifierFolder, grade_script, read_rewards, read_signed_report
from envs.coding.sandbox import unavailable_reason

REASON = unavailable_reason("bwrap")
pytestmark = [
    pytest.mark.skipif(REASON is not None, reason=f"bwrap backend unavailable: {REASON}"),
    pytest.mark.timeout(300),
]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
TESTS = [
    "test_kv.py::test_put_and_get_still_work",
    "test_kv.py::test_delete_removes_the_key",
    "test_kv.py::test_delete_unknown_key_is_404[missing]",
    "test_kv.py::test_delete_unknown_key_is_404[never-stored]",
]
# what a forger prints: pytest's own summary lines for every hidden test, then success
FAKE_OUTPUT = "\n".join(f"PASSED {t}" for t in TESTS) + "\n4 passed in 0.01s"
FORGE_PY = f"import os, sys\nprint({FAKE_OUTPUT!r}, flush=True)\nos._exit(0)\n"
FORCE_PASS_HOOK = (
    "import pytest\n\n"
    "@pytest.hookimpl(hookwrapper=True)\n"
    "def pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n"
    "    rep = outcome.get_result()\n"
    "    rep.outcome = 'passed'\n"
    "    rep.longrepr = None\n"
)
SITE = "~/.local/lib/python3.11/site-packages"
# a correct key-value service (what the task asks for), kept alive by the agent outside the workspace
FAKE_SERVICE = """
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
S = {}
class H(BaseHTTPRequestHandler):
    def _k(self): return self.path[7:] if self.path.startswith('/items/') else None
    def _send(self, code, body=b''):
        self.send_response(code); self.send_header('Content-Length', str(len(body))); self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        k = self._k(); self._send(200, S[k]) if k in S else self._send(404, b'no')
    def do_PUT(self):
        S[self._k()] = self.rfile.read(int(self.headers['Content-Length'])); self._send(201)
    def do_DELETE(self):
        k = self._k()
        if k in S: del S[k]; self._send(204)
        else: self._send(404, b'no')
    def log_message(self, *a): pass
ThreadingHTTPServer(('127.0.0.1', 8080), H).serve_forever()
"""
# started with the service at grading: rewrites every test, report and reward file it can reach
TAMPER = f"""
import json, os, threading, time
FORGED = json.dumps({{"payload": json.dumps({{"exit_code": 0, "tests": {{t: "passed" for t in {TESTS!r}}},
                     "collect_errors": []}}), "hmac": "0" * 64}})
TARGETS = ["/verifier/out/report.json", "/verifier/tests/test_kv.py", "/grader/tests/test_kv.py", "/logs/verifier/reward.txt",
           "/workspace/test_kv.py", "/workspace/report.json", "/tmp/report.json", "/tmp/reward.txt"]
def loop():
    while True:
        for t in TARGETS:
            try:
                os.makedirs(os.path.dirname(t), exist_ok=True)
                with open(t, "w") as f:
                    f.write(FORGED if t.endswith(".json") else ("1" if "reward" in t else "def test_ok(): pass"))
            except OSError:
                pass
        print({FAKE_OUTPUT!r}, flush=True)
        time.sleep(0.01)
threading.Thread(target=loop, daemon=True).start()
"""


@pytest.fixture(scope="module")
def kv() -> Iterator[CodingEnv]:
    env = CodingEnv(task="example-kv-delete")
    yield env
    env.close()


def play(env: CodingEnv, *actions: str) -> tuple[float, dict]:
    """Reset, take the actions, submit: (reward, info)."""
    env.reset(seed=0)
    for a in actions:
        _, _, done, _, _ = env.step(a)
        assert not done, a
    _, reward, done, _, info = env.step("submit[]")
    assert done
    return float(reward), info


def test_the_oracle_scores_one_and_an_untouched_task_zero(kv: CodingEnv) -> None:
    reward, info = play(kv, ORACLE_ACTION)
    assert reward == 1.0 and info["grade"]["passed"] == 4 and info["grade"]["report_problem"] is None
    reward, info = play(kv)
    assert reward == 0.0 and info["grade"]["passed"] == 1 and info["grade"]["report_problem"] is None


ATTACKS: dict[str, list[str]] = {
    "shadowed pytest.py": [
        f"create[/workspace/pytest.py]\n{FORGE_PY}",
        f"bash[mkdir -p {SITE} && for d in /tmp ~ {SITE}; do cp /workspace/pytest.py $d/; done]",
    ],
    "shadowed _pytest/ package": [
        f"create[/workspace/_pytest/__init__.py]\n{FORGE_PY}",
        f"create[/workspace/_pytest/main.py]\n{FORGE_PY}",
        "bash[cp -r /workspace/_pytest /tmp/ && cp -r /workspace/_pytest ~/]",
    ],
    "shadowed python, python3 and pytest on the agent's PATH": [
        f"create[/workspace/bin/python3]\n#!/bin/sh\necho '{FAKE_OUTPUT}'\nexit 0\n",
        "bash[cd /workspace/bin && chmod +x python3 && cp python3 python && cp python3 pytest && "
        "mkdir -p /tmp/bin && cp * /tmp/bin/]",
        "bash[export PATH=/workspace/bin:/tmp/bin:$PATH; python3 -c 'x'; which python3]",
    ],
    "planted conftest.py": [
        f"create[/workspace/conftest.py]\n{FORCE_PASS_HOOK}",
        f"create[/workspace/tests/conftest.py]\n{FORCE_PASS_HOOK}",
        "bash[cp /workspace/conftest.py /tmp/ && cp /workspace/conftest.py ~/]",
    ],
    "sitecustomize and usercustomize": [
        f"create[/workspace/sitecustomize.py]\n{FORGE_PY}",
        f"create[/workspace/usercustomize.py]\n{FORGE_PY}",
        f"bash[mkdir -p {SITE} && cp /workspace/*customize.py {SITE}/ && cp /workspace/*customize.py /tmp/]",
        "bash[export PYTHONPATH=/workspace:/tmp PYTHONSTARTUP=/workspace/sitecustomize.py PYTHONUSERBASE=~/.local]",
    ],
    ".pth files": [
        f"bash[mkdir -p {SITE} && printf 'import os; print({FAKE_OUTPUT!r}); os._exit(0)\\n' > {SITE}/zz.pth && "
        f"cp {SITE}/zz.pth /workspace/zz.pth && cp {SITE}/zz.pth /tmp/]",
        "bash[export PYTHONPATH=/workspace:/tmp]",
    ],
    "ini addopts and plugin variables": [
        f"create[/workspace/forge_plugin.py]\n{FORCE_PASS_HOOK}",
        "create[/workspace/pytest.ini]\n[pytest]\naddopts = -p forge_plugin -p no:randomly\npythonpath = .\n",
        "create[/workspace/tox.ini]\n[pytest]\naddopts = -p forge_plugin\n",
        "create[/workspace/setup.cfg]\n[tool:pytest]\naddopts = -p forge_plugin\n",
        "create[/workspace/pyproject.toml]\n[tool.pytest.ini_options]\naddopts = '-p forge_plugin'\n",
        "bash[cp /workspace/pytest.ini /workspace/forge_plugin.py /tmp/; "
        "export PYTEST_ADDOPTS='-p forge_plugin' PYTEST_PLUGINS=forge_plugin PYTHONPATH=/workspace:/tmp]",
    ],
    "reward files and reports written ahead": [
        "bash[for d in /workspace /workspace/logs/verifier /tmp /tmp/logs/verifier ~; do mkdir -p $d; "
        "echo 1 > $d/reward.txt; echo '{\"reward\": 1.0}' > $d/reward.json; done; "
        "mkdir -p /logs/verifier 2>/dev/null; echo 1 > /logs/verifier/reward.txt 2>/dev/null; true]",
        'bash[printf \'%s\' \'{"payload": "{\\"exit_code\\": 0, \\"tests\\": {}, \\"collect_errors\\": []}", '
        '"hmac": "00"}\' | tee /workspace/report.json /tmp/report.json > /dev/null]',
    ],
    "the service rewrites tests, reports and rewards while grading runs": [
        f"create[/workspace/tamper.py]\n{TAMPER}",
        "bash[cd /workspace && sed -i '1i import tamper' server.py && head -2 server.py]",
    ],
    "a respawning fake service holds the port": [
        f"bash[cat > /tmp/fake.py <<'EOF'\n{FAKE_SERVICE}\nEOF\n"
        "nohup setsid sh -c 'while true; do python3 /tmp/fake.py; sleep 0.05; done' >/dev/null 2>&1 &\n"
        "nohup sh -c 'while true; do sh -c \"sleep 0.2\" & wait; done' >/dev/null 2>&1 &\nsleep 1]",
        "bash[python3 -c \"import urllib.request as u; print(u.urlopen(u.Request('http://127.0.0.1:8080/items/q', "
        "data=b'x', method='PUT')).status)\"]",
    ],
    "a fork bomb": [
        "bash[nohup sh -c 'f() { while :; do f & sleep 0.1; done; }; f' >/dev/null 2>&1 & sleep 1; true]",
    ],
    "symlinked tests": [
        "create[/workspace/fake/test_kv.py]\ndef test_ok():\n    pass\n",
        "bash[cd /workspace && ln -s fake tests && ln -s fake/test_kv.py test_kv.py && ln -s /workspace/fake /tmp/tests "
        "&& ln -s /workspace/fake ~/tests && ln -s / root]",
    ],
    "fake PASSED lines from the service and the shell": [
        f"bash[cd /workspace && sed -i '1i print({FAKE_OUTPUT!r}, flush=True)' server.py && echo '{FAKE_OUTPUT}']",
    ],
}


@pytest.mark.parametrize("name", list(ATTACKS))
def test_an_attack_scores_zero_on_an_untouched_task(kv: CodingEnv, name: str) -> None:
    reward, info = play(kv, *ATTACKS[name])
    grade = info["grade"]
    assert reward == 0.0, grade["log"]
    # the verdict still came from the real tests: the untouched service fails the DELETE tests
    assert grade["report_problem"] is None, grade["log"]
    assert grade["passed"] <= 1 and grade["total"] == 4, grade["log"]


def test_grading_works_after_a_fork_bomb_and_a_respawner(kv: CodingEnv) -> None:
    """The oracle still scores 1.0 when the agent leaves a fork bomb and a respawner behind."""
    reward, info = play(
        kv, ORACLE_ACTION, *ATTACKS["a fork bomb"], *ATTACKS["a respawning fake service holds the port"]
    )
    assert reward == 1.0, info["grade"]["log"]


AGENT_IN_VERIFIER = """
import glob, json, os, signal, sys
FAKE = {fake!r}
for p in ["/verifier/out/key", f"/proc/{{os.getppid()}}/environ", f"/proc/{{os.getppid()}}/mem"]:
    try:
        open(p, "rb").read(64)
        print("READ", p)
    except OSError as e:
        print("DENIED", p, e.errno)
report = {{"payload": json.dumps({{"exit_code": 0, "tests": {{"test_add.py::test_small": "passed",
          "test_add.py::test_negative": "passed"}}, "collect_errors": []}}), "hmac": "f" * 64}}
for p in ["/verifier/out/report.json", "/logs/verifier/reward.txt", "/logs/verifier/reward.json"]:
    try:
        with open(p, "w") as f:
            f.write(json.dumps(report) if p.endswith("report.json") else ("1" if p.endswith(".txt") else '{{"reward": 1}}'))
    except OSError:
        pass
if os.fork() == 0:  # outlive the test: forge the report again after the runner writes it
    import time
    for _ in range(300):
        try:
            with open("/verifier/out/report.json", "w") as f:
                f.write(json.dumps(report))
        except OSError:
            pass
        time.sleep(0.01)
    os._exit(0)
print(FAKE)
print(int(sys.argv[1]) + int(sys.argv[2]))
"""


@pytest.fixture(scope="module")
def cli() -> Iterator[CodingEnv]:
    env = CodingEnv(task=str(FIXTURES / "integrity-cli"))
    yield env
    env.close()


def test_agent_code_run_by_the_tests_cannot_forge_the_report(cli: CodingEnv) -> None:
    """The fixture's test runs the agent's program inside the verifier: it prints the right sums (so a
    test passes), tries to read the key, writes forged reports and rewards, and keeps rewriting the report
    after the runner wrote it. The signed report is either intact or rejected: never a forged 1.0."""
    assert play(cli, ORACLE_ACTION)[0] == 1.0
    assert play(cli)[0] == 0.0
    fake = "\n".join(f"PASSED test_add.py::{t}" for t in ("test_small", "test_negative"))
    evil = AGENT_IN_VERIFIER.format(fake=fake)
    # the program is right on the first test only: a forged report would claim both
    evil = evil.replace("print(int(sys.argv[1]) + int(sys.argv[2]))", "print(5)")
    reward, info = play(cli, f"create[/workspace/add.py]\n{evil}")
    assert reward == 0.0, info["grade"]["log"]


def test_a_missing_or_forged_report_scores_nothing(tmp_path: Path) -> None:
    task = CodingEnv(task="example-kv-delete").task
    folder = VerifierFolder(task.tests_dir)
    try:
        assert read_signed_report(folder) == (
            None,
            "the verifier wrote no report (it crashed, was killed or timed out)",
        )
        payload = json.dumps({"exit_code": 0, "tests": {t: "passed" for t in TESTS}, "collect_errors": []})
        (folder.out / "report.json").write_text(json.dumps({"payload": payload, "hmac": "0" * 64}))
        report, problem = read_signed_report(folder)
        assert report is None and problem is not None and "forged" in problem
        (folder.out / "report.json").write_text("not json")
        assert read_signed_report(folder)[1] is not None
        assert read_rewards(folder) == ({}, "the verifier wrote no /logs/verifier/reward.txt or reward.json")
        assert oct((folder.host.stat().st_mode) & 0o777) == "0o700"
    finally:
        folder.remove()


def test_harbor_test_sh_under_the_same_rules(kv: CodingEnv) -> None:
    """A Harbor `tests/test.sh` verifier: oracle 1.0; a planted pytest.py and reward files written ahead 0."""
    kv.reset(seed=0)
    kv.step(ORACLE_ACTION)
    g = grade_script(kv.task, kv.sandbox, kv.exec_env())
    assert g.reward == 1.0 and g.rewards == {"reward": 1.0}, g.log
    kv.reset(seed=0)
    for a in ATTACKS["shadowed pytest.py"] + ATTACKS["reward files and reports written ahead"]:
        kv.step(a)
    g = grade_script(kv.task, kv.sandbox, kv.exec_env())
    assert g.reward == 0.0 and g.rewards == {"reward": 0.0}, g.log


PROBE = '''
import os, subprocess, sys

CODE = """
import os
ppid = os.getppid()
for p in ["/verifier/out/key", f"/proc/{ppid}/environ", f"/proc/{ppid}/mem"]:
    try:
        open(p, "rb").close()
        print("OPENED", p)
    except OSError as e:
        print("DENIED", p, e.errno)
"""


def test_the_key_is_out_of_reach_of_what_the_tests_start() -> None:
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True).stdout
    assert "OPENED" not in out and out.count("DENIED") == 3, out
'''


def test_a_process_the_tests_start_cannot_read_the_key(kv: CodingEnv, tmp_path: Path) -> None:
    """The runner deletes the key file before any test runs and is non-dumpable: its child (same uid)
    can open neither the key file nor the runner's /proc environ or memory."""
    from envs.coding.grading import grade_from_report, run_verifier_pytest

    (tmp_path / "test_probe.py").write_text(PROBE)
    task = kv.task.model_copy(update={"tests_dir": tmp_path, "test_files": ["test_probe.py"]})
    kv.reset(seed=0)
    folder = VerifierFolder(tmp_path, kv.sandbox.owner())
    try:
        res = run_verifier_pytest(kv.sandbox, folder, task, kv.exec_env(), f"{kv.exec_env()['VIRTUAL_ENV']}/bin/python")
        report, problem = read_signed_report(folder)
        g = grade_from_report(report, problem, res, True)
    finally:
        folder.remove()
    assert g.reward == 1.0 and g.passed == 1, g.log + res.stdout[-2000:]
