"""Sandbox benchmark: start, exec latency, snapshot/restore, 8 at once, and the containment figures.

    nice python bench/coding_sandbox.py [--execs 300] [--starts 30]

Every figure sits beside its floor measured in the same run: a plain `subprocess.run` of the same
command (no sandbox, no limits), so the table reads as "what the isolation costs". Containment:
each attack of tests/coding/test_security.py once, with what it cost (time to stop, bytes kept,
processes reached). Writes bench/results/coding_sandbox.json and prints a rich table.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "bench" / "results" / "coding_sandbox.json"
log = logging.getLogger("coding_sandbox_bench")

from envs.coding.sandbox import Limits, make_sandbox, unavailable_reason
from envs.coding.sandbox.base import run_capped


def stats_ms(xs: list[float]) -> dict[str, float]:
    a = np.asarray(xs) * 1000
    return {"n": len(xs), "p50_ms": float(np.percentile(a, 50)), "p99_ms": float(np.percentile(a, 99))}


def timed(fn: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def bench_exec(n: int) -> dict[str, dict]:
    res: dict[str, dict] = {}
    for name, argv in (("true", ["true"]), ("echo", ["sh", "-c", "echo hello"])):
        res[f"floor subprocess.run {name}"] = stats_ms(timed(lambda a=argv: subprocess.run(a, capture_output=True), n))
    lim = Limits()
    res["floor run_capped sh echo (no sandbox)"] = stats_ms(
        timed(lambda: run_capped(["sh", "-c", "echo hello"], timeout_s=10, limits=lim), n)
    )
    for cg in (True, False):
        with make_sandbox("bwrap", use_cgroup=cg) as sb:
            tag = "bwrap" + ("" if sb.cgroup is not None else " (no cgroup)")
            if not cg and "bwrap" in {k.split()[0] for k in res}:
                tag = "bwrap (no cgroup)"
            for name, cmd in (("true", "true"), ("echo", "echo hello")):
                sb.exec(cmd)
                res[f"{tag} exec {name}"] = stats_ms(timed(lambda c=cmd: sb.exec(c), n))
    return res


def bench_start(n: int) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for quota in ("auto", "off"):
        starts, closes = [], []
        for _ in range(n):
            t = time.perf_counter()
            sb = make_sandbox("bwrap", disk_quota=quota)
            starts.append(time.perf_counter() - t)
            mode = sb.disk.mode if sb.disk is not None else "no disk quota"
            t = time.perf_counter()
            sb.close()
            closes.append(time.perf_counter() - t)
        out[f"bwrap start ({mode})"] = stats_ms(starts)
        out[f"bwrap close ({mode})"] = stats_ms(closes)
    return out


def bench_snapshot(reps: int) -> dict[str, dict]:
    out: dict[str, dict] = {}
    cases = [
        ("small: 30 files x 2 KB", 30, 2048, "auto"),
        ("medium: 2000 files x 8 KB", 2000, 8192, "auto"),
        ("medium, host ext4 (no disk quota)", 2000, 8192, "off"),
    ]
    for label, files, size, quota in cases:
        with make_sandbox("bwrap", disk_quota=quota) as sb:
            sb.exec(
                f"python3 -c \"import os\nfor i in range({files}):\n os.makedirs(f'pkg{{i % 20}}', exist_ok=True)\n"
                f" open(f'pkg{{i % 20}}/m{{i}}.py', 'w').write('x' * {size})\""
            )
            snap = sb.snapshot()
            out[f"snapshot {label}"] = {**stats_ms(timed(sb.snapshot, reps)), "tar_bytes": snap.nbytes}
            out[f"restore {label}, unchanged"] = stats_ms(timed(lambda s=sb, sn=snap: s.restore(sn), reps))

            def dirty_then_restore(s=sb, sn=snap) -> float:
                s.exec("rm -r pkg3 && echo changed > pkg1/m1.py && mkdir junk && echo j > junk/f")
                t = time.perf_counter()
                s.restore(sn)
                return time.perf_counter() - t

            out[f"restore {label}, after edits"] = stats_ms([dirty_then_restore() for _ in range(reps)])
    return out


def bench_tar_alternative(reps: int) -> dict[str, dict]:
    """The design not taken, same medium tree: an in-memory tar, restored by delete + extract."""
    import io
    import shutil
    import tarfile
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="agentsim-tarbench-"))
    try:
        for i in range(2000):
            (d / f"pkg{i % 20}").mkdir(exist_ok=True)
            (d / f"pkg{i % 20}" / f"m{i}.py").write_text("x" * 8192)

        def snap() -> bytes:
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w") as tar:
                for name in sorted(os.listdir(d)):
                    tar.add(d / name, arcname=name)
            return buf.getvalue()

        data = snap()

        def restore() -> None:
            for e in os.scandir(d):
                shutil.rmtree(e.path) if e.is_dir(follow_symlinks=False) else os.unlink(e.path)
            with tarfile.open(fileobj=io.BytesIO(data)) as tar:
                tar.extractall(d, filter="tar")

        return {
            "tar snapshot medium (not used)": stats_ms(timed(snap, reps)),
            "tar restore medium (not used)": stats_ms(timed(restore, reps)),
        }
    finally:
        shutil.rmtree(d, ignore_errors=True)


def bench_concurrent(per: int) -> dict[str, float]:
    """8 sandboxes in 8 threads, each: start, `per` execs, close; vs one sandbox doing 8*per serially."""

    def one(times: list[float]) -> None:
        with make_sandbox("bwrap") as sb:
            for _ in range(per):
                t = time.perf_counter()
                sb.exec("echo hello")
                times.append(time.perf_counter() - t)

    serial: list[float] = []
    t0 = time.perf_counter()
    with make_sandbox("bwrap") as sb:
        for _ in range(8 * per):
            t = time.perf_counter()
            sb.exec("echo hello")
            serial.append(time.perf_counter() - t)
    serial_wall = time.perf_counter() - t0
    lat: list[float] = []
    t0 = time.perf_counter()
    threads = [threading.Thread(target=one, args=(lat,)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    return {
        "execs": 8 * per,
        "serial_1_sandbox_execs_per_s": 8 * per / serial_wall,
        "parallel_8_sandboxes_wall_s": wall,
        "parallel_8_sandboxes_execs_per_s": 8 * per / wall,
        "parallel_exec_p50_ms": float(np.percentile(np.asarray(lat) * 1000, 50)),
        "parallel_exec_p99_ms": float(np.percentile(np.asarray(lat) * 1000, 99)),
    }


def containment() -> dict[str, dict]:
    """Each attack once, with its cost (see tests/coding/test_security.py for the assertions)."""
    out: dict[str, dict] = {}
    with make_sandbox("bwrap", limits=Limits(processes=64)) as sb:
        t = time.perf_counter()
        r = sb.exec("bomb(){ bomb | bomb & }; bomb; sleep 1", timeout=5)
        seen = len(sb.processes())
        stats = sb.cgroup.stats() if sb.cgroup else {}
        t1 = time.perf_counter()
        sb.close()
        out["fork bomb (processes=64)"] = {
            "exec_returned_s": t1 - t,
            "processes_in_sandbox_after": seen,
            "processes_peak": stats.get("processes_peak"),
            "forks_refused_by_pids_cgroup": stats.get("forks_refused_at_pids_max"),
            "cannot_fork_messages": r.stderr.count("Cannot fork"),
            "close_s": time.perf_counter() - t1,
            "left_after_close": len(sb.processes()),
        }
    with make_sandbox("bwrap", limits=Limits(memory_bytes=256 * 1024**2)) as sb:
        r = sb.exec("python3 -c \"b = b'x' * 1024**3\"", timeout=30)
        one = {"exit": r.exit_code, "error": r.stderr.strip().splitlines()[-1], "s": r.duration_s}
        r = sb.exec(
            "for i in 1 2 3 4; do python3 -c \"b=b'x'*(100*2**20); import time; time.sleep(1); print('ALIVE')\" & done; wait",
            timeout=60,
        )
        out["memory hog (256 MiB)"] = {
            "one_process_1GiB": one,
            "four_processes_100MiB_survivors": r.stdout.count("ALIVE"),
            "cgroup": sb.cgroup.stats() if sb.cgroup else None,
        }
    with make_sandbox("bwrap", limits=Limits(output_bytes=64 * 1024)) as sb:
        r = sb.exec("yes flood", timeout=30)
        out["output flood (64 KiB kept)"] = {
            "bytes_written_before_kill": r.stdout_bytes,
            "bytes_kept": len(r.stdout.encode()),
            "truncated": r.truncated,
            "output_killed": r.output_killed,
            "s": r.duration_s,
        }
    sb = make_sandbox("bwrap")
    sb.exec("for i in 1 2 3; do nohup sleep 1000 >/dev/null 2>&1 & done; (setsid sh -c 'sleep 1000 &' &)", timeout=2)
    time.sleep(0.1)
    before = len(sb.processes())
    t = time.perf_counter()
    sb.close()
    out["orphaned daemons"] = {
        "processes_before_close": before,
        "close_s": time.perf_counter() - t,
        "left": len(sb.processes()),
    }
    with make_sandbox("bwrap", limits=Limits(cpu_seconds=1)) as sb:
        r = sb.exec("sleep 100", timeout=1)
        out["wall timeout (1 s)"] = {"exit": r.exit_code, "s": r.duration_s}
        r = sb.exec("python3 -c 'while True: pass'", timeout=30)
        out["cpu spin (1 s CPU)"] = {"exit": r.exit_code, "s": r.duration_s}
    return out


DISK_LIMITS = Limits(disk_bytes=64 * 1024**2, disk_files=2000, file_bytes=1024**3)
DISK_FLOODS = {
    "one big file (512 MiB asked)": "head -c 512M /dev/zero > big",
    "1 MiB files until a write fails": "i=0; while head -c 1M /dev/zero > mb$i 2>/dev/null; do i=$((i+1)); done",
    "empty files until one fails": (
        'python3 -c "\nimport itertools\nfor i in itertools.count():\n'
        "    try: open(f'f{i}', 'w').close()\n    except OSError: break\n\""
    ),
}


def disk_floods() -> dict[str, dict]:
    """The disk floods of the security suite against a 64 MiB / 2,000-file quota, both ways."""
    from envs.coding.sandbox.disk import _walk_usage

    out: dict[str, dict] = {}
    for quota in ("loop", "watchdog"):
        with make_sandbox("bwrap", limits=DISK_LIMITS, disk_quota=quota) as sb:
            for name, cmd in DISK_FLOODS.items():
                r = sb.exec(cmd, timeout=120)
                nbytes, files = _walk_usage(sb.workspace)
                row = {
                    "exit": r.exit_code,
                    "s_to_contain": r.duration_s,
                    "host_bytes": nbytes,
                    "host_files": files,
                    "disk_full": r.disk_full,
                    "killed": r.disk_killed,
                }
                if quota == "loop":
                    row["image_bytes_on_host"] = os.stat(sb.disk.image).st_blocks * 512  # type: ignore[union-attr]
                t = time.perf_counter()
                sb.exec("rm -rf /workspace/*", timeout=120)
                row["cleanup_s"] = time.perf_counter() - t
                out[f"disk flood, {quota}: {name}"] = row
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--execs", type=int, default=300)
    ap.add_argument("--starts", type=int, default=30)
    a = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    reason = unavailable_reason("bwrap")
    if reason:
        raise SystemExit(f"bwrap unavailable: {reason}")
    t0 = time.perf_counter()
    latency = {
        **bench_exec(a.execs),
        **bench_start(a.starts),
        **bench_snapshot(max(5, a.starts // 3)),
        **bench_tar_alternative(5),
    }
    conc = bench_concurrent(25)
    cont = {**containment(), **disk_floods()}
    floor = latency["floor subprocess.run echo"]["p50_ms"]
    for v in latency.values():
        v["x_floor_p50"] = v["p50_ms"] / floor
    result = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "kernel": platform.release()},
        "bwrap": subprocess.run(["bwrap", "--version"], capture_output=True, text=True).stdout.strip(),
        "docker": unavailable_reason("docker") or "available",
        "latency": latency,
        "concurrent_8": conc,
        "containment": cont,
        "bench_s": time.perf_counter() - t0,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")

    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"Sandbox costs ({os.cpu_count()} CPUs; floor = subprocess.run 'sh -c echo', same run)")
    for c in ("what", "n", "p50 ms", "p99 ms", "p50 / floor"):
        t.add_column(c, justify="right" if c != "what" else "left")
    for k, v in latency.items():
        t.add_row(k, str(v["n"]), f"{v['p50_ms']:.2f}", f"{v['p99_ms']:.2f}", f"{v['x_floor_p50']:.1f}x")
    c = Console(width=140)
    c.print(t)
    c.print(
        f"8 sandboxes at once: {conc['execs']} execs in {conc['parallel_8_sandboxes_wall_s']:.2f} s "
        f"({conc['parallel_8_sandboxes_execs_per_s']:.0f}/s incl. 8 starts+closes; exec p50 {conc['parallel_exec_p50_ms']:.1f} ms, "
        f"p99 {conc['parallel_exec_p99_ms']:.1f} ms) vs 1 sandbox serial {conc['serial_1_sandbox_execs_per_s']:.0f}/s"
    )
    for k, v in cont.items():
        c.print(f"[bold]{k}[/bold]: {json.dumps(v, default=str)}")
    print(f"results: {RESULTS}")


if __name__ == "__main__":
    main()
