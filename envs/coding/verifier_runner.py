"""Runs pytest inside the verifier sandbox and writes a signed JSON report (see envs/coding/grading.py).

Not imported by agentsim: `grading.py` copies this file into the verifier's read-only folder and
runs it with the task venv's `python -I -B` (no cwd, user site, PYTHONPATH or script folder on
sys.path), so it imports only the standard library and the venv's pytest:

    python -I -B run.py KEY_FILE REPORT_FILE -- PYTEST_ARGS...

The per-grading key is read and its file deleted before pytest is imported, and the process makes
itself non-dumpable, so a process the tests start (the same uid) cannot read the key from the file,
`/proc/<pid>/environ` or `/proc/<pid>/mem`. The verdict is what pytest's own hooks reported, never
what anything printed.
"""

from __future__ import annotations

import ctypes
import hashlib
import hmac
import json
import os
import sys
from typing import Any

PR_SET_DUMPABLE = 4
_SEVERITY = {"skipped": 0, "xfailed": 1, "passed": 2, "xpassed": 3, "failed": 4, "error": 5}


class Recorder:
    """Each test's outcome from pytest's reports (the worst of setup / call / teardown)."""

    def __init__(self) -> None:
        self.tests: dict[str, str] = {}
        self.collect_errors: list[str] = []

    def _set(self, nodeid: str, outcome: str) -> None:
        prev = self.tests.get(nodeid)
        if prev is None or _SEVERITY[outcome] > _SEVERITY[prev]:
            self.tests[nodeid] = outcome

    def pytest_runtest_logreport(self, report: Any) -> None:
        xfail = hasattr(report, "wasxfail")
        if report.when == "call":
            if xfail:
                self._set(report.nodeid, "xfailed" if report.skipped else "xpassed")
            else:
                self._set(report.nodeid, str(report.outcome))
        elif report.failed:
            self._set(report.nodeid, "error")
        elif report.skipped and report.when == "setup":
            self._set(report.nodeid, "xfailed" if xfail else "skipped")

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.collect_errors.append(str(report.nodeid) or "<collection>")


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[2] != "--":
        print("usage: run.py KEY_FILE REPORT_FILE -- PYTEST_ARGS...", file=sys.stderr)
        return 64
    key_file, report_file, args = argv[0], argv[1], argv[3:]
    try:
        ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    with open(key_file, "rb") as f:
        key = f.read().strip()
    os.unlink(key_file)
    import pytest

    rec = Recorder()
    code = int(pytest.main(args, plugins=[rec]))
    payload = json.dumps({"exit_code": code, "tests": rec.tests, "collect_errors": rec.collect_errors}, sort_keys=True)
    signature = hmac.new(key, payload.encode(), hashlib.sha256).hexdigest()
    tmp = report_file + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"payload": payload, "hmac": signature}, f)
    os.replace(tmp, report_file)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
