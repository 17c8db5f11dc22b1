"""Issue 43: thousands of generated bad requests to every route of a real server on loopback: no 5xx, every
4xx with a message that says what was wrong (the generator is `tests/server/fuzz.py`).

Before the fixes it found: 500s (a coding session with an unavailable backend, reset), and 400s / 404s /
405s whose whole message was "There was an error parsing the body", "Not Found", "Method Not Allowed".
The loop is bounded in count and in time; the server's limits are small so oversize bodies are cheap.
"""

from __future__ import annotations

from tests.server import fuzz

COUNT = 3000
TIME_BUDGET_S = 150.0
MAX_BODY = 65_536


def test_generated_bad_requests_get_4xx_with_a_message(server_factory) -> None:
    srv = server_factory("--allow-coding", "--max-body-bytes", str(MAX_BODY), "--max-sessions", "64")
    got = fuzz.run(srv.url, COUNT, seed=43, time_budget_s=TIME_BUDGET_S, max_body=MAX_BODY)
    print(f"sent {got.sent}: {dict(sorted(got.statuses.items(), key=str))}")
    assert got.sent >= 300, got.sent  # the time budget is a guard against a stuck server, not the usual stop
    assert not got.problems, f"{len(got.problems)} of {got.sent}:\n" + "\n".join(got.problems[:30])
    assert sum(n for code, n in got.statuses.items() if isinstance(code, int) and 400 <= code < 500) > got.sent / 2
    assert srv.proc.poll() is None  # and the server is still up
