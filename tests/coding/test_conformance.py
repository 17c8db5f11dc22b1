"""Third-party conformance: 20 published Terminal-Bench tasks, unedited, on bwrap and on the container engine.

Each task's oracle must score 1.0 and an immediate submit 0.0. The tasks (tests/coding/conformance/tasks) are
copied byte for byte from a public repository; manifest.json records the repository, commit and each file's
git blob id, and the first test checks the copies still match. Their `run-tests.sh` installs curl and uv from
the internet, which neither backend reproduces (no network for the verifier): both arms run with
approximate=True, and the skipped lines are the same on both. The engine arm is skipped with the reason when
no engine answers or its base image is not built (`python -m envs.coding.sandbox.engine build-base`).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from envs.coding.env import CodingEnv
from envs.coding.published import load_published
from envs.coding.sandbox import unavailable_reason

pytestmark = pytest.mark.timeout(600)

HERE = Path(__file__).resolve().parent / "conformance"
MANIFEST = json.loads((HERE / "manifest.json").read_text())
TASKS = [t["name"] for t in MANIFEST["tasks"]]


def engine_skip_reason() -> str | None:
    """Why the engine arm cannot run here (None: it can)."""
    reason = unavailable_reason("docker")
    if reason is not None:
        return f"docker backend unavailable: {reason}"
    from envs.coding.published.images import BASE_DEBIAN, has_image
    from envs.coding.sandbox.engine import client

    c = client()
    try:
        if not has_image(c, BASE_DEBIAN):
            return f"the engine has no {BASE_DEBIAN} (python -m envs.coding.sandbox.engine build-base)"
    finally:
        c.close()
    return None


# CI's time cap: `AGENTSIM_ENGINE_CONFORMANCE=N` runs the engine arm on the first N tasks only (all 20 by default;
# each engine task builds an image and runs two containers)
ENGINE_TASKS = int(os.environ.get("AGENTSIM_ENGINE_CONFORMANCE") or len(TASKS))


def _skip_unless(backend: str, name: str = "") -> None:
    if backend == "docker" and name in TASKS[ENGINE_TASKS:]:
        pytest.skip(f"AGENTSIM_ENGINE_CONFORMANCE={ENGINE_TASKS}: the engine arm runs the first {ENGINE_TASKS} tasks")
    reason = unavailable_reason("bwrap") if backend == "bwrap" else engine_skip_reason()
    if reason is not None:
        pytest.skip(reason if backend == "docker" else f"bwrap backend unavailable: {reason}")


def test_the_copies_are_the_published_files() -> None:
    """Every file is the origin's blob (git's hash of the bytes), and nothing else is in a task's folder."""
    assert len(TASKS) >= 20
    for t in MANIFEST["tasks"]:
        folder = HERE / "tasks" / t["name"]
        on_disk = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
        assert on_disk == sorted(t["files"]), t["name"]
        for rel, blob in t["files"].items():
            got = subprocess.run(["git", "hash-object", str(folder / rel)], capture_output=True, text=True, check=True)
            assert got.stdout.strip() == blob, f"{t['name']}/{rel} differs from {MANIFEST['repository']}"


def test_what_each_backend_cannot_reproduce_is_listed() -> None:
    """bwrap and the engine skip the same verifier lines here (the Dockerfiles have no RUN step to differ on)."""
    for name in TASKS:
        plan = load_published(HERE / "tasks" / name).environment
        bwrap, engine = plan.not_reproduced("bwrap"), plan.not_reproduced("docker")
        assert [s.where for s in bwrap] == [s.where for s in engine], name
        assert any("curl" in s.step for s in engine) and any(s.step.startswith("uv ") for s in engine), name


def _oracle_and_noop(backend: str, name: str) -> tuple[float, float, dict[str, object]]:
    env = CodingEnv(task=str(HERE / "tasks" / name), backend=backend, approximate=True)
    try:
        env.reset(seed=0)
        done, reward, info = False, 0.0, dict[str, object]()
        while not done:
            _, reward, done, _, info = env.step(env.expert_action())
        oracle = reward
        env.reset(seed=0)
        _, noop, done, _, _ = env.step("submit[]")
        assert done
        return oracle, noop, info
    finally:
        env.close()


@pytest.mark.parametrize("backend", ["bwrap", "docker"])
@pytest.mark.parametrize("name", TASKS)
def test_oracle_scores_one_and_an_immediate_submit_zero(backend: str, name: str, record_property) -> None:
    _skip_unless(backend, name)
    oracle, noop, info = _oracle_and_noop(backend, name)
    record_property("oracle", oracle)
    record_property("noop", noop)
    grade = info["grade"]
    assert isinstance(grade, dict)
    assert oracle == 1.0, grade["log"]
    assert noop == 0.0
    assert grade["approximated"], "the skipped verifier lines are reported with the grade"
