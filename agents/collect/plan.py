"""Which episodes a run owes: seeds, ids, what the store already holds, and the run's manifest.

Episode i has seed `seed + i` and id `<env>-<seed>`, so a rerun of the same command knows exactly
which episodes are missing. `collect.json` pins the behaviour-relevant config: rerunning into the
same `out` with a different brain or env would silently mix two datasets, so it is refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from agents.collect.worker import episode_id
from agents.config import ConfigError, identity_fields
from agents.resolve import ResolvedRun
from envs.util import atomic_write_text

MANIFEST = "collect.json"


@dataclass
class Plan:
    """The seeds a run wants, those still to run, and the hash that pins its config."""

    env_name: str
    seeds: list[int]
    todo: list[int]
    config_hash: str

    @cached_property
    def wanted_ids(self) -> set[str]:
        """Every episode id the plan wants, built once: the end of a run tests each stored episode against
        it, and rebuilding it per test made finishing a 10k-episode collection quadratic (35 s)."""
        return {episode_id(self.env_name, s) for s in self.seeds}

    @property
    def done(self) -> int:
        return len(self.seeds) - len(self.todo)


def make_plan(run: ResolvedRun, have: set[str]) -> Plan:
    """Seeds `seed .. seed+episodes-1`, minus the episodes the store already holds (`have`, its ids)."""
    cfg, env_name = run.config, run.env_name
    seeds = [cfg.seed + i for i in range(cfg.episodes)]
    todo = [s for s in seeds if episode_id(env_name, s) not in have]
    return Plan(env_name, seeds, todo, run.run_hash)


def check_manifest(out: Path, run: ResolvedRun) -> None:
    """Write the manifest on the first run; on a rerun refuse a config that would change the data (any field
    not marked `NOT_IDENTITY`, `agents.config`)."""
    path, cfg, chash = out / MANIFEST, run.config, run.run_hash
    plain = cfg.model_dump(mode="json")
    volatile = identity_fields(type(cfg))
    if path.exists():
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(old, dict) or "config_hash" not in old:
                raise ValueError("no config_hash in it")
        except (ValueError, UnicodeDecodeError) as e:
            raise ConfigError(
                f"{path} is corrupt ({e}); it records the config this run was made with. Restore it, "
                f"or delete it to adopt the current config for the episodes already in {out}"
            ) from None
        if old.get("config_hash") != chash:
            recorded = old.get("config")
            before = recorded if isinstance(recorded, dict) else {}
            changed = sorted(
                k
                for k in set(before) | set(plain)
                if k not in volatile and k != "hydra" and before.get(k) != plain.get(k)
            )
            raise ConfigError(
                f"{out} holds episodes made with another config (changed: {', '.join(changed) or '?'}); "
                "rerun with the original settings to resume it, or choose another out=..."
            )
        return
    atomic_write_text(path, json.dumps({"config_hash": chash, "config": plain}, indent=2, default=str))
