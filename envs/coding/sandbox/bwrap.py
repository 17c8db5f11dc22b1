"""The bubblewrap backend: Linux namespaces, no daemon, no image; runs on these machines.

Layout of one sandbox (see docs/coding.md for why each flag is there):

    our process ─ [sh: join cgroups] ─ bwrap (outer, host uid U) ─ bwrap init (pid 1, new pid ns) ─ sh (lifeline)
        execs: [sh: join cgroups] ─ prlimit ─ nsenter (joins the namespaces as uid 1000) ─ setpriv ─ env ─ sh -c CMD

* bwrap runs as a dedicated unprivileged host uid U (one per sandbox), in its own user
  namespace mapping the sandbox's uid 1000 to U. Root on the host is exempt from RLIMIT_NPROC;
  a task in a child user namespace is not, and its count is per (namespace, uid), i.e. per
  sandbox. And everything the sandbox could reach by mistake is checked against U, not root.
* The filesystem is built from selected read-only binds (/usr, /etc minus secrets), so /root,
  /home, /work, /tmp, /run, /mnt, /opt of the host simply do not exist inside; /workspace is
  the only writable host directory; /tmp, /dev/shm and HOME are private, size-bounded tmpfs;
  the rest of the sandbox's own skeleton (/, /dev) is remounted read-only.
* Limits: rlimits per exec (prlimit), plus a cgroup v1 memory + pids group per sandbox where the
  host lets us make one (cgroup.py), which bounds the sum over all of the sandbox's processes.
  The workspace's total size and file count: a loop-mounted ext4 image over its path (disk.py),
  put in place before bwrap binds it.
* Every exec joins the same namespaces, so a service started by one exec (`cmd &`) is reachable
  by the next, on the sandbox's own loopback when the network is off.
* close() SIGKILLs the namespace's init: the kernel then kills every process in the pid
  namespace, daemons and double-forked orphans included. `--die-with-parent` and the lifeline
  pipe do the same if this process dies without closing.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import json
import logging
import os
import select
import shutil
import signal
import stat
import subprocess
import time
from collections.abc import Mapping
from functools import cache
from pathlib import Path

from envs.coding.sandbox.base import MOUNT_POINT, ExecResult, Limits, Sandbox, SandboxError, run_capped
from envs.coding.sandbox.cgroup import SandboxCgroup, cgroup_unavailable_reason

log = logging.getLogger(__name__)

SANDBOX_UID = 1000
HOME = "/home/user"
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
START_TIMEOUT_S = 10.0
KILL_WAIT_S = 10.0  # how long kill_all waits for the kernel to take a pid namespace down
# CPU fallback where no cpu cgroup can be made (cgroup.py): every process at nice 19, its autogroup too
NICE = ["nice", "-n", "19"]
AUTOGROUP_NICE = 19
# Host uids for sandboxes: far above any real account; one per sandbox (pid-salted across processes).
_UID_BASE, _UID_SPAN = 2_000_000, 1_000_000
_uid_counter = itertools.count()
# Host files that stay hidden even though /etc is visible (read-only) inside.
HIDDEN_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers")
HIDDEN_DIRS = ("/etc/ssh", "/etc/ssl/private", "/etc/sudoers.d")
# bwrap's --die-with-parent is PR_SET_PDEATHSIG, which fires when the *thread* that forked bwrap
# exits. Forking from one long-lived thread makes "parent died" mean "this process died".
_launcher = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="bwrap-launcher")


def _alloc_host_uid() -> int:
    return _UID_BASE + (os.getpid() * 97 + next(_uid_counter)) % _UID_SPAN


def _pid_ns(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def _alive(pid: int) -> bool:
    """Running or sleeping, not a zombie waiting to be reaped (it holds no resources but a pid)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return False


def pids_in_namespace(ns: str) -> list[int]:
    """Host pids of every live process whose pid namespace is `ns` (e.g. 'pid:[4026532181]')."""
    return [int(e) for e in os.listdir("/proc") if e.isdigit() and _pid_ns(int(e)) == ns and _alive(int(e))]


@cache
def bwrap_unavailable_reason() -> str | None:
    """None when a bwrap sandbox starts here, else why not (missing binary, or bwrap's own error)."""
    if shutil.which("bwrap") is None:
        return "bwrap not found (apt-get install -y bubblewrap)"
    if os.geteuid() != 0:
        return "the bwrap backend runs each sandbox as its own unprivileged host uid, which needs root"
    for tool in ("nsenter", "prlimit", "setpriv"):
        if shutil.which(tool) is None:
            return f"{tool} not found (util-linux)"
    try:
        with BwrapSandbox() as sb:
            res = sb.exec("true", timeout=10)
            if res.exit_code != 0:
                return f"exec in a bwrap sandbox failed: {res.stderr.strip()}"
    except SandboxError as e:
        return str(e)
    return None


class BwrapSandbox(Sandbox):
    """A sandbox made of namespaces with bubblewrap (see the module doc)."""

    backend = "bwrap"

    def __init__(
        self,
        workspace: str | Path | None = None,
        limits: Limits | None = None,
        network: bool = False,
        ro_binds: Mapping[str, str] | None = None,
        use_cgroup: bool = True,
        disk_quota: str = "auto",
        workdir: str | None = None,
        rw_binds: Mapping[str, str] | None = None,
        mounts: Mapping[str, str] | None = None,
    ) -> None:
        """`ro_binds`: extra host paths made visible read-only, {host path: sandbox path} (e.g. a
        prepared venv or node_modules cache); everything else of the host stays invisible.
        `use_cgroup`: also bound the sandbox's total memory and processes with a cgroup when the
        host allows it (`self.cgroup` says whether it does). `disk_quota`: see `Sandbox`
        (`self.disk.mode` says which way the workspace is bounded). `workdir`: where commands start (a
        published task's WORKDIR, e.g. /app; default /workspace). `mounts`: the workspace (or a folder in it)
        also shown writable at other paths, {sandbox path: workspace-relative folder, "" = the workspace}
        (published tasks: {"/app": ""}, or {"/app": "app", "/data": "data"}). `rw_binds`: host folders shown
        writable, {host path: sandbox path} (a verifier's /logs); the caller gives them to `host_uid` first."""
        super().__init__(workspace, limits, network, disk_quota)
        self.ro_binds = dict(ro_binds or {})
        self.workdir = workdir or MOUNT_POINT
        self.rw_binds = dict(rw_binds or {})
        self.mounts = dict(mounts or {})
        for dest, sub in self.mounts.items():
            if not dest.startswith("/") or dest == MOUNT_POINT or sub.startswith("/") or ".." in sub.split("/"):
                raise ValueError(
                    f"mount {dest!r} -> {sub!r}: an absolute path other than {MOUNT_POINT}, a relative folder"
                )
        self.host_uid = _alloc_host_uid()
        self._orig_owner: tuple[int, int] | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self.init_pid: int | None = None
        self.pid_namespace: str | None = None
        self._keepers: set[int] = set()  # host pids of init and the lifeline
        self.use_cgroup = use_cgroup
        self.cgroup: SandboxCgroup | None = None

    def _owner(self) -> tuple[int, int] | None:
        return (self.host_uid, self.host_uid)

    # -- lifecycle -----------------------------------------------------------------------------
    def _argv(self, fds: dict[str, int], info_w: int) -> list[str]:
        a = ["bwrap", "--unshare-all"]
        if self.network:
            a.append("--share-net")
        a += ["--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--disable-userns"]
        a += ["--die-with-parent", "--new-session", "--hostname", "sandbox", "--clearenv"]
        a += _base_fs_args(self.limits.tmp_bytes)
        a += ["--bind-fd", str(fds[MOUNT_POINT]), MOUNT_POINT]
        a += self._published_binds(fds)
        for dest, fd in fds.items():
            if dest != MOUNT_POINT and dest not in self.mounts and dest not in self.rw_binds.values():
                a += ["--ro-bind-fd", str(fd), dest]
        # the skeleton bwrap builds (/, /dev) is tmpfs: read-only, or it is unbounded RAM to write into
        a += ["--remount-ro", "/dev", "--remount-ro", "/"]
        a += ["--chdir", self.workdir, "--info-fd", str(info_w)]
        # the lifeline: prints readiness, then waits on our pipe; EOF (we died) ends the sandbox
        a += ["/bin/sh", "-c", "echo ready; exec cat >/dev/null"]
        return a

    def _published_binds(self, fds: dict[str, int]) -> list[str]:
        """bwrap options for `mounts` and `rw_binds` (writable; published tasks, envs/coding/published)."""
        a: list[str] = []
        for dest in self.mounts:
            a += ["--bind-fd", str(fds[dest]), dest]
        for dest in self.rw_binds.values():
            a += ["--bind-fd", str(fds[dest]), dest]
        return a

    def _start(self) -> None:
        """Make the namespaces and wait until exec can join them."""
        _check_reachable(self.workspace, self.host_uid, "workspace", itself=False)
        for host in self.ro_binds:
            _check_reachable(Path(host).resolve(), self.host_uid, "ro_bind", itself=True)
        st = os.stat(self.workspace)
        self._orig_owner = (st.st_uid, st.st_gid)
        self._attach_disk()  # a loop-mounted image over the workspace path, or a watchdog
        _chown_tree(self.workspace, (self.host_uid, self.host_uid))
        if self.use_cgroup:
            reason = cgroup_unavailable_reason()
            if reason is None:
                self.cgroup = SandboxCgroup(self.limits.memory_bytes, self.limits.processes, self.host_uid)
            else:
                log.info("bwrap sandbox without a cgroup (rlimits only): %s", reason)
        self._launch()

    def _launch(self) -> None:
        """Start bwrap (the namespaces, init and the lifeline) over the prepared workspace."""
        fds: dict[str, int] = {}
        info_r, info_w = os.pipe()
        try:
            fds[MOUNT_POINT] = os.open(self.workspace, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            for host, dest in self.ro_binds.items():
                fds[dest] = os.open(host, os.O_PATH | os.O_CLOEXEC)
            for dest, sub in self.mounts.items():
                folder = self.workspace / sub
                if not folder.exists() and not folder.is_symlink():  # the agent removed it: back, empty, at (re)launch
                    folder.mkdir(parents=True)
                    os.chown(folder, self.host_uid, self.host_uid)
                fds[dest] = os.open(folder, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW)
            for host, dest in self.rw_binds.items():
                _check_reachable(Path(host).resolve(), self.host_uid, "rw_bind", itself=True)
                fds[dest] = os.open(host, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            argv = self._argv(fds, info_w)
            if self.cgroup is not None:
                argv = self.cgroup.join_argv(argv)
            else:
                argv = [*NICE, *argv]
            uid = self.host_uid

            def launch() -> subprocess.Popen[bytes]:
                return subprocess.Popen(
                    argv,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    pass_fds=(info_w, *fds.values()),
                    user=uid,
                    group=uid,
                    extra_groups=[],
                    env={"PATH": PATH},
                    start_new_session=True,
                )

            try:
                self._proc = _launcher.submit(launch).result()
            except OSError as e:
                raise SandboxError(f"could not run bwrap: {e}") from e
            if self.cgroup is None:
                lower_autogroup(self._proc.pid)
        finally:
            os.close(info_w)
            for fd in fds.values():
                os.close(fd)
        try:
            self._await_ready(info_r)
        finally:
            os.close(info_r)
        log.debug("bwrap sandbox up: init pid %s, workspace %s, host uid %s", self.init_pid, self.workspace, uid)

    def _await_ready(self, info_r: int) -> None:
        proc = self._proc
        assert proc is not None and proc.stdout is not None and proc.stderr is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        info = b""
        while True:
            r, _, _ = select.select([info_r], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(info_r, 4096) if r else b""
            if not chunk:
                break
            info += chunk
        line = b""
        if info:
            r, _, _ = select.select([proc.stdout.fileno()], [], [], max(0.0, deadline - time.monotonic()))
            line = proc.stdout.readline() if r else b""
        if line.strip() != b"ready":
            proc.kill()
            err = proc.stderr.read().decode(errors="replace").strip()
            proc.wait()
            raise SandboxError(f"bwrap failed to start: {err or 'no readiness signal'}")
        meta = json.loads(info)
        self.init_pid = int(meta["child-pid"])
        self.pid_namespace = f"pid:[{meta['pid-namespace']}]"
        self._keepers = {self.init_pid, *_children(self.init_pid)}

    def _kill_namespace(self, wait_s: float = KILL_WAIT_S) -> int:
        """SIGKILL the namespace's init (the kernel kills the rest), reap bwrap, and wait on the host's
        /proc until no process of the namespace is left (and the cgroup counts none); how many were
        left when init was killed. A straggler is killed by pid; SandboxError if any survives."""
        ns = self.pid_namespace
        before = len(pids_in_namespace(ns)) if ns is not None else 0
        if self.init_pid is not None and _pid_ns(self.init_pid) == ns:
            try:
                os.kill(self.init_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self._proc is not None:
            try:  # bwrap exits (reaping init) as soon as init is gone
                self._proc.wait(timeout=wait_s)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            for f in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
                if f is not None:
                    f.close()
            self._proc = None
        deadline = time.monotonic() + wait_s
        while ns is not None:
            left = pids_in_namespace(ns)
            busy = self.cgroup.processes() if self.cgroup is not None else 0
            if not left and not busy:
                break
            if time.monotonic() > deadline:
                raise SandboxError(f"{len(left)} processes of the sandbox are still alive {wait_s:g} s after its kill")
            for pid in left:  # should not happen: pid-namespace teardown is the kernel's job
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.005)
        self.init_pid = None
        return before

    def kill_all(self) -> None:
        """Kill every process in the sandbox and wait until none is left, then start it again on the
        same workspace (see `Sandbox.kill_all`): the namespace's init dies, so nothing the agent
        started (a fork bomb, a respawner, a double-forked daemon) can outlive it."""
        self._check_running()
        self._kill_namespace()
        self._launch()

    def _shutdown(self) -> None:
        """Kill every process (as `kill_all`), remove the cgroup, release the disk, hand the files back."""
        try:
            self._kill_namespace()
        except SandboxError as e:
            log.error("%s", e)
        if self.cgroup is not None:
            self.cgroup.remove()
        self._release_disk()  # before handing the files back: they are copied out of the image first
        if self._orig_owner is not None and not self._own_workspace and self.workspace.exists():
            _chown_tree(self.workspace, self._orig_owner)

    def processes(self) -> list[int]:
        """Host pids of every process in the sandbox, its init included (empty once closed)."""
        return pids_in_namespace(self.pid_namespace) if self.pid_namespace else []

    def _kill_for_disk(self) -> None:
        """SIGKILL every process in the sandbox but init and the lifeline (the sandbox stays up)."""
        for pid in self.processes():
            if pid not in self._keepers:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    # -- exec ----------------------------------------------------------------------------------
    def exec_argv(self, cmd: str, env: dict[str, str] | None = None) -> list[str]:
        """The host command line that runs `cmd` inside (prlimit, nsenter, no-new-privs, clean env)."""
        assert self.init_pid is not None
        envs = {"PATH": PATH, "HOME": HOME, "USER": "user", "LANG": "C.UTF-8", "TERM": "dumb", **(env or {})}
        argv = [
            "prlimit",
            *self.limits.prlimit_args(),
            "--",
            "nsenter",
            "-t",
            str(self.init_pid),
            "-U",
            "-m",
            "-n",
            "-p",
            "-i",
            "-u",
            "-C",
            "-r",
            "-w",
            "-S",
            str(SANDBOX_UID),
            "-G",
            str(SANDBOX_UID),
            "--",
            "/usr/bin/setpriv",
            "--no-new-privs",
            "--",
            "/usr/bin/env",
            "-i",
            "-C",
            self.workdir,
            *(f"{k}={v}" for k, v in envs.items()),
            "/bin/sh",
            "-c",
            cmd,
        ]
        return self.cgroup.join_argv(argv) if self.cgroup is not None else [*NICE, *argv]

    def exec(self, cmd: str, timeout: float | None = None, env: dict[str, str] | None = None) -> ExecResult:
        """Run `cmd` inside; the host's environment never enters (only PATH, HOME, LANG and `env`)."""
        self._check_running()
        if self._proc is not None and self._proc.poll() is not None:
            raise SandboxError(f"bwrap sandbox died (bwrap exited with {self._proc.returncode})")
        mark = self._disk_mark()
        res = run_capped(
            self.exec_argv(cmd, env),
            timeout_s=timeout if timeout is not None else self.limits.timeout_s,
            limits=self.limits,
            env={"PATH": PATH},
            on_spawn=None if self.cgroup is not None else lower_autogroup,
        )
        return self._note_disk(res, mark)

    # -- the verifier ----------------------------------------------------------------------------
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
        """A one-shot bwrap sandbox in this sandbox's network namespace (see `Sandbox.run_verifier`).

        It runs in its own user, pid, mount, ipc and uts namespaces and its own cgroup, as the
        workspace's host uid (so it reads the workspace as the agent left it, and the host's other
        users cannot); the workspace is bound read-only, the binds by descriptor. The agent's
        processes (only the service under test is alive while grading) cannot reach it: its pids
        are in another pid namespace (not even numbered in theirs), its files in another mount
        namespace, and no path of theirs leads to its folders."""
        self._check_running()
        assert self.init_pid is not None
        uid = self.host_uid
        for host in rw_binds:
            _chown_tree(Path(host), (uid, uid))
        cgroup = None
        if self.use_cgroup and cgroup_unavailable_reason() is None:
            cgroup = SandboxCgroup(self.limits.memory_bytes, self.limits.processes, uid)
        fds: list[int] = []
        try:
            a = ["bwrap", "--unshare-all", "--share-net", "--unshare-user"]  # share-net: the netns nsenter joined
            a += ["--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--disable-userns"]
            a += ["--die-with-parent", "--new-session", "--hostname", "verifier", "--clearenv"]
            a += _base_fs_args(self.limits.tmp_bytes)
            fd = os.open(self.workspace, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            fds.append(fd)
            a += ["--ro-bind-fd", str(fd), MOUNT_POINT]
            for binds, flag in ((ro_binds, "--ro-bind-fd"), (rw_binds, "--bind-fd")):
                for host, dest in binds.items():
                    fd = os.open(host, os.O_PATH | os.O_CLOEXEC)
                    fds.append(fd)
                    a += [flag, str(fd), dest]
            a += ["--remount-ro", "/dev", "--remount-ro", "/"]
            for k, v in {"PATH": PATH, "HOME": HOME, "LANG": "C.UTF-8", **env}.items():
                a += ["--setenv", k, v]
            a += ["--chdir", cwd, "--", *argv]
            full = ["nsenter", f"--net=/proc/{self.init_pid}/ns/net", "--"]
            full += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
            full += ["prlimit", *self.limits.prlimit_args(), "--", *a]
            if cgroup is not None:
                full = cgroup.join_argv(full)
            else:
                full = [*NICE, *full]
            return run_capped(
                full,
                timeout_s=timeout,
                limits=self.limits,
                env={"PATH": PATH},
                pass_fds=tuple(fds),
                on_spawn=None if cgroup is not None else lower_autogroup,
            )
        finally:
            for fd in fds:
                os.close(fd)
            if cgroup is not None:
                _kill_cgroup(cgroup)
                cgroup.remove()


def _base_fs_args(tmp_bytes: int) -> list[str]:
    """The read-only system (/usr, /etc minus secrets), /proc, /dev, and private bounded tmpfs for
    /tmp, /dev/shm and HOME: what every bwrap sandbox here sees besides its own binds."""
    a = ["--ro-bind", "/usr", "/usr"]
    for link in ("bin", "lib", "lib64", "sbin", "lib32", "libx32"):
        host = Path("/") / link
        if host.is_symlink():
            a += ["--symlink", os.readlink(host), f"/{link}"]
        elif host.is_dir():
            a += ["--ro-bind", str(host), f"/{link}"]
    a += ["--ro-bind", "/etc", "/etc"]
    for f in HIDDEN_FILES:
        if os.path.isfile(f):
            a += ["--ro-bind", "/dev/null", f]
    for d in HIDDEN_DIRS:
        if os.path.isdir(d):
            a += ["--tmpfs", d, "--remount-ro", d]
    a += ["--proc", "/proc", "--dev", "/dev"]
    a += ["--size", str(tmp_bytes), "--tmpfs", "/tmp"]
    a += ["--dir", "/var", "--symlink", "../tmp", "/var/tmp"]
    a += ["--size", str(tmp_bytes), "--tmpfs", HOME]
    a += ["--size", str(tmp_bytes), "--tmpfs", "/dev/shm"]
    return a


def lower_autogroup(pid: int) -> None:
    """The CPU fallback where no cpu cgroup can be made: the new session's autogroup at nice 19 (the
    scheduler shares CPU between autogroups first, so `nice` alone would not yield to the host)."""
    try:
        with open(f"/proc/{pid}/autogroup", "w") as f:
            f.write(str(AUTOGROUP_NICE))
    except OSError:  # no autogroups in this kernel, or the process is gone already
        pass


def _kill_cgroup(cgroup: SandboxCgroup) -> None:
    """SIGKILL whatever is still in a one-shot group and wait (bounded) until it counts none."""
    deadline = time.monotonic() + KILL_WAIT_S
    while cgroup.processes() and time.monotonic() < deadline:
        for f in cgroup.procs_files[:1]:
            try:
                pids = [int(p) for p in Path(f).read_text().split()]
            except OSError:
                pids = []
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        time.sleep(0.005)


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def _check_reachable(path: Path, uid: int, what: str, itself: bool) -> None:
    """bwrap runs as an unprivileged uid and resolves bind sources with its own permissions, so
    every parent directory must let others through (and a read-only bind must be readable)."""
    chain = [*reversed(path.parents)] + ([path] if itself else [])
    for d in chain:
        st = os.stat(d)
        need = 0o005 if (itself and d == path) else 0o001
        if st.st_uid != uid and st.st_mode & need != need:
            raise SandboxError(
                f"{what} {path} is not reachable by the sandbox's unprivileged user: {d} has mode "
                f"{stat.filemode(st.st_mode)}; put it under a directory others may traverse (e.g. /tmp, /var/cache)"
            )


def _chown_tree(root: Path, owner: tuple[int, int]) -> None:
    """Give a tree to `owner` without following symlinks (the sandbox user must own its workspace)."""
    os.lchown(root, *owner)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in (*dirnames, *filenames):
            os.lchown(os.path.join(dirpath, name), *owner)
