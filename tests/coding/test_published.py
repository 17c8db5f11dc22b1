"""Published Harbor / Terminal-Bench 1 tasks (envs/coding/published): loading, the environment model, the
task's own verifier, and the integrity rules around it. Fixtures: look-alikes in the published layouts
(tests/coding/fixtures/published), not third-party tasks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from envs.coding.published import PublishedTask, UnreproducibleTaskError, load_published
from envs.coding.published import dockerfile as df
from envs.coding.published.verifier import _reward_file, scalar
from envs.coding.sandbox import unavailable_reason
from envs.coding.tasks import TaskFormatError, load_task_dir

FIXTURES = Path(__file__).parent / "fixtures" / "published"
ALL = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
needs_bwrap = pytest.mark.skipif(unavailable_reason("bwrap") is not None, reason=f"{unavailable_reason('bwrap')}")


def _env(task: str | Path, **kw):  # type: ignore[no-untyped-def]
    from envs.coding.env import CodingEnv

    return CodingEnv(task=str(task), **kw)


def _copy(name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(FIXTURES / name, tmp_path / name))


# --- loading ---------------------------------------------------------------------------------------------


def test_fixtures_load_as_published_with_their_workdir_copies_and_skipped_steps() -> None:
    assert len(ALL) == 6
    tasks = {n: load_task_dir(FIXTURES / n) for n in ALL}
    assert all(isinstance(t, PublishedTask) for t in tasks.values())
    t = tasks["harbor-word-stats"]
    assert isinstance(t, PublishedTask)
    assert (t.name, t.layout, t.workdir, t.verdict, t.service) == (
        "agentsim-fixtures/word-stats",  # [task] name
        "harbor",
        "/app",
        "reward-file",
        None,
    )
    assert t.difficulty == "easy" and t.verifier_timeout_sec == 60.0 and t.memory_mb == 2048
    assert [(c.source.name, c.dest) for c in t.environment.copies] == [("wordstats.py", "wordstats.py")]
    svc = tasks["harbor-todo-service"]
    assert isinstance(svc, PublishedTask) and svc.workdir == "/srv/api"  # [environment] workdir
    assert svc.service is not None and (svc.service.start_command, svc.service.port) == ("python3 server.py", 8093)
    abc = tasks["abc-bookshelf-api"]
    assert isinstance(abc, PublishedTask) and abc.layout == "terminal-bench" and abc.verdict == "pytest"
    assert [(c.source.name, c.dest) for c in abc.environment.copies] == [("bookshelf-api", "bookshelf-api")]
    assert [s.where for s in abc.environment.skipped] == ["Dockerfile:3"]
    assert abc.environment.env["PORT"] == "8095" and abc.verifier_env == {"TEST_DIR": "/tests"}
    yml = tasks["tb-solution-yaml"]
    assert isinstance(yml, PublishedTask) and yml.solution is not None and yml.solution.name == "solution.yaml"
    assert not yml.environment.skipped and not yml.environment.copies


def test_shipped_agentsim_tasks_still_load_as_agentsim_tasks() -> None:
    from envs.coding.tasks import CodingTask, shipped_tasks

    assert all(isinstance(load_task_dir(p), CodingTask) for p in shipped_tasks().values())


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new))


@pytest.mark.parametrize(
    ("name", "mutate", "where"),
    [
        (
            "harbor-word-stats",
            lambda d: _edit(d / "environment/Dockerfile", "COPY wordstats.py", "COPY nope.py"),
            "not found",
        ),
        (
            "harbor-word-stats",
            lambda d: _edit(d / "environment/Dockerfile", "COPY wordstats.py", "COPY ../task.toml"),
            "outside the build context",
        ),
        ("harbor-word-stats", lambda d: (d / "tests" / "test.sh").unlink(), "tests/test.sh"),
        ("harbor-word-stats", lambda d: (d / "solution" / "solve.sh").unlink(), "solution/solve.sh"),
        ("harbor-word-stats", lambda d: (d / "instruction.md").write_text("  \n"), "instruction"),
        (
            "harbor-word-stats",
            lambda d: _edit(d / "task.toml", "[verifier]", "[[steps]]\nname = 'a'\n[verifier]"),
            "steps",
        ),
        ("harbor-word-stats", lambda d: _edit(d / "task.toml", "cpus = 1", "cpus = -1"), "environment.cpus"),
        (
            "harbor-todo-service",
            lambda d: _edit(d / "task.toml", 'start_command = "python3 server.py"\n', ""),
            "metadata",
        ),
        (
            "tb-csv-summary",
            lambda d: _edit(d / "task.yaml", "parser_name: pytest", "parser_name: swebench"),
            "parser_name",
        ),
        ("tb-csv-summary", lambda d: _edit(d / "task.yaml", "instruction: |-", "instructions: |-"), "instruction"),
        ("tb-csv-summary", lambda d: (d / "run-tests.sh").unlink(), "run-tests.sh"),
        ("tb-solution-yaml", lambda d: (d / "solution.yaml").write_text("command: ls\n"), "(top level)"),
        ("tb-solution-yaml", lambda d: (d / "solution.yaml").write_text("- {min_timeout_sec: 1}\n"), "0.command"),
        ("tb-solution-yaml", lambda d: (d / "docker-compose.yaml").write_text("services: [1]\n"), "services"),
    ],
)
def test_broken_published_task_names_what_is_wrong(tmp_path: Path, name: str, mutate, where: str) -> None:  # type: ignore[no-untyped-def]
    d = _copy(name, tmp_path)
    mutate(d)
    with pytest.raises(TaskFormatError) as e:
        load_task_dir(d)
    assert where in str(e.value), str(e.value)


def test_minimal_harbor_task_every_section_optional(tmp_path: Path) -> None:
    d = tmp_path / "tiny"
    (d / "environment").mkdir(parents=True)
    (d / "tests").mkdir()
    (d / "task.toml").write_text("")
    (d / "instruction.md").write_text("Write hello.txt.")
    (d / "environment" / "Dockerfile").write_text("FROM ubuntu:24.04\nWORKDIR /app\n")
    (d / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    t = load_published(d)
    assert (t.name, t.workdir, t.solution, t.environment.skipped) == ("tiny", "/app", None, [])


# --- the Dockerfile reader -------------------------------------------------------------------------------


def _plan(tmp_path: Path, dockerfile: str, files: tuple[str, ...] = ("a.txt",)):  # type: ignore[no-untyped-def]
    for f in files:
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text("x")
    (tmp_path / "Dockerfile").write_text(dockerfile)
    b = df.read_dockerfile(tmp_path / "Dockerfile", tmp_path, file_label="Dockerfile", hidden=set())
    return df.plan_from(b)


def test_dockerfile_continuations_heredocs_env_and_relative_workdir(tmp_path: Path) -> None:
    plan = _plan(
        tmp_path,
        "FROM python:3.12 AS base\nARG ROOT=/srv\nENV APP=$ROOT/app \\\n    MODE=prod\n"
        "RUN <<EOF\npip install x\nCOPY not-an-instruction /x\nEOF\n"
        'WORKDIR ${APP}\nWORKDIR sub\nCOPY ["a.txt", "./"]\nUSER nobody\nCMD ["python"]\n',
    )
    assert plan.workdir == "/srv/app/sub" and plan.env["APP"] == "/srv/app" and plan.env["MODE"] == "prod"
    assert plan.base_image == "python:3.12"
    assert [(c.source.name, c.dest, c.into) for c in plan.copies] == [("a.txt", "", True)]
    assert [(s.where, s.step.split()[0]) for s in plan.skipped] == [("Dockerfile:5", "RUN"), ("Dockerfile:12", "USER")]


def test_dockerfile_steps_bwrap_cannot_reproduce_are_listed(tmp_path: Path) -> None:
    plan = _plan(
        tmp_path,
        "FROM golang AS build\nCOPY a.txt /src/\nFROM debian\nWORKDIR /app\nCOPY a.txt /etc/a.txt\n"
        "COPY --from=build /src /app/src\nADD https://example.invalid/x.tar.gz /app/\nADD a.txt.tar.gz /app/\n"
        "VOLUME /app/cache\n",
        files=("a.txt", "a.txt.tar.gz"),
    )
    whys = [s.why for s in plan.skipped]
    assert len(whys) == 6 and "multi-stage" in whys[0] and "another image" in whys[1]
    assert "URL or an archive" in whys[2] and "URL or an archive" in whys[3] and "VOLUME" in whys[4]
    assert "copies to /etc/a.txt: /etc is under /etc" in whys[5] and not plan.copies and not plan.roots


def test_copies_outside_the_workdir_make_each_top_folder_a_root(tmp_path: Path) -> None:
    plan = _plan(
        tmp_path,
        "FROM x\nWORKDIR /app/src\nCOPY a.txt ./\nCOPY a.txt /data/in/\nCOPY b.txt /opt/b.conf\n",
        ("a.txt", "b.txt"),
    )
    assert plan.workdir == "/app/src" and plan.roots == {"/app": "app", "/data": "data", "/opt": "opt"}
    assert [(c.source.name, c.dest) for c in plan.copies] == [
        ("a.txt", "app/src"),
        ("a.txt", "data/in"),
        ("b.txt", "opt/b.conf"),
    ]
    assert plan.mounts() == plan.roots and not plan.skipped
    single = _plan(tmp_path, "FROM x\nWORKDIR /app\nCOPY a.txt .\n")
    assert single.roots == {} and single.mounts() == {"/app": ""}


def test_no_workdir_or_a_system_workdir_falls_back_to_app_and_is_listed(tmp_path: Path) -> None:
    assert _plan(tmp_path, "FROM x\nCOPY a.txt /app/\n").workdir == "/app"
    plan = _plan(tmp_path, "FROM x\nWORKDIR /usr/src/app\n")
    assert plan.workdir == "/app" and "read-only" in plan.skipped[0].why


def test_copy_dot_into_root_keeps_the_workdir_part(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "FROM x\nWORKDIR /app\nCOPY . /\n", files=("app/main.py", "etc/other"))
    assert [(c.source.name, c.dest) for c in plan.copies] == [("app", "")]


def test_copy_dot_honours_dockerignore_inside_folders(tmp_path: Path) -> None:
    from envs.coding.published.workspace import materialize

    d = tmp_path / "t"
    env = d / "environment"
    (env / "secret").mkdir(parents=True)
    (env / "pkg").mkdir()
    (d / "tests").mkdir()
    (d / "task.toml").write_text("")
    (d / "instruction.md").write_text("Do it.")
    (d / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    (env / "Dockerfile").write_text("FROM x\nWORKDIR /app\nCOPY . .\n")
    (env / ".dockerignore").write_text("# comment\n*.log\nsecret/\n**/*.tmp\n")
    for f in ("app.py", "debug.log", "secret/key", "pkg/mod.py", "pkg/scratch.tmp"):
        (env / f).write_text("x")
    t = load_published(d)
    ws = tmp_path / "ws"
    ws.mkdir()
    materialize(t, ws)
    got = sorted(str(p.relative_to(ws)) for p in ws.rglob("*") if p.is_file())
    assert got == [".dockerignore", "Dockerfile", "app.py", "pkg/mod.py"]


def test_compose_other_services_and_volumes_are_listed(tmp_path: Path) -> None:
    (tmp_path / "docker-compose.yaml").write_text(
        "services:\n  client:\n    build: .\n    environment: {A: '1', TEST_DIR: '${T_BENCH_TEST_DIR}'}\n"
        "    volumes: ['${T_BENCH_TASK_LOGS_PATH}:/logs', './data:/data']\n  db:\n    image: postgres:16\n"
    )
    main = df.read_compose(tmp_path / "docker-compose.yaml", ("client",), {"T_BENCH_TEST_DIR": "/tests"})
    assert main.env == {"A": "1", "TEST_DIR": "/tests"} and main.dockerfile == tmp_path / "Dockerfile"
    assert [s.step for s in main.skipped] == ["service db (image postgres:16)", "./data:/data"]


# --- rewards ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("files", "rewards", "why"),
    [
        ({"reward.txt": "0.75\n"}, {"reward": 0.75}, ""),
        ({"reward.json": '{"a": 1, "b": 0.5}', "reward.txt": "0"}, {"a": 1.0, "b": 0.5}, ""),  # json first
        ({"reward.txt": "yes"}, {}, "not a number"),
        ({"reward.txt": "nan"}, {}, "not finite"),
        ({"reward.json": '{"a": "1"}'}, {}, "not a finite number"),
        ({"reward.json": '{"a": true}'}, {}, "not a finite number"),
        ({"reward.json": "{"}, {}, "not JSON"),
        ({}, {}, "wrote no"),
    ],
)
def test_reward_files_read_as_harbor_reads_them(tmp_path: Path, files: dict[str, str], rewards, why: str) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "verifier").mkdir()
    for name, text in files.items():
        (tmp_path / "verifier" / name).write_text(text)
    got, reason = _reward_file(tmp_path)
    assert got == rewards and why in reason


def test_scalar_is_the_reward_key_else_the_mean() -> None:
    assert scalar({"reward": 0.2, "x": 1.0}) == 0.2 and scalar({"a": 1.0, "b": 0.5}) == 0.75 and scalar({}) == 0.0


# --- running: oracle 1.0, immediate submit 0.0 -----------------------------------------------------------


@needs_bwrap
@pytest.mark.parametrize("name", ALL)
def test_oracle_scores_one_and_immediate_submit_zero(name: str) -> None:
    env = _env(FIXTURES / name, approximate=True)
    try:
        env.reset(seed=0)
        _, r0, term, _, info0 = env.step("submit[]")
        assert term and r0 == 0.0, info0["grade"]["log"]
        env.reset(seed=0)
        while True:
            _, r, term, trunc, info = env.step(env.expert_action())
            if term or trunc:
                break
        assert r == 1.0, info["grade"]["log"]
        assert info["grade"]["rewards"] and info0["grade"]["rewards"]  # every named reward is kept
        if name == "harbor-slug-multi-reward":
            assert info["grade"]["rewards"] == {"correctness": 1.0, "edge_cases": 1.0}
            assert info0["grade"]["rewards"] == {"correctness": 0.0, "edge_cases": 0.0}
            assert (info["grade"]["passed"], info["grade"]["total"]) == (4, 4)  # both pytest runs are shown
    finally:
        env.close()


@needs_bwrap
def test_unreproducible_steps_refuse_the_task_unless_approximate() -> None:
    with pytest.raises(UnreproducibleTaskError) as e:
        _env(FIXTURES / "abc-bookshelf-api")
    assert "Dockerfile:3: RUN apt-get update" in str(e.value) and "approximate=true" in str(e.value)
    env = _env(FIXTURES / "abc-bookshelf-api", approximate=True)
    env.close()


def test_the_docker_backend_refuses_only_what_the_engine_cannot_reproduce() -> None:
    """On an engine the Dockerfile is built (RUN runs); the verifier's internet lines still are not reproduced."""
    _env(FIXTURES / "abc-bookshelf-api", backend="docker").close()  # its RUN apt-get: the engine runs it
    with pytest.raises(UnreproducibleTaskError, match="the container engine cannot reproduce") as e:
        _env(FIXTURES / "harbor-word-stats", backend="docker")
    assert "curl -LsSf https://astral.sh/uv" in str(e.value) and "RUN" not in str(e.value)


@needs_bwrap
def test_agent_sees_the_workdir_and_can_write_it() -> None:
    env = _env(FIXTURES / "harbor-todo-service")
    try:
        obs, _ = env.reset(seed=0)
        assert "/srv/api" in obs
        out, *_ = env.step("bash[pwd; ls; touch /srv/api/new.txt && echo wrote]")
        assert out.startswith("/srv/api\nserver.py\nwrote")
        view, *_ = env.step("view[/srv/api/server.py]")
        assert view.startswith("/srv/api/server.py (") and "ThreadingHTTPServer" in view
        wrote, *_ = env.step("create[/srv/api/notes.md]\nhello")
        assert wrote.startswith("wrote /srv/api/notes.md")
        assert "hello" in env.step("bash[cat notes.md]")[0]
        missing, *_ = env.step("view[gone.txt]")
        assert "/srv/api/gone.txt does not exist" in missing
    finally:
        env.close()


# --- integrity ---------------------------------------------------------------------------------------------


SECRET = "test_secret_9c1e.py"


@needs_bwrap
def test_tests_and_solution_are_never_visible_from_the_agents_shell(tmp_path: Path) -> None:
    """Even when the Dockerfile copies the whole task folder (`COPY . /app`), the hidden files stay out."""
    d = _copy("tb-csv-summary", tmp_path)
    (d / "tests" / "test_outputs.py").rename(d / "tests" / SECRET)
    _edit(d / "run-tests.sh", "test_outputs.py", SECRET)
    _edit(d / "Dockerfile", "COPY sales.csv /app/sales.csv", "COPY . /app/")
    t = load_task_dir(d)
    assert isinstance(t, PublishedTask)
    assert set(t.environment.kept_out) >= {"tests", "run-tests.sh", "solution.sh"}
    env = _env(d, approximate=True)
    try:
        env.reset(seed=0)
        find = (
            "bash[find / \\( -path /proc -o -path /sys \\) -prune -o \\( -name "
            f"{SECRET} -o -name run-tests.sh -o -name solution.sh -o -name solve.sh \\) -print 2>/dev/null; "
            "ls -d /tests /logs /solution 2>&1; ls /app]"
        )
        out, *_ = env.step(find)
        assert SECRET not in out and "run-tests.sh" not in out and "solution.sh" not in out, out
        assert "sales.csv" in out and "'/tests': No such file" in out and "'/logs': No such file" in out
        while True:  # the oracle and the verifier still find them
            _, r, term, trunc, info = env.step(env.expert_action())
            if term or trunc:
                break
        assert r == 1.0, info["grade"]["log"]
    finally:
        env.close()


FAKE_PYTEST = (
    "import sys\n"
    "print('=========================== short test summary info ============================')\n"
    "print('PASSED /tests/test_outputs.py::test_summary_exists')\n"
    "print('PASSED /tests/test_outputs.py::test_summary_values')\n"
    "sys.exit(0)\n"
)


@needs_bwrap
def test_a_pytest_planted_in_the_workdir_cannot_forge_a_reward() -> None:
    """run-tests.sh runs `python3 -m pytest` from /app: without PYTHONSAFEPATH, /app/pytest.py would run."""
    env = _env(FIXTURES / "tb-csv-summary", approximate=True)
    try:
        env.reset(seed=0)
        env.step("create[/app/pytest.py]\n" + FAKE_PYTEST)
        out, *_ = env.step("bash[cd /app && python3 -m pytest /x]")
        assert "PASSED /tests/test_outputs.py::test_summary_values" in out  # the fake really shadows pytest here
        _, r, term, _, info = env.step("submit[]")
        assert term and r == 0.0, info["grade"]
        assert info["grade"]["passed"] == 0 and info["grade"]["total"] == 2
    finally:
        env.close()


FORCE_PASS = (
    "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n"
)


@needs_bwrap
def test_a_conftest_and_pytest_ini_planted_in_the_workdir_are_not_loaded() -> None:
    """pytest finds its rootdir, ini and conftest files from the test paths (/tests), not the WORKDIR."""
    env = _env(FIXTURES / "tb-csv-summary", approximate=True)
    try:
        env.reset(seed=0)
        env.step("create[/app/conftest.py]\n" + FORCE_PASS)
        env.step("create[/app/pytest.ini]\n[pytest]\naddopts = -p conftest\n")
        _, r, term, _, info = env.step("submit[]")
        assert term and r == 0.0 and info["grade"]["passed"] == 0, info["grade"]
    finally:
        env.close()


@needs_bwrap
def test_the_agent_cannot_write_a_reward_file() -> None:
    env = _env(FIXTURES / "harbor-slug-multi-reward")
    try:
        env.reset(seed=0)
        out, *_ = env.step('bash[mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt; echo "rc=$?"]')
        assert "rc=0" not in out
        _, r, *_ = env.step("submit[]")
        assert r == 0.0
    finally:
        env.close()


# --- datasets ---------------------------------------------------------------------------------------------


@needs_bwrap
def test_a_folder_of_tasks_is_a_dataset_played_by_seed() -> None:
    env = _env(FIXTURES, approximate=True)
    try:
        names = sorted(load_task_dir(FIXTURES / n).name for n in ALL)
        assert env._all == names
        _, info = env.reset(seed=7)
        assert info["task"] == names[7 % len(names)]
    finally:
        env.close()


def test_an_empty_folder_is_neither_a_task_nor_a_dataset(tmp_path: Path) -> None:
    with pytest.raises(TaskFormatError, match="nor any task folder under it"):
        _env(tmp_path)


def test_a_dataset_refuses_unreproducible_tasks_without_approximate() -> None:
    with pytest.raises(UnreproducibleTaskError) as e:
        _env(FIXTURES)
    assert "3 tasks declare steps" in str(e.value) and "'abc-bookshelf-api'" in str(e.value)
    assert "tests/test.sh:6: curl -LsSf https://astral.sh/uv" in str(e.value)
    assert "'tb-csv-summary'" in str(e.value) and "RUN pip install pytest" in str(e.value)


def test_verifier_lines_that_fetch_from_the_internet_are_listed() -> None:
    t = load_task_dir(FIXTURES / "tb-csv-summary")
    assert isinstance(t, PublishedTask)
    lines = [s.where for s in t.environment.skipped if s.where.startswith("run-tests.sh")]
    assert lines == [f"run-tests.sh:{n}" for n in (4, 5, 7, 16, 18, 20)]
    clean = load_task_dir(FIXTURES / "abc-bookshelf-api")
    assert isinstance(clean, PublishedTask) and not [s for s in clean.environment.skipped if "run-tests" in s.where]


def test_solution_yaml_becomes_one_script(tmp_path: Path) -> None:
    from envs.coding.published.workspace import solution_yaml_script

    keys = tmp_path / "solution.yaml"
    keys.write_text("- {command: vim a.txt}\n- {command: ihello, append_enter: false}\n")
    assert "# left out (typed without Enter): 'ihello'" in solution_yaml_script(keys)
    script = solution_yaml_script(FIXTURES / "tb-solution-yaml" / "solution.yaml")
    assert script.splitlines()[2:4] == ["mkdir -p /app/out", "sleep 0.1"]
    assert json.dumps(script).count("chmod +x /app/count.sh") == 1


# --- the formats' own models (harbor, terminal-bench: Python >= 3.12, so in their own venv) ----------------

TB_VERSION = "0.2.18"
OWN_MODELS = """
import sys, warnings
from pathlib import Path
import yaml
warnings.simplefilter("ignore")
from harbor.models.task.config import TaskConfig
from harbor.models.task.paths import TaskPaths as HarborPaths
from terminal_bench.handlers.trial_handler import Task, TaskPaths as TBPaths
from terminal_bench.terminal.models import TerminalCommand
for folder in map(Path, sys.argv[1:]):
    if (folder / "task.toml").is_file():
        paths = HarborPaths(folder)
        cfg = TaskConfig.model_validate_toml(paths.config_path.read_text())
        assert paths.instruction_path.is_file() and paths.environment_dir.is_dir(), folder
        assert paths.discovered_test_path is not None and paths.discovered_solve_path is not None, folder
        print("harbor", folder.name, cfg.task.name if cfg.task else None, cfg.verifier.timeout_sec)
    else:
        task = Task.model_validate(yaml.safe_load((folder / "task.yaml").read_text()))
        paths = TBPaths(folder)
        assert paths.run_tests_path.is_file() and paths.docker_compose_path.is_file(), folder
        if paths.solution_path.suffix == ".yaml":
            assert TerminalCommand.from_yaml_list(paths.solution_path), folder
        print("terminal-bench", folder.name, task.parser_name.value, task.max_test_timeout_sec)
"""


def _own_models_python() -> str:
    """The Harbor check venv of test_tasks.py, with terminal-bench added (PyPI must answer once)."""
    import subprocess

    from tests.coding.test_tasks import _harbor_python

    py = _harbor_python()
    has_tb = "import importlib.util, sys; sys.exit(importlib.util.find_spec('terminal_bench') is None)"
    probe = subprocess.run([py, "-c", has_tb], capture_output=True)
    if probe.returncode:
        pip = subprocess.run(
            [py, "-m", "pip", "install", "-q", f"terminal-bench=={TB_VERSION}"],
            capture_output=True,
            text=True,
            timeout=900,
        )
        if pip.returncode:
            pytest.skip(f"cannot install terminal-bench=={TB_VERSION} here: {pip.stderr[-300:]}")
    return py


def _quiet() -> dict[str, str]:
    import os

    return {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}  # terminal-bench imports litellm


def test_fixtures_load_in_harbors_and_terminal_benchs_own_models() -> None:
    import subprocess

    res = subprocess.run(
        [_own_models_python(), "-c", OWN_MODELS, *(str(FIXTURES / n) for n in ALL)],
        capture_output=True,
        text=True,
        timeout=300,
        env=_quiet(),
    )
    assert res.returncode == 0, res.stderr[-3000:]
    lines = res.stdout.splitlines()
    assert sum(line.startswith("harbor ") for line in lines) == 3, res.stdout
    assert sum(line.startswith("terminal-bench ") for line in lines) == 3, res.stdout


def _data_task(tmp_path: Path) -> Path:
    """A Harbor task whose Dockerfile also copies into /data, outside its WORKDIR /app."""
    d = tmp_path / "sum-data"
    env = d / "environment"
    (env / "data").mkdir(parents=True)
    (d / "tests").mkdir()
    (d / "solution").mkdir()
    (d / "task.toml").write_text("")
    (d / "instruction.md").write_text("Write the sum of the numbers in /data/input.txt to /data/sum.txt.")
    (env / "Dockerfile").write_text("FROM python:3.12-slim\nWORKDIR /app\nCOPY notes.md ./\nCOPY data/ /data/\n")
    (env / "notes.md").write_text("notes\n")
    (env / "data" / "input.txt").write_text("3\n4\n")
    (d / "tests" / "test.sh").write_text(
        "python3 -m pytest /tests/test_sum.py -rA && echo 1 > /logs/verifier/reward.txt "
        "|| echo 0 > /logs/verifier/reward.txt\n"
    )
    (d / "tests" / "test_sum.py").write_text(
        "from pathlib import Path\n\n\ndef test_sum():\n    assert Path('/data/sum.txt').read_text().strip() == '7'\n"
    )
    (d / "solution" / "solve.sh").write_text(
        "python3 -c \"print(sum(map(int, open('/data/input.txt').read().split())))\" > /data/sum.txt\n"
    )
    return d


@needs_bwrap
def test_a_folder_the_dockerfile_copies_outside_the_workdir_is_writable_and_verified(tmp_path: Path) -> None:
    env = _env(_data_task(tmp_path))
    try:
        env.reset(seed=0)
        out, *_ = env.step("bash[pwd; ls; cat /data/input.txt; touch /data/x && echo ok]")
        assert out.startswith("/app\nnotes.md\n3\n4\nok"), out
        assert env.step("view[/data/input.txt]")[0].startswith("/data/input.txt (2 lines)")
        assert env.step("submit[]")[1] == 0.0
        env.reset(seed=0)
        while True:
            _, r, term, trunc, info = env.step(env.expert_action())
            if term or trunc:
                break
        assert r == 1.0, info["grade"]["log"]
    finally:
        env.close()


@needs_bwrap
def test_a_root_folder_the_agent_removes_comes_back_at_reset(tmp_path: Path) -> None:
    env = _env(_data_task(tmp_path))
    try:
        env.reset(seed=0)
        out, *_ = env.step("bash[rm -rf /workspace/data; cat /data/input.txt]")
        assert "No such file" in out
        env.reset(seed=1)
        out, *_ = env.step("bash[cat /data/input.txt && touch /data/y && echo ok]")
        assert out.startswith("3\n4\nok"), out
    finally:
        env.close()
