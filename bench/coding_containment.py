"""Containment of the coding env, old code against new, side by side (issue 43).

    python bench/coding_containment.py [--old-ref 8209b50] [--trials 3]

The old code is `git archive` of `--old-ref` (main before issue 43) unpacked in a temp folder; each
measurement runs in a fresh child process with that tree or this one first on PYTHONPATH:

- host RSS growth (peak, ru_maxrss) of `view`, `str_replace` and a snapshot with a 1 GiB sparse file in
  the workspace, and of a snapshot with a 256 MiB dense one (one child per operation: peaks do not add);
- the host's own single-threaded workload rate beside 4 busy loops in a sandbox, over its rate alone
  (new: the cgroup cpu share, and the nice fallback with `use_cgroup=False`);
- processes left in the sandbox after a fork bomb and `reset()`, and whether the next action works;
- after `kill -9` of a process running an episode: leftovers (temp folders, world-readable ones,
  cgroups, disk images) right after, and what is still there after the next start;
- a `pytest.py` planted in /tmp: the reward it forges on an untouched task.

Prints a table, writes bench/results/coding_containment.json. Run on an otherwise quiet machine for
the CPU row (other load moves both columns alike). Everything the old code leaves is removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "coding_containment.json"
GIB = 1024**3
CG_ROOT = Path("/sys/fs/cgroup")
DISKS = Path("/var/tmp/agentsim-disks")

# --- child measurements (run with the old or new tree first on PYTHONPATH) ---------------------------


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_rss(op: str) -> dict[str, Any]:
    from envs.coding import tools
    from envs.coding.sandbox import make_sandbox

    with make_sandbox("bwrap") as sb:
        if op == "snapshot_dense":
            sb.exec("head -c 268435456 /dev/zero | tr '\\0' x > big.bin", timeout=60)
        else:
            sb.exec("truncate -s 1G big.bin && printf 'one\\ntwo\\n' | dd of=big.bin conv=notrunc 2>/dev/null")
        before = _rss_mb()
        outcome = "ok"
        try:
            if op == "view":
                tools.view(sb, "big.bin", "/workspace", None, None, 8000)
            elif op == "str_replace":
                tools.str_replace(sb, "big.bin", "/workspace", "one", "1")
            else:
                sb.snapshot()
        except Exception as e:  # noqa: BLE001 - the refusal is the new code's answer
            outcome = f"refused: {type(e).__name__}: {str(e)[:140]}"
        return {"rss_growth_mb": round(_rss_mb() - before, 1), "outcome": outcome}


def _spin(seconds: float) -> float:
    n, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in range(1000):
            n += 1
    return n / seconds


def _cpu_ticks(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
            total += int(fields[11]) + int(fields[12])  # utime + stime
        except (OSError, IndexError, ValueError):
            pass
    return total


def child_cpu(use_cgroup: bool, seconds: float) -> dict[str, Any]:
    """The host's own single-threaded rate beside 4 busy loops in a sandbox over its rate alone, and the
    CPU (in cores) the loops got meanwhile: the second does not depend on the machine's other load."""
    from envs.coding.sandbox import make_sandbox

    opts: dict[str, Any] = {} if use_cgroup else {"use_cgroup": False}
    with make_sandbox("bwrap", None, None, False, **opts) as sb:
        alone1 = _spin(seconds)
        sb.exec("for i in 1 2 3 4; do (while :; do :; done) & done", timeout=10)
        time.sleep(0.3)
        pids = sb.processes()
        t0, ticks0 = time.monotonic(), _cpu_ticks(pids)
        beside = _spin(seconds)
        cores = (_cpu_ticks(pids) - ticks0) / os.sysconf("SC_CLK_TCK") / (time.monotonic() - t0)
        cg = getattr(sb, "cgroup", None)
        how = "cgroup cpu share" if cg is not None and getattr(cg, "cpu", None) is not None else "no cpu share"
        if not use_cgroup:
            how = "nice fallback"
    alone2 = _spin(seconds)
    alone = (alone1 + alone2) / 2
    return {"ratio": round(beside / alone, 3), "sandbox_cores": round(cores, 3), "how": how}


def child_forkbomb() -> dict[str, Any]:
    from envs.coding.env import CodingEnv

    env = CodingEnv(task="example-kv-delete")
    try:
        env.reset(seed=0)
        env.step("bash[nohup sh -c 'f() { while :; do f & sleep 0.1; done; }; f' >/dev/null 2>&1 & sleep 1; true]")
        bomb = len(env.sandbox.processes())
        t0 = time.monotonic()
        env.reset(seed=0)
        reset_s = time.monotonic() - t0
        left = len(env.sandbox.processes()) - 2  # the sandbox's init and lifeline are its own
        obs, *_ = env.step("bash[echo alive]")
        return {
            "bomb": bomb,
            "left": left,
            "next_works": "alive" in obs,
            "reset_s": round(reset_s, 2),
            "obs": obs[-120:],
        }
    finally:
        env.close()


def child_episode() -> None:
    from envs.coding.env import CodingEnv

    env = CodingEnv(task="example-kv-delete")
    env.reset(seed=0)
    env.step("bash[sleep 600 &]")
    print("ready", flush=True)
    time.sleep(600)


def child_next_start() -> dict[str, Any]:
    from envs.coding.sandbox import make_sandbox

    with make_sandbox("bwrap") as sb:
        sb.exec("true")
    return {}


def child_forge() -> dict[str, Any]:
    from envs.coding.env import CodingEnv

    names = ("test_put_and_get_still_work", "test_delete_removes_the_key", "test_delete_unknown_key_is_404[x]")
    forger = "import os\n" + "".join(f"print('PASSED test_kv.py::{t}', flush=True)\n" for t in names) + "os._exit(0)\n"
    env = CodingEnv(task="example-kv-delete")
    try:
        env.reset(seed=0)
        untouched = env.step("submit[]")[1]
        env.reset(seed=0)
        env.step(f"create[/workspace/pytest.py]\n{forger}")
        env.step("bash[mv /workspace/pytest.py /tmp/pytest.py]")
        forged = env.step("submit[]")[1]
        return {"untouched": untouched, "forged": forged}
    finally:
        env.close()


CHILDREN = {
    "rss": lambda a: child_rss(a[0]),
    "cpu": lambda a: child_cpu(a[0] == "1", float(a[1])),
    "forkbomb": lambda a: child_forkbomb(),
    "next_start": lambda a: child_next_start(),
    "forge": lambda a: child_forge(),
}

# --- the parent ----------------------------------------------------------------------------------------


def run_child(tree: Path, *args: str, timeout: float = 180, tmpdir: Path | None = None) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    res = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", *args],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("{")]
    if res.returncode != 0 or not lines:
        return {"error": (res.stderr or res.stdout)[-400:]}
    return json.loads(lines[-1])


def _empty(group: Path) -> bool:
    try:
        return not (group / "cgroup.procs").read_text().strip()
    except OSError:
        return False


def _snapshot_leftovers(tmp: Path) -> dict[str, set[str]]:
    """Temp folders in the side's private TMPDIR; empty sandbox cgroups (a live sandbox's group holds its
    processes, so other runs on this machine add none); disk folders."""
    folders = {p.name for p in tmp.iterdir() if p.name.startswith("agentsim-")}
    groups = {
        f"{c}/{d.name}"
        for c in ("memory", "pids", "cpu")
        if (CG_ROOT / c / "agentsim-sandboxes").is_dir()
        for d in (CG_ROOT / c / "agentsim-sandboxes").iterdir()
        if d.is_dir() and _empty(d)
    }
    disks = {d.name for d in DISKS.iterdir()} if DISKS.is_dir() else set()
    return {"folders": folders, "cgroups": groups, "disks": disks}


def _exists(kind: str, name: str, tmp: Path) -> bool:
    if kind == "folders":
        return (tmp / name).exists()
    if kind == "cgroups":
        return (CG_ROOT / name.split("/")[0] / "agentsim-sandboxes" / name.split("/")[1]).exists()
    return (DISKS / name).exists()


def crash_trial(tree: Path, tmp: Path) -> dict[str, Any]:
    """kill -9 an episode; leftovers just after, then after the next start (a new sandbox)."""
    before = _snapshot_leftovers(tmp)
    env = {**os.environ, "PYTHONPATH": str(tree), "TMPDIR": str(tmp)}
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--child", "episode"],
        cwd=tree,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    ready = proc.stdout.readline().strip() == "ready"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(1.0)  # the sandbox dies with its parent; its cgroups empty
    after = _snapshot_leftovers(tmp)
    new = {k: sorted(after[k] - before[k]) for k in after}
    new["disks"] = [d for d in new["disks"] if d.startswith(f"{proc.pid}-")]
    readable = [n for n in new["folders"] if (tmp / n).stat().st_mode & 0o004]
    run_child(tree, "next_start", tmpdir=tmp)
    still = {k: [n for n in v if _exists(k, n, tmp)] for k, v in new.items()}
    return {
        "ready": ready,
        "after_crash": {k: len(v) for k, v in new.items()},
        "world_readable_folders": len(readable),
        "after_next_start": {k: len(v) for k, v in still.items()},
        "names_left": still,
    }


def clean_up(names: dict[str, list[str]], tmp: Path) -> None:
    """Remove what a trial left (the old code never does): mounts first, then folders and cgroups."""
    from envs.coding.sandbox.disk import reap_stale

    reap_stale()
    for n in names.get("folders", []):
        p = tmp / n
        subprocess.run(["umount", "-l", str(p)], capture_output=True)
        shutil.rmtree(p, ignore_errors=True)
    for n in names.get("cgroups", []):
        c, d = n.split("/")
        try:
            (CG_ROOT / c / "agentsim-sandboxes" / d).rmdir()
        except OSError:
            pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--old-ref", default="8209b50")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--cpu-seconds", type=float, default=3.0)
    args = ap.parse_args()
    old = Path(tempfile.mkdtemp(prefix="coding-containment-old-"))
    archive = subprocess.run(["git", "archive", args.old_ref, "envs"], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(old)], input=archive.stdout, check=True)
    trees = {"old": old, "new": ROOT}
    results: dict[str, Any] = {"old_ref": args.old_ref, "trials": args.trials}
    t0 = time.monotonic()
    try:
        for op in ("view", "str_replace", "snapshot", "snapshot_dense"):
            results[f"rss_{op}"] = {side: run_child(tree, "rss", op) for side, tree in trees.items()}
        results["cpu"] = {
            "old": run_child(old, "cpu", "1", str(args.cpu_seconds)),
            "new": run_child(ROOT, "cpu", "1", str(args.cpu_seconds)),
            "new_nice_fallback": run_child(ROOT, "cpu", "0", str(args.cpu_seconds)),
        }
        results["forkbomb"] = {
            side: [run_child(tree, "forkbomb") for _ in range(args.trials)] for side, tree in trees.items()
        }
        results["crash"] = {}
        for side, tree in trees.items():
            tmp = Path(tempfile.mkdtemp(prefix=f"coding-containment-{side}-tmp-"))
            tmp.chmod(0o711)  # bwrap resolves the workspace as the sandbox's uid
            try:
                trials = [crash_trial(tree, tmp) for _ in range(args.trials)]
                for t in trials:
                    clean_up(t.pop("names_left"), tmp)
            finally:
                subprocess.run(["umount", "-R", "-l", str(tmp)], capture_output=True)
                shutil.rmtree(tmp, ignore_errors=True)
            results["crash"][side] = trials
        results["forge"] = {side: run_child(tree, "forge") for side, tree in trees.items()}
    finally:
        shutil.rmtree(old, ignore_errors=True)
    results["seconds"] = round(time.monotonic() - t0, 1)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(results, indent=2) + "\n")
    print_table(results)


def print_table(r: dict[str, Any]) -> None:
    def rss(key: str, side: str) -> str:
        v = r[key][side]
        if "error" in v:
            return "error"
        note = " (refused)" if v["outcome"].startswith("refused") else ""
        return f"{v['rss_growth_mb']:,.1f} MB{note}"

    def fb(side: str) -> str:
        ts = r["forkbomb"][side]
        left = [t.get("left", "?") for t in ts]
        works = sum(bool(t.get("next_works")) for t in ts)
        return f"left {left}, next action works {works}/{len(ts)}"

    def crash(side: str, when: str) -> str:
        ts = r["crash"][side]
        tot = {k: sum(t[when][k] for t in ts) for k in ("folders", "cgroups", "disks")}
        extra = f", {sum(t['world_readable_folders'] for t in ts)} world-readable" if when == "after_crash" else ""
        return f"{tot['folders']} folders{extra}, {tot['cgroups']} cgroups, {tot['disks']} disks"

    cpu = r["cpu"]
    rows = [
        ("RSS growth: view of a 1 GiB sparse file", rss("rss_view", "old"), rss("rss_view", "new")),
        ("RSS growth: str_replace on it", rss("rss_str_replace", "old"), rss("rss_str_replace", "new")),
        ("RSS growth: snapshot with it", rss("rss_snapshot", "old"), rss("rss_snapshot", "new")),
        (
            "RSS growth: snapshot, 256 MiB dense file",
            rss("rss_snapshot_dense", "old"),
            rss("rss_snapshot_dense", "new"),
        ),
        (
            "host workload beside 4 busy loops / alone",
            f"{cpu['old'].get('ratio')} ({cpu['old'].get('how')})",
            f"{cpu['new'].get('ratio')} (cgroup); {cpu['new_nice_fallback'].get('ratio')} (nice fallback)",
        ),
        (
            "CPU the 4 loops got meanwhile (cores)",
            f"{cpu['old'].get('sandbox_cores')}",
            f"{cpu['new'].get('sandbox_cores')} (cgroup); {cpu['new_nice_fallback'].get('sandbox_cores')} (nice fallback)",
        ),
        ("fork bomb, then reset", fb("old"), fb("new")),
        (f"kill -9 ({r['trials']} trials): left just after", crash("old", "after_crash"), crash("new", "after_crash")),
        ("... left after the next start", crash("old", "after_next_start"), crash("new", "after_next_start")),
        (
            "pytest.py in /tmp: reward (untouched task)",
            f"{r['forge']['old'].get('forged')} ({r['forge']['old'].get('untouched')})",
            f"{r['forge']['new'].get('forged')} ({r['forge']['new'].get('untouched')})",
        ),
    ]
    w0 = max(len(a) for a, _, _ in rows)
    w1 = max(len(b) for _, b, _ in rows)
    print(f"{'':{w0}}  {'old (' + r['old_ref'] + ')':{w1}}  new")
    for a, b, c in rows:
        print(f"{a:{w0}}  {b:{w1}}  {c}")
    print(f"({r['seconds']} s; {OUT.relative_to(ROOT)})")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        which, rest = sys.argv[2], sys.argv[3:]
        if which == "episode":
            child_episode()
        else:
            print(json.dumps(CHILDREN[which](rest)))
    else:
        main()
