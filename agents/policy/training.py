"""What every trainer here shares (the policy's `agents.train` and the PRM's `prm.train`).

Seeding, a held-out split that stays stable as data grows, and replacing an output folder in
one rename so a crash mid-save never leaves a half-written checkpoint. Torch is imported only
where it is needed, so `agents` still imports without it.
"""

from __future__ import annotations

import hashlib
import random
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np


def seed_everything(seed: int) -> None:
    """Seed Python's, numpy's and torch's generators (training is reproducible per seed)."""
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def is_held_out(key: str, fraction: float, seed: int) -> bool:
    """Whether the group named `key` (a task, an episode) is held out: a seeded hash, so adding data moves nothing."""
    h = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64 < fraction


def write_folder(folder: Path, write: Callable[[Path], None]) -> None:
    """`write` into a sibling temporary folder, then swap it in for `folder` (a crash leaves the old one)."""
    tmp = folder.with_name(folder.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    write(tmp)
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)


DEVICE_CHOICES = "cpu, cuda, cuda:N (a GPU index) or auto (cuda where one is visible, else cpu)"


def resolve_device(name: str) -> str:
    """The torch device a `device=` setting names; a GPU that is not there is a `UsageError` (exit 2), not a crash."""
    import re

    import torch

    from agents.cli import UsageError

    name = name.strip().lower()
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cpu":
        return "cpu"
    m = re.fullmatch(r"cuda(?::(\d+))?", name)
    if not m:
        raise UsageError(f"device={name!r} is not a device: use {DEVICE_CHOICES}")
    if not torch.cuda.is_available():
        raise UsageError(
            f"device={name} asks for a GPU, but torch sees none (torch {torch.__version__}, "
            f"cuda build: {torch.version.cuda or 'no'}): use device=cpu, or device=auto to take a GPU only where one exists"
        )
    index = int(m.group(1) or 0)
    if index >= torch.cuda.device_count():
        raise UsageError(f"device={name}: only {torch.cuda.device_count()} GPU(s) visible (cuda:0..)")
    return f"cuda:{index}"
