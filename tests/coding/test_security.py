"""The security suite: every isolating backend against the attacks a coding agent could make.

Each test runs the attack for real inside a sandbox and checks, from the host, that it was
contained; the figures (bytes kept, processes reached, time to stop) go to the test report
(`record_property`) and, for the note, to bench/coding_sandbox.py. No timing assertions.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest

from envs.coding.sandbox import Limits, PathEscapeError
from envs.coding.sandbox.bwrap import _alive

pytestmark = pytest.mark.timeout(120)


def _host_pids_with(marker: str) -> list[int]:
    """Live host pids whose command line contains `marker` (sees sandboxed processes too)."""
    out = []
    for e in os.listdir("/proc"):
        if not e.isdigit() or not _alive(int(e)):
            continue
        try:
            with open(f"/proc/{e}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    out.append(int(e))
        except OSError:
            pass
    return out


def test_cannot_read_host_secrets(make, planted_secret: Path, monkeypatch, record_property) -> None:
    monkeypatch.setenv("AGENTSIM_FAKE_API_KEY", "sk-leak-9876")
    sb = make()
    attempts = {
        "planted file": f"cat {planted_secret}",
        "its directory": f"ls {planted_secret.parent}",
        "/root": "ls -la /root",
        "/etc/shadow": "cat /etc/shadow",
        "/work (this repo)": "ls /work",
        "host env": "env; cat /proc/1/environ",
    }
    for what, cmd in attempts.items():
        res = sb.exec(cmd, timeout=20)
        text = res.stdout + res.stderr
        assert "TOP-SECRET-4242" not in text, what
        assert "sk-leak-9876" not in text, what
        if what != "host env":
            assert res.exit_code != 0, f"{what}: {cmd} succeeded: {res.stdout[:200]}"
    # shadow exists on the host but is absent or empty inside
    assert "root:" not in sb.exec("cat /etc/shadow").stdout
    record_property("secrets_tried", len(attempts))


def test_cannot_write_outside_workspace(make, planted_secret: Path, record_property) -> None:
    sb = make()
    probe = f"agentsim-probe-{uuid.uuid4().hex[:8]}"
    attempts = [
        f"echo pwned > {planted_secret}",
        "echo pwned >> /etc/passwd",
        f"touch /usr/bin/{probe}",
        f"touch /etc/{probe}",
        f"touch /{probe}",
        f"echo x > /tmp/{probe}",  # private tmpfs: allowed inside, invisible on the host
    ]
    for cmd in attempts[:-1]:
        assert sb.exec(cmd, timeout=20).exit_code != 0, cmd
    assert sb.exec(attempts[-1]).exit_code == 0
    for cmd in ("touch /dev/pwned", "mkdir /newdir"):  # the sandbox's own skeleton is read-only too
        assert sb.exec(cmd).exit_code != 0, cmd
    assert planted_secret.read_text() == "TOP-SECRET-4242\n"
    assert "pwned" not in Path("/etc/passwd").read_text()
    for p in (f"/usr/bin/{probe}", f"/etc/{probe}", f"/{probe}", f"/tmp/{probe}"):
        assert not os.path.exists(p), p
    assert sb.exec(f"echo ok > /workspace/{probe}").exit_code == 0  # the workspace itself is writable
    assert (sb.workspace / probe).read_text() == "ok\n"
    record_property("writes_tried", len(attempts))


NET_PROBE = (
    "python3 -c \"import socket,sys; s=socket.create_connection(('127.0.0.1', {port}), timeout=3); "
    "s.sendall(b'hello-from-sandbox'); print('CONNECTED')\""
)


def test_network_off_cannot_reach_host(make, host_tcp_server, record_property) -> None:
    port, got = host_tcp_server
    sb = make(network=False)
    res = sb.exec(NET_PROBE.format(port=port), timeout=20)
    assert res.exit_code != 0 and "CONNECTED" not in res.stdout
    time.sleep(0.3)
    assert got == []
    dns = sb.exec("python3 -c \"import socket; socket.getaddrinfo('pypi.org', 443)\"", timeout=20)
    assert dns.exit_code != 0
    record_property("connect_error", res.stderr.strip().splitlines()[-1][:120])


def test_network_on_reaches_host_when_allowed(backend: str, make, host_tcp_server) -> None:
    """The control for the test above: the same probe gets through when the task allows network."""
    if backend != "bwrap":
        pytest.skip("a container's 127.0.0.1 is its own even with network on")
    port, got = host_tcp_server
    res = make(network=True).exec(NET_PROBE.format(port=port), timeout=20)
    assert "CONNECTED" in res.stdout, res.stderr
    for _ in range(50):
        if got:
            break
        time.sleep(0.05)
    assert got == [b"hello-from-sandbox"]


def test_fork_bomb_is_contained(make, backend: str, record_property) -> None:
    sb = make(limits=Limits(processes=64, timeout_s=10))
    t0 = time.monotonic()
    res = sb.exec("bomb(){ bomb | bomb & }; bomb; sleep 1", timeout=5)
    returned_s = time.monotonic() - t0
    peak = len(sb.processes())
    assert peak <= 64 + 2  # the limit counts every task of the sandbox (+ tolerance for exiting ones)
    cg = getattr(sb, "cgroup", None)
    if cg is not None:
        assert cg.stats().get("processes_peak", 0) <= 64
        record_property("bomb_processes_peak", cg.stats().get("processes_peak"))
    assert "fork" in res.stderr.lower() or res.timed_out
    host = os.system("true")  # the host still forks
    assert host == 0
    t1 = time.monotonic()
    sb.close()
    close_s = time.monotonic() - t1
    assert sb.processes() == []
    record_property("bomb_returned_s", round(returned_s, 3))
    record_property("bomb_processes_seen", peak)
    record_property("bomb_close_s", round(close_s, 3))


def test_memory_hog_is_stopped(make, record_property) -> None:
    sb = make(limits=Limits(memory_bytes=256 * 1024**2))
    res = sb.exec("python3 -c \"b = b'x' * 1024**3; print('ALLOCATED')\"", timeout=30)
    assert res.exit_code != 0 and "ALLOCATED" not in res.stdout
    # bwrap: the address-space rlimit refuses the allocation; Docker: the cgroup's OOM killer (137)
    assert "MemoryError" in res.stderr or res.exit_code == 137
    ok = sb.exec("python3 -c \"b = b'x' * (64 * 1024**2); print('ALLOCATED')\"", timeout=30)
    assert ok.exit_code == 0 and "ALLOCATED" in ok.stdout  # under the limit is fine
    record_property("hog_outcome", (res.stderr.strip().splitlines() or [f"exit {res.exit_code}"])[-1])


def test_output_flood_is_truncated_and_marked(make, record_property) -> None:
    sb = make(limits=Limits(output_bytes=4096))
    res = sb.exec("yes flood", timeout=30)
    assert res.truncated and res.output_killed and not res.timed_out
    assert "[... output truncated:" in res.stdout
    assert len(res.stdout.encode()) < 4096 + 200
    assert res.stdout_bytes >= 4096 * 16
    finite = sb.exec("seq 1 10000", timeout=30)  # more than kept, less than the kill threshold
    assert finite.exit_code == 0 and finite.truncated and not finite.output_killed
    assert finite.stdout.startswith("1\n2\n3\n") and finite.stdout.endswith("9999\n10000\n")
    assert "[... output truncated:" in finite.stdout
    record_property("flood_bytes_written", res.stdout_bytes)
    record_property("flood_bytes_kept", len(res.stdout.encode()))
    record_property("flood_s", round(res.duration_s, 3))


def test_no_process_survives_close(make, record_property) -> None:
    sb = make()
    marker = f"1000.{uuid.uuid4().int % 10**6}"
    cmds = [
        f"nohup sleep {marker} >/dev/null 2>&1 &",
        f"(setsid sh -c 'sleep {marker} & ' &)",  # double fork, new session
        f"sh -c 'trap \"\" HUP TERM INT; exec sleep {marker}' >/dev/null 2>&1 &",
        f"sleep {marker}",  # a foreground one, cut by the wall timeout
    ]
    for c in cmds:
        sb.exec(c, timeout=1)
    time.sleep(0.2)
    before = _host_pids_with(marker)
    assert len(before) >= 3, before
    t0 = time.monotonic()
    sb.close()
    close_s = time.monotonic() - t0
    assert _host_pids_with(marker) == []
    assert sb.processes() == []
    record_property("daemons_before_close", len(before))
    record_property("close_s", round(close_s, 3))


def test_symlink_escape(make, planted_secret: Path, record_property) -> None:
    sb = make()
    # the sandboxed process plants links to the root, to the host's secret dir, and a relative climb
    sb.exec(
        f"ln -s / escape; ln -s {planted_secret.parent} hostdir; ln -s ../../.. climb; mkdir -p d; ln -s ../.. d/up"
    )
    for path in (
        "escape/etc/passwd",
        f"escape{planted_secret}",
        "hostdir/secret.txt",
        "climb/etc/passwd",
        "d/up/etc/passwd",
        "../etc/passwd",
        "/etc/passwd",
    ):
        with pytest.raises(PathEscapeError):
            sb.read_file(path)
    for path in ("escape/tmp/pwned.txt", "hostdir/pwned.txt", "d/up/pwned.txt", "../pwned.txt"):
        with pytest.raises(PathEscapeError):
            sb.write_file(path, "pwned")
    assert not (planted_secret.parent / "pwned.txt").exists() and not os.path.exists("/tmp/pwned.txt")
    # inside, the same links resolve in the sandbox's own root, where the host's files are absent
    res = sb.exec(f"cat hostdir/secret.txt; cat escape{planted_secret}; ls escape/root escape/work", timeout=20)
    assert res.exit_code != 0 and "TOP-SECRET-4242" not in res.stdout
    # links that stay inside the workspace are fine
    sb.exec("mkdir -p sub && echo inside > sub/real.txt && ln -s sub/real.txt alias && ln -s /workspace/sub abs")
    assert sb.read_file("alias") == b"inside\n"
    assert sb.read_file("abs/real.txt") == b"inside\n"
    record_property("escapes_tried", 11)


def test_wall_and_cpu_limits(make, record_property) -> None:
    sb = make(limits=Limits(cpu_seconds=1))
    res = sb.exec("sleep 100", timeout=1)
    assert res.timed_out and res.exit_code == 137
    spin = sb.exec("python3 -c 'while True: pass'", timeout=30)
    assert not spin.timed_out and spin.exit_code in (128 + 24, 137)  # SIGXCPU at the soft = hard limit
    record_property("timeout_exec_s", round(res.duration_s, 3))
    record_property("cpu_spin_killed_after_s", round(spin.duration_s, 3))


# -- disk flood -------------------------------------------------------------------------------------
DISK = Limits(disk_bytes=64 * 1024**2, disk_files=2000, file_bytes=1024**3, timeout_s=120)
# each loop stops at the first failed write (kernel quota: ENOSPC) or is killed (watchdog)
BIG_FILE = "head -c 512M /dev/zero > big"
MANY_MB = "i=0; while head -c 1M /dev/zero > mb$i 2>/dev/null; do i=$((i+1)); done; echo $i"
MANY_FILES = (
    'python3 -c "\nimport itertools\nfor i in itertools.count():\n'
    "    try: open(f'f{i}', 'w').close()\n    except OSError as e: print(i, e); break\n\""
)


def _host_usage(root: Path) -> tuple[int, int]:
    """(allocated bytes, entries) under the workspace, measured from the host."""
    from envs.coding.sandbox.disk import _walk_usage

    return _walk_usage(root)


@pytest.mark.parametrize("quota", ["auto", "watchdog"])
def test_disk_flood_is_contained(make, backend: str, quota: str, record_property) -> None:
    """One big file, many 1 MiB files, many empty files: the workspace stays within its quota
    (kernel: writes fail with ENOSPC; watchdog: the flood is killed), the action says so, and
    the sandbox is usable again once files are deleted."""
    sb = make(limits=DISK, disk_quota=quota)
    assert sb.disk is not None
    mode = sb.disk.mode
    record_property("disk_mode", mode)
    lim_b, lim_f = DISK.disk_bytes, DISK.disk_files
    for name, cmd in (("big_file", BIG_FILE), ("many_mb", MANY_MB), ("many_files", MANY_FILES)):
        res = sb.exec(cmd, timeout=120)
        nbytes, files = _host_usage(sb.workspace)
        record_property(f"{name}_host_bytes", nbytes)
        record_property(f"{name}_host_files", files)
        record_property(f"{name}_s", round(res.duration_s, 3))
        assert not res.timed_out, f"{name}: the flood ran to the wall timeout"
        assert res.disk_full, f"{name}: the result does not say the disk is full: {res.stderr[-300:]}"
        assert "[disk quota" in res.stderr and "Limits.disk_bytes" in res.stderr
        if mode == "loop":  # the kernel refused the writes: the workspace holds no more than its quota
            assert "No space left on device" in res.stderr + res.stdout
            assert nbytes <= lim_b + 2 * 1024**2, f"{name}: {nbytes} bytes on the host"
            assert files <= lim_f + 64, f"{name}: {files} files on the host"
            image = os.stat(sb.disk.image)  # type: ignore[union-attr]
            record_property(f"{name}_image_bytes", image.st_blocks * 512)
        else:  # the watchdog killed every process of the sandbox
            assert res.disk_killed and res.exit_code != 0
        usage = sb.disk_usage()
        assert usage is not None and (usage.full or usage.over)
        cleanup = sb.exec("rm -rf /workspace/* && echo fine > after.txt && cat after.txt", timeout=120)
        assert cleanup.stdout == "fine\n" and not cleanup.disk_full, cleanup.stderr
    assert sb.read_file("after.txt") == b"fine\n"
    sb.write_file("host.txt", "the host can still write")  # host-side tools work after a flood


def test_disk_flood_in_the_background_is_contained(make, record_property) -> None:
    """A writer left running after its exec returned: bounded too (kernel: ENOSPC; watchdog: killed)."""
    sb = make(limits=DISK)
    sb.exec(f"nohup sh -c '{MANY_MB}' >/dev/null 2>&1 &")
    for _ in range(600):
        usage = sb.disk_usage()
        assert usage is not None
        if usage.full or usage.over:
            break
        time.sleep(0.1)
    time.sleep(1.0)  # let it try to go on
    nbytes, _ = _host_usage(sb.workspace)
    record_property("background_flood_host_bytes", nbytes)
    if sb.disk.mode == "loop":  # type: ignore[union-attr]
        assert nbytes <= DISK.disk_bytes + 2 * 1024**2
    else:
        assert sb.disk.kills >= 1  # type: ignore[union-attr]
    res = sb.exec("rm -f mb* && echo ok")
    assert res.stdout == "ok\n"
