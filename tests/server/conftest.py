"""Real env-server processes on 127.0.0.1 (free ports), sharing one small WebShop catalog cache."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

os.environ.setdefault("AGENTSIM_CACHE", tempfile.mkdtemp(prefix="agentsim-server-tests-"))

from tests.conftest import free_port, wait_until_up  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SMALL = 2000
CORRIDOR = "corridor=agentsim-test/Corridor-v0@tests.toy_env:CorridorEnv"
BASE_ARGS = ["--env-kwargs", f'webshop={{"num_products": {SMALL}}}', "--env", CORRIDOR, "--preload", "webshop"]


@dataclass
class Server:
    url: str
    port: int
    proc: subprocess.Popen
    log: Path

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_server(tmp: Path, *args: str, port: int | None = None, token: str | None = None) -> Server:
    port = port or free_port()
    log = tmp / f"server-{port}-{time.monotonic_ns()}.log"
    cmd = [sys.executable, "-m", "envs.server", "--port", str(port), *BASE_ARGS, *args]
    env = dict(os.environ)
    if token:
        env["AGENTSIM_SERVER_TOKEN"] = token
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=open(log, "w"), stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    wait_until_up(proc, f"{url}/health", log, "env server", timeout_s=90)
    return Server(url, port, proc, log)


@pytest.fixture
def server_factory(tmp_path) -> Iterator:
    started: list[Server] = []

    def make(*args: str, port: int | None = None, token: str | None = None) -> Server:
        s = start_server(tmp_path, *args, port=port, token=token)
        started.append(s)
        return s

    yield make
    for s in started:
        s.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Server]:
    s = start_server(tmp_path_factory.mktemp("server"), "--max-sessions", "128")
    yield s
    s.stop()
