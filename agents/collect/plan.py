"""Which episodes a collection owes: seeds, ids, what the store already holds, and the run's manifest.

Episode i has seed `seed + i` and id `<env>-<seed>`, so a rerun of the same command knows exactly
which episodes are missing. `collect.json` pins the behaviour-relevant config: rerunning into the
same `out` with a different brain or env would silently mix two datasets, so it is refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.collect.worker import env_name_of, episode_id
from agents.core.factory import ConfigError, config_hash
from agents.trajectories.store import TrajectoryStore

MANIFEST = "collect.json"
# how the run executes, not what it produces: free to change between a run and its resume
VOLATILE = ("executor", "workers", "ray_address", "ray_num_cpus", "remote", "max_failures", "progress", "log_level")


@dataclass
class Plan:
    env_name: str
    seeds: list[int]
    todo: list[int]
    config_hash: str

    @property
    def wanted_ids(self) -> set[str]:
        return {episode_id(self.env_name, s) for s in self.seeds}

    @property
    def done(self) -> int:
        return len(self.seeds) - len(self.todo)


def collection_hash(cfg: dict[str, Any]) -> str:
    return config_hash({k: v for k, v in cfg.items() if k not in VOLATILE})


def make_plan(cfg: dict[str, Any], store: TrajectoryStore) -> Plan:
    env_name = env_name_of(cfg)
    n = int(cfg.get("episodes", 1))
    if n < 0:
        raise ConfigError(f"episodes must be >= 0, got {n}")
    seeds = [int(cfg.get("seed", 0)) + i for i in range(n)]
    have = store.episode_ids()
    todo = [s for s in seeds if episode_id(env_name, s) not in have]
    return Plan(env_name, seeds, todo, collection_hash(cfg))


def check_manifest(out: Path, cfg: dict[str, Any], chash: str) -> None:
    """Write the manifest on the first run; on a rerun refuse a config that would change the data."""
    path = out / MANIFEST
    if path.exists():
        old = json.loads(path.read_text())
        if old.get("config_hash") != chash:
            changed = sorted(k for k in set(old.get("config", {})) | set(cfg)
                             if k not in VOLATILE and k not in ("episodes", "out", "hydra", "concurrency")
                             and old.get("config", {}).get(k) != cfg.get(k))
            raise ConfigError(f"{out} holds a collection made with another config (changed: {', '.join(changed) or '?'}); "
                              "rerun with the original settings to resume it, or choose another out=...")
        return
    keep = {k: v for k, v in cfg.items() if k != "hydra"}
    path.write_text(json.dumps({"config_hash": chash, "config": keep}, indent=2, default=str))
