"""The Docker backend, through the `docker` SDK, wherever an engine answers.

Unlike most harnesses, limits are on by default: memory (no swap beyond it), CPUs, pids,
ulimits for CPU time / file size / processes, and the network is `none` unless the task allows
it. The root filesystem is read-only except /workspace (bind-mounted from the host, so the
shared file tools, snapshot and restore work unchanged: the engine must run on this host) and a
tmpfs /tmp; all capabilities are dropped and setuid is disabled (no-new-privileges).
One container per sandbox, kept alive by `sleep infinity`; every exec is a `docker exec` under
coreutils `timeout`, read as a stream so its output is capped like bwrap's. close() removes the
container with force, which kills everything in it. One difference from bwrap: the stream of a
`docker exec` ends only when every holder of its stdout closes it, so a background job started
without redirecting its output (`server &`) holds the exec until the timeout; redirect it
(`server >log 2>&1 &`), as the env's tools should anyway.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from pathlib import Path
from typing import Any

from envs.coding.sandbox.base import MOUNT_POINT, ExecResult, Limits, Sandbox, SandboxError, _CappedBuffer

log = logging.getLogger(__name__)

DEFAULT_IMAGE = "python:3.11-slim"


def docker_unavailable_reason() -> str | None:
    """None when a Docker engine answers a ping, else why not."""
    try:
        import docker
    except ImportError:
        return "the docker SDK is not installed (pip install docker)"
    try:
        client = docker.from_env(timeout=5)
        client.ping()
        client.close()
    except Exception as e:  # noqa: BLE001 - any failure means "no engine here"
        return f"no Docker engine answers: {type(e).__name__}: {e}"
    return None


class DockerSandbox(Sandbox):
    """A container per sandbox (see the module doc)."""

    backend = "docker"

    def __init__(
        self,
        workspace: str | Path | None = None,
        limits: Limits | None = None,
        network: bool = False,
        image: str = DEFAULT_IMAGE,
        cpus: float = 1.0,
        user: str = "1000:1000",
    ) -> None:
        super().__init__(workspace, limits, network)
        self.image = image
        self.cpus = cpus
        self.user = user
        self._client: Any = None
        self._container: Any = None

    def _owner(self) -> tuple[int, int] | None:
        uid, _, gid = self.user.partition(":")
        return (int(uid), int(gid or uid))

    def _start(self) -> None:
        """Create and start the container with the limits; pull the image if missing."""
        import docker
        from docker.types import Ulimit

        try:
            self._client = docker.from_env()
            lim = self.limits
            self._container = self._client.containers.run(
                self.image,
                command=["sleep", "infinity"],
                detach=True,
                user=self.user,
                working_dir=MOUNT_POINT,
                volumes={str(self.workspace): {"bind": MOUNT_POINT, "mode": "rw"}},
                network_mode="bridge" if self.network else "none",
                mem_limit=lim.memory_bytes,
                memswap_limit=lim.memory_bytes,
                nano_cpus=int(self.cpus * 1e9),
                pids_limit=lim.processes,
                ulimits=[
                    Ulimit(name="cpu", soft=lim.cpu_seconds, hard=lim.cpu_seconds),
                    Ulimit(name="fsize", soft=lim.file_bytes, hard=lim.file_bytes),
                    Ulimit(name="nproc", soft=lim.processes, hard=lim.processes),
                    Ulimit(name="core", soft=0, hard=0),
                ],
                read_only=True,
                tmpfs={"/tmp": f"size={lim.tmp_bytes}", "/home/user": f"size={lim.tmp_bytes}"},
                environment={"HOME": "/home/user"},
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                init=True,
                auto_remove=False,
            )
        except Exception as e:
            raise SandboxError(f"docker sandbox failed to start: {e}") from e
        if self._owner() is not None:
            from envs.coding.sandbox.bwrap import _chown_tree

            _chown_tree(self.workspace, self._owner())  # type: ignore[arg-type]

    def exec(self, cmd: str, timeout: float | None = None, env: dict[str, str] | None = None) -> ExecResult:
        """`docker exec` under `timeout -s KILL`, streamed and capped; exit 137 when killed."""
        self._check_running()
        t0 = time.monotonic()
        secs = timeout if timeout is not None else self.limits.timeout_s
        api = self._client.api
        ex = api.exec_create(
            self._container.id,
            ["timeout", "-s", "KILL", f"{secs}s", "sh", "-c", cmd],
            environment=env or {},
            workdir=MOUNT_POINT,
            user=self.user,
        )
        out, err = _CappedBuffer(self.limits.output_bytes), _CappedBuffer(self.limits.output_bytes)
        kill_after = self.limits.output_bytes * self.limits.output_kill_factor
        output_killed = False
        for so, se in api.exec_start(ex["Id"], stream=True, demux=True):
            if so:
                out.feed(so)
            if se:
                err.feed(se)
            if out.total + err.total > kill_after:
                output_killed = True
                break
        if output_killed:  # stop the flood: `timeout` leads its own process group (host pid: local engine)
            pid = api.exec_inspect(ex["Id"]).get("Pid")
            if pid:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        code = api.exec_inspect(ex["Id"]).get("ExitCode")
        code = 137 if code is None else code
        return ExecResult(
            exit_code=code,
            stdout=out.text(),
            stderr=err.text(),
            truncated=out.truncated or err.truncated,
            timed_out=code == 137 and time.monotonic() - t0 >= secs,
            output_killed=output_killed,
            stdout_bytes=out.total,
            stderr_bytes=err.total,
            duration_s=time.monotonic() - t0,
        )

    def processes(self) -> list[int]:
        """Host pids of the container's processes (`docker top`); empty once it is removed."""
        if self._container is None or self.closed:
            return []
        top = self._container.top()
        col = top["Titles"].index("PID")
        return [int(row[col]) for row in top.get("Processes") or []]

    def _shutdown(self) -> None:
        if self._container is not None:
            try:
                self._container.remove(force=True)
            except Exception as e:  # noqa: BLE001
                log.error("could not remove container %s: %s", self._container.id, e)
        if self._client is not None:
            self._client.close()
