"""Task dependencies, prepared once per requirement set outside the sandbox (docs/coding.md).

A venv made with the host's `/usr/bin/python3` (the interpreter the sandbox sees; the pyenv
Python under /root is invisible there) plus `pip install` of the task's requirements and the
verifier's (`VERIFIER_REQUIREMENTS`), and a `node_modules` from `npm install`, each in a folder
keyed by a hash of what it holds, under `CACHE_ROOT` (world-traversable, because bwrap resolves
binds as an unprivileged uid). A build happens under a file lock and is marked complete last, so
concurrent builders wait for one another and a crashed build is redone. The sandbox mounts each
folder read-only at the same path (a venv's scripts name their interpreter by absolute path).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel, ConfigDict

log = logging.getLogger(__name__)

CACHE_ROOT = Path(os.environ.get("AGENTSIM_CODING_CACHE", "/var/cache/agentsim/coding"))
SYSTEM_PYTHON = "/usr/bin/python3"
VERIFIER_REQUIREMENTS = ("pytest>=8", "httpx>=0.27")  # the hidden tests run with these
DONE = ".agentsim-complete"
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


class DepsError(RuntimeError):
    """A dependency set could not be built (the message holds the installer's output)."""


class Deps(BaseModel):
    """Prepared dependencies of one task: what to mount and what to put on PATH."""

    model_config = ConfigDict(frozen=True)

    venv: Path
    node_dir: Path | None = None  # holds node_modules/

    def ro_binds(self) -> dict[str, str]:
        """{host path: sandbox path}: the same path inside, read-only."""
        binds = {str(self.venv): str(self.venv)}
        if self.node_dir is not None:
            binds[str(self.node_dir)] = str(self.node_dir)
        return binds

    def env(self) -> dict[str, str]:
        """Environment for execs in the sandbox: the venv first on PATH, node_modules on NODE_PATH."""
        path = [f"{self.venv}/bin"]
        env = {"VIRTUAL_ENV": str(self.venv), "PYTHONDONTWRITEBYTECODE": "1"}
        if self.node_dir is not None:
            path.append(f"{self.node_dir}/node_modules/.bin")
            env["NODE_PATH"] = f"{self.node_dir}/node_modules"
        env["PATH"] = ":".join([*path, SYSTEM_PATH])
        return env


def _key(kind: str, items: Sequence[str]) -> str:
    blob = json.dumps([kind, sorted(set(items))])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _traversable(path: Path) -> None:
    """Make `path` and its parents up to CACHE_ROOT's parent usable by other uids."""
    path.mkdir(parents=True, exist_ok=True)
    for p in [path, *path.parents]:
        if p == Path("/") or not str(p).startswith(str(CACHE_ROOT.parent)):
            break
        mode = p.stat().st_mode
        if mode & 0o005 != 0o005:
            os.chmod(p, mode | 0o055)


@contextmanager
def _locked(lock: Path) -> Iterator[None]:
    with open(lock, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _run(argv: list[str], what: str, timeout: float) -> None:
    res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env={**os.environ, "PIP_NO_INPUT": "1"})
    if res.returncode != 0:
        raise DepsError(f"{what} failed ({res.returncode}): {(res.stderr or res.stdout)[-2000:]}")


def _build(kind: str, items: Sequence[str], build: Callable[[Path], None]) -> Path:
    root = CACHE_ROOT / kind
    _traversable(root)
    target = root / _key(kind, items)
    if (target / DONE).is_file():
        return target
    with _locked(root / f"{target.name}.lock"):
        if (target / DONE).is_file():  # built by someone else while we waited
            return target
        if target.exists():  # a crashed build
            shutil.rmtree(target)
        t0 = time.monotonic()
        try:
            build(target)
        except BaseException:
            shutil.rmtree(target, ignore_errors=True)
            raise
        subprocess.run(["chmod", "-R", "a+rX", str(target)], check=True)
        (target / DONE).write_text(json.dumps({"items": sorted(set(items)), "seconds": time.monotonic() - t0}))
        log.info("built %s %s in %.1f s", kind, target, time.monotonic() - t0)
    return target


def python_env(requirements: Sequence[str], timeout: float = 900) -> Path:
    """The venv for `requirements` (+ the verifier's), built once."""
    items = [*VERIFIER_REQUIREMENTS, *requirements]

    def build(target: Path) -> None:
        _run([SYSTEM_PYTHON, "-m", "venv", str(target)], "python -m venv", timeout)
        pip = [str(target / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        _run([*pip, *items], f"pip install {' '.join(items)}", timeout)

    return _build("venvs", items, build)


def node_env(packages: Sequence[str], timeout: float = 900) -> Path | None:
    """The folder holding node_modules for `packages`, built once (None when there are none)."""
    if not packages:
        return None

    def build(target: Path) -> None:
        target.mkdir(parents=True)
        (target / "package.json").write_text(json.dumps({"name": "agentsim-deps", "private": True}))
        npm = ["npm", "install", "--prefix", str(target), "--no-audit", "--no-fund", "--loglevel=error"]
        _run([*npm, *packages], f"npm install {' '.join(packages)}", timeout)

    return _build("npm", packages, build)


def prepare(requirements: Sequence[str] = (), npm: Sequence[str] = ()) -> Deps:
    """Everything a task needs, built once per requirement set (blocks while another process builds it)."""
    return Deps(venv=python_env(requirements), node_dir=node_env(npm))
