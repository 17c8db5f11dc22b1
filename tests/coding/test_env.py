"""The coding env end to end on the two example tasks (bwrap; skipped with the reason where it cannot run)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import pytest

import envs  # noqa: F401  (registers agentsim/Coding-v0)
from envs.coding.env import ALL_TASKS, ORACLE_ACTION, CodingEnv
from envs.coding.expert import expert_plan
from envs.coding.sandbox import Limits, unavailable_reason
from envs.coding.tools import ActionError, parse_action, tool_call_action, tool_schemas
from envs.contract import check_text_env, restore_env, snapshot_env

REASON = unavailable_reason("bwrap")
needs_bwrap = pytest.mark.skipif(REASON is not None, reason=f"bwrap backend unavailable: {REASON}")
EXAMPLES = ["example-kv-delete", "example-greeting-start"]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def kv() -> Iterator[CodingEnv]:
    env = CodingEnv(task="example-kv-delete")
    yield env
    env.close()


def run_expert(env: CodingEnv) -> tuple[float, dict]:
    env.reset(seed=0)
    taken = []
    for _ in range(10):
        taken.append(env.expert_action())
        _, reward, term, trunc, info = env.step(taken[-1])
        if term or trunc:
            assert tuple(taken) == expert_plan()
            return float(reward), info
    raise AssertionError("the expert did not submit")


# --- parsing (no sandbox) ------------------------------------------------------------------------


def test_parse_text_and_json_forms() -> None:
    assert parse_action("bash[ls -la [a-z]*]").args == {"command": "ls -la [a-z]*"}
    assert parse_action("view[src/app.py:3-9]").args == {"path": "src/app.py", "start": 3, "end": 9}
    assert parse_action("create[a.py]\nx = [1]\n").args == {"path": "a.py", "content": "x = [1]\n"}
    assert parse_action("create[a.py\nx = 1\n]").args == {"path": "a.py", "content": "x = 1\n"}
    block = "str_replace[a.py]\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE"
    assert parse_action(block).args == {"path": "a.py", "old": "x = 1", "new": "x = 2"}
    assert parse_action("submit[]").tool == "submit"
    call = parse_action(tool_call_action("create", {"path": "b.txt", "content": "hi"}))
    assert (call.tool, call.args) == ("create", {"path": "b.txt", "content": "hi"})
    assert {t["function"]["name"] for t in tool_schemas()} == {"bash", "view", "create", "str_replace", "submit"}
    for bad in ("bash[]", "run[ls]", "str_replace[a.py]\nno block", '{"tool": "rm"}', "submit[now]", "view[x"):
        with pytest.raises(ActionError):
            parse_action(bad)


# --- the env -------------------------------------------------------------------------------------------


def test_local_backend_is_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="does not run on the 'local' backend.*/workspace.*backend='bwrap'"):
        CodingEnv(task="example-kv-delete", backend="local")
    with pytest.raises(ValueError, match="unknown backend 'chroot'; choose one of bwrap, docker"):
        CodingEnv(task="example-kv-delete", backend="chroot")


def test_task_storage_mb_is_the_workspace_disk_quota() -> None:
    """Harbor's `[environment] storage_mb` bounds the workspace unless the caller sets disk_bytes."""
    env = CodingEnv(task="example-kv-delete")  # its task.toml: storage_mb = 1024
    assert env.task.storage_mb == 1024 and env.limits.disk_bytes == 1024 * 1024**2
    mine = CodingEnv(task="example-kv-delete", limits={"disk_bytes": 3 * 1024**3, "disk_files": 500})
    assert mine.limits.disk_bytes == 3 * 1024**3 and mine.limits.disk_files == 500
    plain = CodingEnv(task="example-greeting-start")  # no storage_mb: the default quota
    assert plain.task.storage_mb is None and plain.limits.disk_bytes == Limits().disk_bytes


def test_task_memory_and_cpus_are_container_totals_on_docker_only() -> None:
    """Harbor's `memory_mb` / `cpus` mean a container's totals: Docker gets them (mem_limit, nano_cpus); bwrap keeps
    its per-process address-space limit, which a task's total would wrongly cut (V8 reserves more than it uses)."""
    from envs.coding.sandbox import make_sandbox

    docker_env = CodingEnv(task="example-kv-delete", backend="docker")  # its task.toml: cpus 1, memory_mb 1024
    assert docker_env.task.memory_mb == 1024 and docker_env.limits.memory_bytes == 1024 * 1024**2
    assert docker_env.sandbox_options() == {"cpus": 1.0}
    sb = make_sandbox("docker", limits=docker_env.limits, start=False, **docker_env.sandbox_options())
    try:  # built, not started: no engine is needed to see what the container would be given
        assert sb.cpus == 1.0 and sb.limits.memory_bytes == 1024 * 1024**2
    finally:
        sb.close()
    mine = CodingEnv(task="example-kv-delete", backend="docker", limits={"memory_bytes": 3 * 1024**3})
    assert mine.limits.memory_bytes == 3 * 1024**3
    bwrap_env = CodingEnv(task="example-kv-delete")
    assert bwrap_env.limits.memory_bytes == Limits().memory_bytes and bwrap_env.sandbox_options() == {}


@needs_bwrap
def test_a_disk_flood_fails_with_a_clear_message() -> None:
    env = CodingEnv(task="example-kv-delete", limits={"disk_bytes": 32 * 1024**2, "disk_files": 400})
    try:
        env.reset(seed=0)
        obs, reward, term, _, info = env.step("bash[head -c 100M /dev/zero > big]")
        assert "error" not in info and not term and "[disk quota" in obs and "Limits.disk_bytes" in obs
        if env.sandbox.disk is not None and env.sandbox.disk.mode == "loop":
            assert "No space left on device" in obs
        obs, *_ = env.step("bash[for i in $(seq 1 1000); do : > f$i || break; done; ls | wc -l]")
        assert "[disk quota" in obs and "Limits.disk_files" in obs
        obs, *_ = env.step("bash[rm -f big f* && echo ok > small.txt && cat small.txt]")
        assert obs.startswith("ok\n") and "[disk quota" not in obs
        env.reset(seed=0)  # the pristine workspace comes back
        obs, *_ = env.step("bash[ls]")
        assert obs.startswith("server.py\n")
    finally:
        env.close()


@needs_bwrap
@pytest.mark.parametrize("task", EXAMPLES)
def test_expert_solves_and_idle_agent_fails(task: str) -> None:
    env = CodingEnv(task=task)
    try:
        reward, info = run_expert(env)
        assert reward == 1.0 and info["grade"]["reward"] == 1.0 and info["grade"]["pass_fraction"] == 1.0
        assert all(t["outcome"] == "passed" for t in info["grade"]["tests"])
        env.reset(seed=0)
        _, reward, term, _, info = env.step("submit[]")
        assert (reward, term) == (0.0, True)
        assert info["grade"]["passed"] < info["grade"]["total"]
        assert any(t["outcome"] == "failed" for t in info["grade"]["tests"])
    finally:
        env.close()


@needs_bwrap
def test_bash_session_keeps_cwd_and_exports(kv: CodingEnv) -> None:
    kv.reset(seed=0)
    kv.step("bash[mkdir -p sub && cd sub && export GREETING=hello]")
    obs, *_ = kv.step("bash[pwd; echo $GREETING]")
    assert "/workspace/sub\nhello" in obs
    obs, _, _, _, info = kv.step("bash[exit 3]")
    assert "[exit code 3]" in obs and info["cwd"] == "/workspace/sub"
    kv.step("create[note.txt]\nrelative to the session's folder\n")
    assert kv.sandbox.read_file("sub/note.txt") == b"relative to the session's folder\n"
    kv.reset(seed=0)  # a new episode: a fresh session and the pristine workspace
    obs, *_ = kv.step("bash[pwd; echo ${GREETING:-unset}; ls]")
    assert obs.startswith("/workspace\nunset\nserver.py\n")


@needs_bwrap
def test_output_is_truncated_and_the_cut_marked(kv: CodingEnv) -> None:
    kv.reset(seed=0)
    obs, *_ = kv.step("bash[seq 1 100000]")
    assert "output truncated" in obs and obs.startswith("1\n2\n") and "100000" in obs
    assert len(obs) < kv.output_chars + 500


@needs_bwrap
def test_timeout_is_reported() -> None:
    env = CodingEnv(task="example-kv-delete", command_timeout=1)
    try:
        env.reset(seed=0)
        obs, reward, term, _, info = env.step("bash[sleep 30]")
        assert "timed out after 1 s" in obs and not term and "error" not in info
    finally:
        env.close()


@needs_bwrap
@pytest.mark.parametrize(
    "action", ["view[/etc/passwd]", "view[../../etc/passwd]", "create[/tmp/x]\nhi", "create[../x]\nhi", "view[nope.py]"]
)
def test_paths_outside_the_workspace_are_refused(kv: CodingEnv, action: str) -> None:
    kv.reset(seed=0)
    obs, reward, term, trunc, info = kv.step(action)
    assert "error" in info and reward == 0.0 and not term and not trunc


@needs_bwrap
def test_symlink_escape_is_refused(kv: CodingEnv) -> None:
    kv.reset(seed=0)
    kv.step("bash[ln -s / root && ln -s /etc/passwd pw]")
    for action in ("view[root/etc/passwd]", "view[pw]", "create[root/tmp/planted]\nx"):
        _, _, _, _, info = kv.step(action)
        assert "error" in info, action


@needs_bwrap
def test_view_create_str_replace(kv: CodingEnv) -> None:
    kv.reset(seed=0)
    kv.step("create[pkg/mod.py]\ndef f():\n    return 1\n")
    obs, _, _, _, info = kv.step(
        "str_replace[pkg/mod.py]\n<<<<<<< SEARCH\n    return 1\n=======\n    return 2\n>>>>>>> REPLACE"
    )
    assert "error" not in info, info.get("error")
    obs, *_ = kv.step("view[pkg/mod.py]")
    assert "     2\t    return 2" in obs
    _, _, _, _, info = kv.step("str_replace[pkg/mod.py]\n<<<<<<< SEARCH\nmissing\n=======\nx\n>>>>>>> REPLACE")
    assert "occurs 0 times" in info["error"]
    obs, *_ = kv.step("view[pkg]")
    assert "mod.py" in obs


@needs_bwrap
def test_hidden_files_are_not_visible_to_the_agent(kv: CodingEnv) -> None:
    kv.reset(seed=0)
    obs, *_ = kv.step(
        "bash[ls -A /grader; ls -A /workspace; grep -rl test_delete /workspace /tmp /home /grader 2>/dev/null]"
    )
    assert obs.strip().splitlines()[0] == "server.py"  # /grader is empty; only the repository in /workspace
    assert "test_kv" not in obs and "solve" not in obs


@needs_bwrap
def test_snapshot_restore_files_session_and_processes(kv: CodingEnv) -> None:
    kv.reset(seed=0)
    kv.step("bash[cd /tmp && echo one > /workspace/a.txt]")
    snap = kv.snapshot()
    kv.step("bash[cd /workspace && rm a.txt && echo two > b.txt && (sleep 300 &)]")
    assert kv.sandbox.exec("pgrep -x sleep").exit_code == 0
    kv.restore(snap)
    assert kv.sandbox.read_file("a.txt") == b"one\n"
    obs, _, _, _, info = kv.step("bash[pwd; ls /workspace]")
    assert obs.startswith("/tmp\na.txt\nserver.py")
    assert kv.sandbox.exec("pgrep -x sleep").exit_code == 1  # processes are stopped by restore


@needs_bwrap
def test_grade_is_the_same_twice_and_leaves_nothing_running(kv: CodingEnv) -> None:
    kv.reset(seed=0)
    kv.step(ORACLE_ACTION)
    first, second = kv.grade(), kv.grade()
    assert first == second and first.reward == 1.0
    assert kv.sandbox.exec("ls -A /grader; pgrep -f 'python3 server[.]py'").stdout == ""


@needs_bwrap
def test_the_oracle_command_differs_per_process() -> None:
    code = "from envs.coding.env import ORACLE_ACTION; print(ORACLE_ACTION)"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert other.stdout.strip() != ORACLE_ACTION


@needs_bwrap
def test_contract_through_gymnasium_make() -> None:
    env = gym.make("agentsim/Coding-v0", task="example-greeting-start")
    try:
        check_text_env(env, seed=0)
        env.reset(seed=0)
        env.step("bash[echo x > y.txt]")
        snap = snapshot_env(env)
        env.step("bash[rm y.txt]")
        restore_env(env, snap)
        assert env.unwrapped.sandbox.read_file("y.txt") == b"x\n"  # type: ignore[attr-defined]
    finally:
        env.close()


@needs_bwrap
def test_task_all_picks_the_task_by_seed() -> None:
    env = CodingEnv(task=ALL_TASKS)
    try:
        names = env._all
        assert names is not None and len(names) >= 2
        _, info = env.reset(seed=1)
        assert info["task"] == names[1]
        _, info = env.reset(seed=len(names))
        assert info["task"] == names[0]
    finally:
        env.close()
    made = gym.make("agentsim/Coding-v0", task=ALL_TASKS)  # restore() across a task switch included
    try:
        check_text_env(made, seed=1)
    finally:
        made.close()


@needs_bwrap
def test_agents_run_scripted_solves(tmp_path: Path) -> None:
    out = tmp_path / "run"
    res = subprocess.run(
        [sys.executable, "-m", "agents.run", "env=coding", "brain=scripted", "episodes=2", f"out={out}"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=900,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["episodes_completed"] == 2 and summary["summary"]["success_rate"] == 1.0
    records = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    assert len(records) == 2


@needs_bwrap
def test_env_server_serves_coding_by_task_name_only(tmp_path: Path) -> None:
    from envs.server.client import RemoteEnv, RemoteEnvError
    from tests.conftest import free_port, wait_until_up

    port = free_port()
    log = tmp_path / "server.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "envs.server", "--port", str(port), "--allow-coding"],  # opt-in (issue 43)
        cwd=ROOT,
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(proc, f"{url}/health", log, "env server", timeout_s=90)
        env = RemoteEnv(url=url, env="coding", kwargs={"task": "example-kv-delete"})
        try:
            env.reset(seed=0)
            for _ in range(6):
                _, reward, term, _, info = env.step(env.expert_action())
                if term:
                    break
            assert reward == 1.0 and info["grade"]["reward"] == 1.0
        finally:
            env.close()
        for bad in ({"task": str(ROOT / "envs/coding/tasks/examples/harbor-kv-delete")}, {"backend": "local"}):
            remote = RemoteEnv(url=url, env="coding", kwargs=bad)
            with pytest.raises(RemoteEnvError, match="task|backend"):
                remote.reset(seed=0)
            remote.close()
    finally:
        proc.terminate()
        proc.wait(10)


@needs_bwrap
def test_agents_collect_on_coding_resumes_to_exactly_n(tmp_path: Path) -> None:
    """`python -m agents.collect env=coding` stores trajectories like the other envs; a rerun after a crash that cut
    a record mid-write tops the store up to exactly N, with nothing lost or duplicated."""
    from agents.trajectories import TrajectoryStore

    out = tmp_path / "c"

    def collect(n: int) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "agents.collect", "env=coding", "brain=scripted", f"episodes={n}"]
        return subprocess.run(
            [*cmd, f"out={out}", "progress=false", "concurrency=2"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=900,
        )

    first = collect(2)
    assert first.returncode == 0, first.stderr[-3000:]
    traj = out / "trajectories.jsonl"
    with open(traj, "a") as f:  # what a kill in the middle of a write leaves
        f.write('{"schema_version": "1.0", "episode_id": "coding-9", "env"')
    again = collect(3)
    assert again.returncode == 0, again.stderr[-3000:]
    eps = list(TrajectoryStore(traj).read(strict=True))
    assert len(eps) == len({e.episode_id for e in eps}) == 3
    assert all(e.env == "coding" and e.outcome.success for e in eps), [(e.env, e.outcome) for e in eps]
    assert json.loads((out / "summary.json").read_text())["episodes_this_run"] == 1
