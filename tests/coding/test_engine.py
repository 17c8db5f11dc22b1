"""Published tasks on the container engine (podman through the Docker API): the Dockerfile built for real.

The `harbor-run-steps` fixture's start state exists only once its RUN steps ran (generated data, a file the
image removes, a tool outside the WORKDIR on the image's PATH): the engine scores its oracle 1.0, bwrap
refuses it by default and, approximated, scores the same oracle 0.0, which is the point of the engine.
Engine tests skip with the reason when no engine answers or the base image is not built.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from envs.coding.env import ORACLE_ACTION, CodingEnv
from envs.coding.published import UnreproducibleTaskError, check_reproducible, load_published
from envs.coding.published.images import BASE_DEBIAN, NoBaseImageError, _rewrite_from, base_for
from envs.coding.sandbox import unavailable_reason

pytestmark = pytest.mark.timeout(900)

# its own folder: fixtures/published is played as one dataset on bwrap, where this task cannot pass
RUN_STEPS = Path(__file__).resolve().parent / "fixtures" / "engine" / "harbor-run-steps"


def _engine_reason() -> str | None:
    from tests.coding.test_conformance import engine_skip_reason

    return engine_skip_reason()


def _skip_unless(backend: str) -> None:
    reason = unavailable_reason("bwrap") if backend == "bwrap" else _engine_reason()
    if reason is not None:
        pytest.skip(reason if backend == "docker" else f"bwrap backend unavailable: {reason}")


def test_from_lines_are_served_by_the_base_and_stage_names_kept() -> None:
    text = "FROM --platform=linux/amd64 python:3.12 AS build\nRUN make\nFROM build\nFROM ubuntu:24.04\nCOPY --from=build /a /a\n"
    got = _rewrite_from(text, "localhost/x:1").splitlines()
    assert got[0] == "FROM localhost/x:1 AS build"
    assert got[2] == "FROM build"
    assert got[3] == "FROM localhost/x:1"
    assert got[4] == "COPY --from=build /a /a"


def test_the_engine_reproduces_run_steps_that_bwrap_refuses() -> None:
    task = load_published(RUN_STEPS)
    bwrap = task.environment.not_reproduced("bwrap")
    assert [s.step.split()[0] for s in bwrap] == ["RUN", "RUN", "RUN", "COPY"]  # the generator's COPY lands in /tmp
    assert task.environment.not_reproduced("docker") == []
    check_reproducible(task, approximate=False, backend="docker")
    with pytest.raises(UnreproducibleTaskError, match="a bwrap sandbox cannot reproduce") as e:
        check_reproducible(task, approximate=False, backend="bwrap")
    assert "make_data.py" in str(e.value)


def test_an_unknown_from_fails_naming_the_image_and_the_local_ones() -> None:
    _skip_unless("docker")
    from envs.coding.sandbox.engine import client

    c = client()
    try:
        assert base_for(c, "python:3.13-slim-bookworm") == BASE_DEBIAN
        assert base_for(c, "ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624") == BASE_DEBIAN
        with pytest.raises(NoBaseImageError, match=r"FROM node:20-alpine: no local image serves it.*" + BASE_DEBIAN):
            base_for(c, "node:20-alpine")
    finally:
        c.close()


def _episode(env: CodingEnv, actions: list[str]) -> tuple[float, dict[str, object]]:
    env.reset(seed=0)
    reward, info = 0.0, dict[str, object]()
    for a in [*actions, "submit[]"]:
        _, reward, done, _, info = env.step(a)
        if done:
            break
    return reward, info


def test_run_steps_task_on_the_engine_oracle_one_noop_zero() -> None:
    _skip_unless("docker")
    env = CodingEnv(task=str(RUN_STEPS), backend="docker")
    try:
        obs, _ = env.reset(seed=0)
        assert "You are in /app." in obs
        look = env.step("bash[ls /app/data | wc -l; ls /app/data/list-99.txt; stamp; pwd]")[0]
        assert look.startswith("12\n") and "No such file" in look and "stamped by the image" in look and "/app" in look
        oracle, info = _episode(env, [ORACLE_ACTION])
        assert oracle == 1.0, info
        noop, _ = _episode(env, [])
        assert noop == 0.0
    finally:
        env.close()


def test_run_steps_task_approximated_on_bwrap_misses_what_the_run_steps_made() -> None:
    _skip_unless("bwrap")
    env = CodingEnv(task=str(RUN_STEPS), backend="bwrap", approximate=True)
    try:
        oracle, info = _episode(env, [ORACLE_ACTION])
        assert oracle == 0.0  # no data, no `stamp`: the start state bwrap builds is not the published one
        grade = info["grade"]
        assert isinstance(grade, dict) and any("make_data.py" in s for s in grade["approximated"])
    finally:
        env.close()


# Attacks on the published verifier from inside the agent's container; each leaves the task unsolved.
ATTACKS = {
    "reward file where the verifier writes": "bash[mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt]",
    "reward file in the workspace": "bash[mkdir -p /app/logs/verifier && echo 1 > /app/logs/verifier/reward.txt]",
    "a respawning writer left running": (
        "bash[nohup sh -c 'while :; do mkdir -p /logs/verifier /tmp/logs; echo 1 > /logs/verifier/reward.txt; "
        "echo 1 > /tmp/logs/reward.txt; sleep 0.1; done' >/dev/null 2>&1 &]"
    ),
    "tests planted where the verifier reads them": "bash[mkdir -p /app/tests && echo 'def test_ok(): pass' > /app/tests/test_outputs.py]",
    "a conftest that passes everything": (
        "create[/app/conftest.py]\nimport pytest\n\n@pytest.hookimpl(hookwrapper=True)\n"
        "def pytest_runtest_makereport(item, call):\n    outcome = yield\n    rep = outcome.get_result()\n"
        "    rep.outcome = 'passed'\n    rep.longrepr = None\n"
    ),
}


@pytest.mark.parametrize("backend", ["bwrap", "docker"])
def test_the_agent_cannot_reach_the_verifier(backend: str) -> None:
    """Tests and solution are not in the agent's view (not even inside the built image), and no attack scores."""
    _skip_unless(backend)
    env = CodingEnv(task=str(RUN_STEPS), backend=backend, approximate=backend == "bwrap")
    try:
        env.reset(seed=0)
        seen = env.step(
            "bash[ls /tests /solution /logs 2>&1; find / -name test_outputs.py -o -name solve.sh 2>/dev/null]"
        )[0]
        assert "test_outputs.py" not in seen.replace("ls: cannot access", "") and "solve.sh" not in seen
        for name, action in ATTACKS.items():
            reward, info = _episode(env, [action])
            assert reward == 0.0, (name, info)
    finally:
        env.close()
