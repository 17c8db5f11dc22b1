"""Task loading: both layouts into one model, broken folders named by file and field, Harbor's own model."""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from envs.coding.tasks import CodingTask, TaskFormatError, load_task, load_task_dir, shipped_tasks, task_dirs
from envs.coding.tasks.loader import TASKS_ROOT

HARBOR = TASKS_ROOT / "examples" / "harbor-kv-delete"
TB = TASKS_ROOT / "examples" / "tb-greeting-start"
HARBOR_VERSION = "0.26.0"
HARBOR_VENV = Path("/var/cache/agentsim/harbor-check/venv")  # Harbor needs Python >= 3.12; see _harbor_python


def test_harbor_layout_loads() -> None:
    t = load_task_dir(HARBOR)
    assert isinstance(t, CodingTask)
    assert (t.name, t.layout, t.service_port, t.env_aware) == ("example-kv-delete", "harbor", 8080, False)
    assert t.start_command == "python3 server.py"
    assert t.repo_dir == HARBOR / "environment" / "app"
    assert t.test_files == ["test_kv.py"] and t.solution_script.name == "solve.sh"
    assert (t.agent_timeout_sec, t.verifier_timeout_sec, t.memory_mb, t.allow_internet) == (300.0, 60.0, 1024, False)
    assert "DELETE" in t.instruction


def test_terminal_bench_layout_loads() -> None:
    t = load_task_dir(TB)
    assert (t.name, t.layout, t.env_aware, t.start_command) == (
        "example-greeting-start",
        "terminal-bench",
        True,
        "sh start.sh",
    )
    assert t.repo_dir == TB / "greeter"
    assert t.test_script.name == "run-tests.sh" and t.solution_script.name == "solution.sh"
    assert t.verifier_timeout_sec == 60 and "start.sh" in t.instruction


def test_shipped_tasks_are_found_by_name() -> None:
    names = shipped_tasks()
    assert {"example-kv-delete", "example-greeting-start"} <= set(names)
    assert len(names) == len(task_dirs())
    assert load_task("example-kv-delete").path == HARBOR
    with pytest.raises(KeyError, match="unknown coding task"):
        load_task("no-such-task")
    with pytest.raises(KeyError):
        load_task(str(HARBOR), allow_path=False)  # the env server's clients: names only


def _copy(src: Path, tmp_path: Path) -> Path:
    dest = tmp_path / src.name
    shutil.copytree(src, dest)
    return dest


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


@pytest.mark.parametrize(
    ("mutate", "file", "field"),
    [
        (
            lambda d: _edit(d / "task.toml", "service_port = 8080", 'service_port = "eighty"'),
            "task.toml",
            "metadata.service_port",
        ),
        # without service_port the task loads as published (no service): start_command alone is then the mistake
        (lambda d: _edit(d / "task.toml", "service_port = 8080\n", ""), "task.toml", "metadata"),
        (lambda d: _edit(d / "task.toml", 'start_command = "python3 server.py"\n', ""), "task.toml", "metadata"),
        (
            lambda d: _edit(d / "task.toml", "timeout_sec = 60.0", "timeout_sec = -1"),
            "task.toml",
            "verifier.timeout_sec",
        ),
        (
            lambda d: _edit(d / "task.toml", "requirements = []", "requirements = 3"),
            "task.toml",
            "metadata.requirements",
        ),
        (lambda d: _edit(d / "task.toml", "[metadata]", "[metadata"), "task.toml", "(syntax)"),
        (lambda d: (d / "instruction.md").unlink(), "instruction.md", "instruction"),
        (lambda d: (d / "solution" / "solve.sh").unlink(), "solve.sh", "solution/solve.sh"),
        (lambda d: (d / "tests" / "test_kv.py").unlink(), "tests", "tests"),
        (lambda d: shutil.rmtree(d / "environment" / "app"), "app", "environment/app"),
    ],
)
def test_broken_harbor_folder_names_file_and_field(tmp_path: Path, mutate, file: str, field: str) -> None:  # type: ignore[no-untyped-def]
    d = _copy(HARBOR, tmp_path)
    mutate(d)
    with pytest.raises(TaskFormatError) as e:
        load_task_dir(d)
    assert Path(e.value.file).name == file and e.value.field == field, str(e.value)
    assert file in str(e.value) and field in str(e.value)


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: _edit(d / "task.yaml", "instruction: |-", "instructions: |-"), "instruction"),
        (lambda d: _edit(d / "task.yaml", "service_port: 8081", "service_port: 99999"), "service_port"),
        (
            lambda d: _edit(d / "task.yaml", "start_command: sh start.sh", "start_command: python3 app.py"),
            "(top level)",
        ),
        (lambda d: (d / "extra").mkdir(), "repo_dir"),
        (lambda d: _edit(d / "task.yaml", "tags: [", "tags: ]["), "(syntax)"),
    ],
)
def test_broken_terminal_bench_folder_names_file_and_field(tmp_path: Path, mutate, field: str) -> None:  # type: ignore[no-untyped-def]
    d = _copy(TB, tmp_path)
    mutate(d)
    with pytest.raises(TaskFormatError) as e:
        load_task_dir(d)
    assert Path(e.value.file).name == "task.yaml" and e.value.field == field, str(e.value)


def test_unknown_keys_are_tolerated(tmp_path: Path) -> None:
    d = _copy(TB, tmp_path)
    (d / "task.yaml").write_text((d / "task.yaml").read_text() + "some_future_key: [1, 2]\n")
    assert load_task_dir(d).name == "example-greeting-start"
    h = _copy(HARBOR, tmp_path / "h")
    (h / "task.toml").write_text((h / "task.toml").read_text() + "\n[some_table]\nx = 1\n")
    assert load_task_dir(h).layout == "harbor"


def test_not_a_task_folder(tmp_path: Path) -> None:
    with pytest.raises(TaskFormatError, match="neither task.toml"):
        load_task_dir(tmp_path)


# --- Harbor's own task model -------------------------------------------------------------------------

CHECK = textwrap.dedent(
    """
    import sys, warnings
    from pathlib import Path
    from harbor.models.task.config import TaskConfig
    from harbor.models.task.paths import TaskPaths
    warnings.simplefilter("ignore")
    for folder in sys.argv[1:]:
        paths = TaskPaths(Path(folder))
        cfg = TaskConfig.model_validate_toml(paths.config_path.read_text())
        assert paths.instruction_path.is_file(), folder
        assert paths.environment_dir.is_dir(), folder
        assert paths.discovered_solve_path is not None, folder
        assert paths.discovered_test_path is not None, folder
        for key in ("start_command", "service_port", "env_aware", "requirements", "npm"):
            assert key in cfg.metadata, (folder, key)
        print("ok", cfg.metadata.get("name"), cfg.environment.memory_mb, cfg.verifier.timeout_sec)
    """
)


def _pyenv_python() -> str | None:
    """A Python >= 3.12 that pyenv installed but does not put on PATH (its shims answer only the global one)."""
    import os

    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = sorted(root.glob("3.1[2-9]*/bin/python3"))
    return str(found[-1]) if found else None


def _harbor_python() -> str:
    """A Python >= 3.12 with `harbor` installed (Harbor requires 3.12; the project runs on 3.11):
    a venv under /var/cache/agentsim/harbor-check made with pyenv's 3.12 and pip (PyPI must answer)."""
    py = HARBOR_VENV / "bin" / "python"
    ok = (
        py.exists()
        and subprocess.run([str(py), "-c", "import harbor.models.task.config"], capture_output=True).returncode == 0
    )
    if ok:
        return str(py)
    base = shutil.which("python3.12") or shutil.which("python3.13") or _pyenv_python()
    if base is None:
        pytest.skip("Harbor needs Python >= 3.12 and none is installed here")
    made = subprocess.run([base, "-m", "venv", str(HARBOR_VENV)], capture_output=True, text=True)
    if made.returncode or not py.exists():
        pytest.skip(f"cannot make a Python >= 3.12 venv with {base}: {(made.stderr or made.stdout)[-300:]}")
    pip = subprocess.run(
        [str(py), "-m", "pip", "install", "-q", f"harbor=={HARBOR_VERSION}"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if pip.returncode:
        pytest.skip(f"cannot install harbor=={HARBOR_VERSION} offline here: {pip.stderr[-300:]}")
    return str(py)


def test_shipped_harbor_tasks_load_in_harbors_own_model() -> None:
    folders = [p for p in task_dirs() if (p / "task.toml").is_file()]
    assert folders
    res = subprocess.run(
        [_harbor_python(), "-c", CHECK, *map(str, folders)], capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.count("ok ") == len(folders)


# --- the dependency cache ------------------------------------------------------------------------------


def test_deps_cache_builds_once_under_concurrency(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from envs.coding import deps

    monkeypatch.setattr(deps, "CACHE_ROOT", tmp_path / "cache")
    builds: list[Path] = []

    def build(target: Path) -> None:
        builds.append(target)
        target.mkdir(parents=True)
        (target / "made").write_text("x")

    results: list[Path] = []
    threads = [
        threading.Thread(target=lambda: results.append(deps._build("venvs", ["b", "a"], build))) for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(builds) == 1 and len(set(results)) == 1
    assert (results[0] / deps.DONE).is_file()
    assert deps._key("venvs", ["a", "b"]) == deps._key("venvs", ["b", "a", "a"]) != deps._key("npm", ["a", "b"])
    (results[0] / deps.DONE).unlink()  # a crashed build (no completion mark) is redone
    assert deps._build("venvs", ["a", "b"], build) == results[0] and len(builds) == 2


def test_deps_env_puts_the_venv_first() -> None:
    from envs.coding.deps import Deps

    d = Deps(venv=Path("/c/venvs/v"), node_dir=Path("/c/npm/n"))
    env = d.env()
    assert env["PATH"].startswith("/c/venvs/v/bin:/c/npm/n/node_modules/.bin:")
    assert env["NODE_PATH"] == "/c/npm/n/node_modules" and d.ro_binds() == {
        "/c/venvs/v": "/c/venvs/v",
        "/c/npm/n": "/c/npm/n",
    }
