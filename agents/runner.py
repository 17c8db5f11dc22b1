"""Run N episodes of one agent config, concurrently, resumably, into a run folder.

`run_config(cfg)` is what `python -m agents.run` calls after Hydra has composed the config;
tests and notebooks can call it with a plain dict. Episodes run through the same
`EpisodeWorker` as `agents.collect` (so `+remote.url=...` runs the env in an env server here too).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from agents.brains.base import BrainError
from agents.collect.worker import EpisodeWorker, env_name_of, episode_id
from agents.core.factory import ConfigError
from agents.core.loop import run_many
from agents.trajectories.schema import EpisodeRecord
from agents.trajectories.store import TrajectoryStore
from agents.trajectories.summary import RunSummary, summarize

log = logging.getLogger(__name__)
TRAJECTORIES = "trajectories.jsonl"


def run_config(cfg: dict[str, Any], console: Console | None = None) -> RunSummary:
    console = console or Console(stderr=True)
    out = Path(cfg["out"])
    out.mkdir(parents=True, exist_ok=True)
    store = TrajectoryStore(out / TRAJECTORIES)
    env_name = env_name_of(cfg)
    seeds = [int(cfg.get("seed", 0)) + i for i in range(int(cfg.get("episodes", 1)))]
    done = store.episode_ids()
    if done and not cfg.get("resume", False):
        raise ConfigError(f"{out / TRAJECTORIES} already holds {len(done)} episodes; pass resume=true to continue "
                          "that run, or choose another out=...")
    todo = [s for s in seeds if episode_id(env_name, s) not in done]
    if done:
        log.info("resuming: %d of %d episodes already done", len(seeds) - len(todo), len(seeds))
    worker = EpisodeWorker(cfg)
    worker.check()  # fail fast on a bad brain or env config, before the progress bar
    chash, brain = worker.config_hash, worker.brain

    errors: list[tuple[int, BaseException]] = []
    t0 = time.perf_counter()
    progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("success {task.fields[succ]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                        console=console, disable=not cfg.get("progress", True))
    with progress:
        task = progress.add_task(f"{env_name} / {brain.name}", total=len(todo), succ="-")
        wins = [0, 0]

        def on_done(rec: EpisodeRecord) -> None:
            store.append(rec)
            wins[0] += rec.outcome.success
            wins[1] += 1
            progress.update(task, advance=1, succ=f"{wins[0]}/{wins[1]}")

        def on_error(seed: int, e: BaseException) -> None:
            errors.append((seed, e))
            progress.update(task, advance=1)

        asyncio.run(run_many(todo, worker.run, concurrency=int(cfg.get("concurrency", 1)), on_done=on_done, on_error=on_error))
    wall = time.perf_counter() - t0
    if errors and all(isinstance(e, (BrainError, ConfigError)) for _, e in errors) and len(errors) == len(todo):
        raise errors[0][1]
    wanted = {episode_id(env_name, s) for s in seeds}
    episodes = [ep for ep in store.read() if ep.episode_id in wanted]
    summary = summarize(episodes, wall)
    result = {"summary": summary.model_dump(), "env": env_name, "brain": brain.name, "model": brain.model,
              "config_hash": chash, "failed_episodes": [{"seed": s, "error": f"{type(e).__name__}: {e}"} for s, e in errors],
              "config": cfg}
    (out / "summary.json").write_text(json.dumps(result, indent=2, default=str))
    console.print(summary_table(summary, f"{env_name} / {brain.name} ({brain.model})"))
    console.print(f"trajectories: {out / TRAJECTORIES}   summary: {out / 'summary.json'}")
    if errors:
        console.print(f"[red]{len(errors)} episode(s) failed[/red]; first: {errors[0][1]}")
    return summary


def summary_table(s: RunSummary, title: str) -> Table:
    t = Table(title=title)
    t.add_column("metric")
    t.add_column("value", justify="right")
    rows = [("episodes", f"{s.episodes}"), ("success rate", f"{s.success_rate:.1%}"), ("mean score", f"{s.mean_score:.1f}"),
            ("mean steps", f"{s.mean_steps:.1f}"), ("invalid-action rate", f"{s.invalid_action_rate:.1%}"),
            ("tokens in / out", f"{s.tokens_in:,} / {s.tokens_out:,}"), ("wall time", f"{s.wall_time_s:.1f} s"),
            ("steps / s", f"{s.steps_per_s:.1f}")]
    for k, v in rows:
        t.add_row(k, v)
    return t
