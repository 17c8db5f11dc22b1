"""The Docker backend, through the `docker` SDK, wherever an engine answers.

Unlike most harnesses, limits are on by default: memory (no swap beyond it), CPUs, pids,
ulimits for CPU time / file size / processes, and the network is `none` unless the task allows
it. The root filesystem is read-only except /workspace (bind-mounted from the host, so the
shared file tools, snapshot and restore work unchanged: the engine must run on this host) and a
tmpfs /tmp and $HOME; all capabilities are dropped and setuid is disabled (no-new-privileges).
One container per sandbox, kept alive by `sleep infinity` under Docker's init; every exec is a
`docker exec` under coreutils `timeout`, read as a stream so its output is capped like bwrap's.
close() removes the container with force, which kills everything in it.

Userland. By default (`image=None`) the container runs the *host's* userland, as the bwrap
sandbox does: a tiny local image (`HOST_IMAGE`, imported from an in-memory tar of empty folders
and the host's `/bin -> usr/bin`-style links, no pull, no network) with the host's /usr and /etc
bind-mounted read-only, minus the same secrets bwrap hides. So `/usr/bin/python3`, node, and the
coding env's prepared venvs (made with the host's python, mounted read-only at their own paths
with `ro_binds`) work unchanged, and the isolation is Docker's (namespaces, cgroup limits, its
seccomp profile). `image="python:3.11-slim"` (any image) runs that image's own userland instead.

The workspace's disk quota is the shared one (disk.py): the loop-mounted image sits on the
workspace path before the container starts, so the bind mount carries it.

One difference from bwrap: the stream of a `docker exec` ends only when every holder of its
stdout closes it, so a background job started without redirecting its output (`server &`) holds
the exec until the timeout; redirect it (`server >log 2>&1 &`), as the env's tools do.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import signal
import tarfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from envs.coding.sandbox.base import MOUNT_POINT, ExecResult, Limits, Sandbox, SandboxError, _CappedBuffer
from envs.coding.sandbox.engine import host_ulimits, import_rootfs

log = logging.getLogger(__name__)

HOME = "/home/user"
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
HOST_IMAGE_REPO = "localhost/agentsim/host-userland"  # localhost/: podman would look up docker.io/ otherwise
VERIFIER_USER = "1001:1001"  # the verifier container runs as another uid than the agent (1000)
# the same secrets bwrap hides, and for the same reason: /etc is the host's, read-only
HIDDEN_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers")
HIDDEN_DIRS = ("/etc/ssh", "/etc/ssl/private", "/etc/sudoers.d")
# top-level folders of the host image: mount points (rootfs is read-only) and /sbin, a real folder
# because Docker puts its init at /sbin/docker-init and cannot create it inside the read-only /usr
ROOT_DIRS = ("usr", "etc", "tmp", "var", "home", "workspace", "proc", "sys", "dev", "sbin", "run", "opt")
LIB_LINKS = ("bin", "lib", "lib64", "lib32", "libx32")
# podman's API gives containers nofile=1048576 unless told: above this host's hard limit, runc then fails
NOFILE = min(4096, host_ulimits()["nofile"][1])
MASK_FILE = Path("/var/cache/agentsim/docker/masked-empty")


def docker_unavailable_reason() -> str | None:
    """None when a Docker engine answers a ping, else why not."""
    try:
        import docker  # noqa: F401
    except ImportError:
        return "the docker SDK is not installed (pip install docker)"
    from envs.coding.sandbox.engine import client as engine_client

    try:
        client = engine_client(timeout=5)
        client.ping()
        client.close()
    except Exception as e:  # noqa: BLE001 - any failure means "no engine here"
        return f"no Docker engine answers: {type(e).__name__}: {e}"
    return None


def host_rootfs_tar() -> tuple[bytes, str]:
    """The host-userland image's whole filesystem as a tar, and a tag naming its layout.

    Empty folders plus the host's top-level links (`bin -> usr/bin` on merged-/usr systems); a
    top-level folder that is a real directory on the host is bind-mounted instead (`host_mounts`)."""
    buf = io.BytesIO()
    layout: list[str] = []
    with tarfile.open(fileobj=buf, mode="w") as tar:

        def add_dir(name: str) -> None:
            info = tarfile.TarInfo(name)
            # /tmp and $HOME 1777: their tmpfs copies this mode up (podman ignores a tmpfs `mode`), so a
            # one-shot container's user (the verifier's uid) can write them
            mode = 0o1777 if name in ("tmp", "home/user") else 0o755
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, mode, 0
            tar.addfile(info)
            layout.append(f"{name}/{mode:o}")

        for d in ROOT_DIRS:
            add_dir(d)
        add_dir("home/user")
        for link in LIB_LINKS:
            host = Path("/") / link
            if host.is_symlink():
                info = tarfile.TarInfo(link)
                info.type, info.linkname, info.mode, info.mtime = tarfile.SYMTYPE, os.readlink(host), 0o777, 0
                tar.addfile(info)
                layout.append(f"{link}->{info.linkname}")
            elif host.is_dir():
                add_dir(link)
        info = tarfile.TarInfo("var/tmp")
        info.type, info.linkname, info.mode, info.mtime = tarfile.SYMTYPE, "../tmp", 0o777, 0
        tar.addfile(info)
    tag = hashlib.sha256("\n".join(layout).encode()).hexdigest()[:12]
    return buf.getvalue(), tag


def mask_file() -> str:
    """An empty host file nobody but root may read, bound over each hidden file: reading
    /etc/shadow inside then fails (EACCES, no capabilities), as it does in a bwrap sandbox."""
    MASK_FILE.parent.mkdir(parents=True, exist_ok=True)
    if not MASK_FILE.exists():
        MASK_FILE.touch()
    os.chmod(MASK_FILE, 0)
    return str(MASK_FILE)


def host_mounts() -> list[tuple[str, str]]:
    """(host path, container path) read-only binds that give the container the host's userland."""
    binds = [("/usr", "/usr"), ("/etc", "/etc")]
    for link in LIB_LINKS:
        host = Path("/") / link
        if host.is_dir() and not host.is_symlink():
            binds.append((str(host), f"/{link}"))
    hidden = [f for f in HIDDEN_FILES if os.path.isfile(f)]
    if hidden:
        mask = mask_file()
        binds += [(mask, f) for f in hidden]
    return binds


def hidden_dirs() -> list[str]:
    """Host /etc folders covered by an empty tmpfs in the container."""
    return [d for d in HIDDEN_DIRS if os.path.isdir(d)]


def container_pids(container_id: str) -> list[int]:
    """Host pids in the cgroup of the container `container_id` (the engine runs on this host)."""
    pids = []
    for e in os.listdir("/proc"):
        if not e.isdigit():
            continue
        try:
            with open(f"/proc/{e}/cgroup") as f:
                if container_id in f.read():
                    pids.append(int(e))
        except OSError:
            pass
    return sorted(pids)


class DockerSandbox(Sandbox):
    """A container per sandbox (see the module doc)."""

    backend = "docker"

    def __init__(
        self,
        workspace: str | Path | None = None,
        limits: Limits | None = None,
        network: bool = False,
        image: str | None = None,
        cpus: float = 1.0,
        user: str = "1000:1000",
        ro_binds: Mapping[str, str] | None = None,
        disk_quota: str = "auto",
        workdir: str | None = None,
        rw_binds: Mapping[str, str] | None = None,
        mounts: Mapping[str, str] | None = None,
    ) -> None:
        """`image`: None = the host's userland (module doc), else a local image to run (a published
        task's built image). `ro_binds`: {host path: container path} mounted read-only, as bwrap's option
        (the coding env's deps cache and its /grader stash). `disk_quota`: see `Sandbox`. `workdir`,
        `mounts`, `rw_binds`: as bwrap's (a published task's WORKDIR and root folders shown from the
        workspace, a verifier's writable /logs)."""
        super().__init__(workspace, limits, network, disk_quota)
        self.image = image
        self.cpus = cpus
        self.user = user
        self.ro_binds = dict(ro_binds or {})
        self.workdir = workdir or MOUNT_POINT
        self.rw_binds = dict(rw_binds or {})
        self.mounts = dict(mounts or {})
        for dest, sub in self.mounts.items():
            if not dest.startswith("/") or dest == MOUNT_POINT or sub.startswith("/") or ".." in sub.split("/"):
                raise ValueError(
                    f"mount {dest!r} -> {sub!r}: an absolute path other than {MOUNT_POINT}, a relative folder"
                )
        self._client: Any = None
        self._container: Any = None
        self._keepers: set[int] = set()
        self._orig_owner: tuple[int, int] | None = None

    def _owner(self) -> tuple[int, int] | None:
        uid, _, gid = self.user.partition(":")
        return (int(uid), int(gid or uid))

    def _host_image(self) -> str:
        """The host-userland image, imported from its tar the first time (no registry involved)."""
        data, tag = host_rootfs_tar()
        name = f"{HOST_IMAGE_REPO}:{tag}"
        try:
            self._client.images.get(name)
        except Exception:  # noqa: BLE001 - docker.errors.ImageNotFound
            import_rootfs(self._client, data, HOST_IMAGE_REPO, tag)
            log.info("imported the host-userland image %s", name)
        return name

    def _mounts(self) -> list[Any]:
        from docker.types import Mount

        mounts = [Mount(MOUNT_POINT, str(self.workspace), type="bind")]
        if self.image is None:
            mounts += [Mount(dest, src, type="bind", read_only=True) for src, dest in host_mounts()]
            mounts += [Mount(d, None, type="tmpfs", tmpfs_size=64 * 1024) for d in hidden_dirs()]
        for dest, sub in self.mounts.items():
            folder = self.workspace / sub
            folder.mkdir(parents=True, exist_ok=True)  # the agent removed it: back, empty, at (re)start
            mounts.append(Mount(dest, str(folder), type="bind"))
        for host, dest in self.ro_binds.items():
            if not Path(host).exists():
                raise SandboxError(f"ro_bind {host} does not exist")
            mounts.append(Mount(dest, str(Path(host).resolve()), type="bind", read_only=True))
        for host, dest in self.rw_binds.items():
            mounts.append(Mount(dest, str(Path(host).resolve()), type="bind"))
        return mounts

    def _start(self) -> None:
        """Create and start the container with the limits (the image imported or pulled if missing)."""
        from docker.types import Ulimit

        from envs.coding.sandbox.engine import client as engine_client

        st = os.stat(self.workspace)
        self._orig_owner = (st.st_uid, st.st_gid)
        self._attach_disk()
        owner = self._owner()
        if owner is not None:
            from envs.coding.sandbox.bwrap import _chown_tree

            _chown_tree(self.workspace, owner)
        try:
            self._client = engine_client()
            lim = self.limits
            image = self.image if self.image is not None else self._host_image()
            self._container = self._client.containers.run(
                image,
                command=["sleep", "infinity"],
                detach=True,
                user=self.user,
                working_dir=self.workdir,
                hostname="sandbox",
                mounts=self._mounts(),
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
                    Ulimit(name="nofile", soft=NOFILE, hard=NOFILE),
                ],
                read_only=True,
                tmpfs={"/tmp": f"size={lim.tmp_bytes},mode=1777", HOME: f"size={lim.tmp_bytes},mode=1777"},
                environment={"HOME": HOME, **({"PATH": PATH} if self.image is None else {})},
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                init=True,
                auto_remove=False,
            )
        except Exception as e:
            raise SandboxError(f"docker sandbox failed to start: {e}") from e
        self._open_tmp()
        deadline = time.monotonic() + 5  # docker-init and `sleep infinity`: spared by the disk watchdog
        while len(self._keepers) < 2 and time.monotonic() < deadline:
            self._keepers = set(self.processes())
            time.sleep(0.02)

    def _open_tmp(self) -> None:
        """Make /tmp and $HOME writable to the sandbox's user. podman ignores a tmpfs `mode` (it copies the image
        folder's 755 up) and, with a read-only rootfs, lays its own /tmp over ours; their owner (the container's
        root, no capabilities needed to chmod what it owns) opens them, as Docker's mode=1777 would."""
        res = self._container.exec_run(["chmod", "1777", "/tmp", HOME], user="0:0")
        if res.exit_code != 0:
            raise SandboxError(f"docker sandbox: could not open /tmp and {HOME}: {res.output[-300:]!r}")

    def exec(self, cmd: str, timeout: float | None = None, env: dict[str, str] | None = None) -> ExecResult:
        """`docker exec` under `timeout -s KILL`, streamed and capped; exit 137 when killed."""
        self._check_running()
        mark = self._disk_mark()
        t0 = time.monotonic()
        secs = timeout if timeout is not None else self.limits.timeout_s
        api = self._client.api
        base = {"HOME": HOME, "USER": "user", "LANG": "C.UTF-8", "TERM": "dumb"}
        if self.image is None:  # an image's own ENV (PATH included) stands unless the caller overrides it
            base["PATH"] = PATH
        envs = {**base, **(env or {})}
        ex = api.exec_create(
            self._container.id,
            ["timeout", "-s", "KILL", f"{secs}s", "sh", "-c", cmd],
            environment=envs,
            workdir=self.workdir,
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
        res = ExecResult(
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
        return self._note_disk(res, mark)

    def processes(self) -> list[int]:
        """Host pids of the container's processes: those whose cgroup names the container (Docker's and
        podman's cgroups both do; `docker top` would not serve: podman's lists the container's own pids)."""
        if self._container is None or self.closed:
            return []
        return container_pids(self._container.id)

    def kill_all(self) -> None:
        """Restart the container: the engine kills every process in its cgroup (fork bombs included) and
        remounts its tmpfs; returns once the container runs again with only its keepers."""
        self._check_running()
        try:
            self._container.restart(timeout=0)
        except Exception as e:
            raise SandboxError(f"docker sandbox could not be restarted: {e}") from e
        self._open_tmp()
        self._keepers = set()
        deadline = time.monotonic() + 5
        while len(self._keepers) < 2 and time.monotonic() < deadline:
            self._keepers = set(self.processes())
            time.sleep(0.02)

    def run_verifier(
        self,
        argv: list[str],
        *,
        ro_binds: Mapping[str, str],
        rw_binds: Mapping[str, str],
        env: Mapping[str, str],
        cwd: str,
        timeout: float,
    ) -> ExecResult:
        """A one-shot container in this one's network namespace (`network_mode=container:<id>`), as its own
        uid (VERIFIER_USER), with the workspace read-only (see `Sandbox.run_verifier`)."""
        from docker.types import Mount, Ulimit

        from envs.coding.sandbox.bwrap import _chown_tree

        self._check_running()
        uid, _, gid = VERIFIER_USER.partition(":")
        for host in rw_binds:
            _chown_tree(Path(host), (int(uid), int(gid)))
        mounts = [Mount(MOUNT_POINT, str(self.workspace), type="bind", read_only=True)]
        if self.image is None:
            mounts += [Mount(dest, src, type="bind", read_only=True) for src, dest in host_mounts()]
        mounts += [Mount(d, h, type="bind", read_only=True) for h, d in ro_binds.items()]
        mounts += [Mount(d, h, type="bind") for h, d in rw_binds.items()]
        t0 = time.monotonic()
        lim = self.limits
        c = self._client.containers.run(
            self.image if self.image is not None else self._host_image(),
            command=argv,
            detach=True,
            user=VERIFIER_USER,
            working_dir=cwd,
            mounts=mounts,
            network_mode=f"container:{self._container.id}",
            mem_limit=lim.memory_bytes,
            pids_limit=lim.processes,
            ulimits=[
                Ulimit(name="nofile", soft=NOFILE, hard=NOFILE),
                Ulimit(name="nproc", soft=lim.processes, hard=lim.processes),
            ],
            read_only=True,
            tmpfs={"/tmp": f"size={lim.tmp_bytes},mode=1777", HOME: f"size={lim.tmp_bytes},mode=1777"},
            environment={"HOME": HOME, "PATH": PATH, **env},
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            init=True,
        )
        timed_out = False
        try:
            try:
                code = int(c.wait(timeout=timeout)["StatusCode"])
            except Exception:  # noqa: BLE001 - requests' ReadTimeout
                timed_out, code = True, 137
                c.kill()
            out, err = _CappedBuffer(lim.output_bytes), _CappedBuffer(lim.output_bytes)
            out.feed(c.logs(stdout=True, stderr=False, tail=2000))
            err.feed(c.logs(stdout=False, stderr=True, tail=2000))
        finally:
            c.remove(force=True)
        return ExecResult(
            exit_code=code,
            stdout=out.text(),
            stderr=err.text(),
            truncated=out.truncated or err.truncated,
            timed_out=timed_out,
            stdout_bytes=out.total,
            stderr_bytes=err.total,
            duration_s=time.monotonic() - t0,
        )

    def _kill_for_disk(self) -> None:
        """SIGKILL every process of the container but its init and `sleep infinity` (host pids)."""
        for pid in self.processes():
            if pid not in self._keepers:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

    def _shutdown(self) -> None:
        if self._container is not None:
            try:
                self._container.remove(force=True)
            except Exception as e:  # noqa: BLE001
                log.error("could not remove container %s: %s", self._container.id, e)
        if self._client is not None:
            self._client.close()
        self._release_disk()
        if self._orig_owner is not None and not self._own_workspace and self.workspace.exists():
            from envs.coding.sandbox.bwrap import _chown_tree

            _chown_tree(self.workspace, self._orig_owner)
