"""`python -m agents.export atif <run folder or trajectories.jsonl> <out folder>` — trajectories in other formats.

`atif`: one Harbor ATIF document per episode, `<out>/<episode id>.json` (agents/trajectories/atif.py).
Exit codes: 0 written; 2 a usage mistake (unknown format or option, a store that is missing or holds no
episode), one `error: ...` line and no traceback.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from agents.trajectories.atif import to_atif
from agents.trajectories.store import TRAJECTORIES, TrajectoryStore
from envs.util import atomic_write_text

FORMATS = ("atif",)


def store_path(where: Path) -> Path:
    """The trajectories file of a run folder, or the file itself; ValueError naming what was expected."""
    path = where / TRAJECTORIES if where.is_dir() else where
    if not path.is_file():
        raise ValueError(f"{where}: no such trajectories file; give a run folder (holding {TRAJECTORIES}) or the file")
    return path


def file_name(episode_id: str) -> str:
    """A safe file name for an episode id (ids are `<env>-<seed>`; anything else is replaced)."""
    return re.sub(r"[^\w.\-]", "_", episode_id).lstrip(".") or "episode"


def export_atif(src: Path, out: Path) -> int:
    """Write every episode of the store as `<out>/<id>.json`; how many were written."""
    episodes = list(TrajectoryStore(store_path(src)).read())
    if not episodes:
        raise ValueError(f"{src}: the store holds no readable episode")
    out.mkdir(parents=True, exist_ok=True)
    for ep in episodes:
        atomic_write_text(out / f"{file_name(ep.episode_id)}.json", to_atif(ep).to_json())
    return len(episodes)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m agents.export", description=__doc__.split("\n", 1)[0])
    p.add_argument("format", choices=FORMATS, help="atif: Harbor's Agent Trajectory Interchange Format")
    p.add_argument("store", type=Path, help=f"a run folder (holding {TRAJECTORIES}) or a trajectories file")
    p.add_argument("out", type=Path, help="the folder to write one file per episode into")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)  # an unknown format or option: usage and exit 2
    try:
        n = export_atif(args.store, args.out)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{n} episodes written as ATIF to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
