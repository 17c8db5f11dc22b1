"""`collect(cfg)`: run a resumable collection of N episodes into `out/` and summarise it.

Outputs: `trajectories.jsonl` (finished episodes, append-only), `failed.jsonl` (failures, retried
on rerun), `collect.json` (the config the data was made with), `summary.json`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from agents.collect.failures import FailureLog
from agents.collect.plan import check_manifest, make_plan
from agents.collect.progress import CollectProgress
from agents.collect.sink import Sink
from agents.collect.worker import EpisodeWorker
from agents.core.factory import ConfigError
from agents.runner import TRAJECTORIES, summary_table
from agents.trajectories.store import TrajectoryStore
from agents.trajectories.summary import RunSummary, summarize

log = logging.getLogger(__name__)
EXECUTORS = ("local", "ray")


@dataclass
class CollectResult:
    summary: RunSummary
    wanted: int
    completed: int  # episodes of the plan now in the store
    new_episodes: int  # finished by this invocation
    failed: dict[int, str]  # seed -> error, still missing after this invocation
    aborted: str | None
    episodes_per_s: float
    tokens_per_s: float

    @property
    def complete(self) -> bool:
        return self.completed == self.wanted


def collect(cfg: dict[str, Any], console: Console | None = None) -> CollectResult:
    console = console or Console(stderr=True)
    executor = str(cfg.get("executor", "local"))
    if executor not in EXECUTORS:
        raise ConfigError(f"executor must be one of {', '.join(EXECUTORS)}; got {executor!r}")
    concurrency = int(cfg.get("concurrency", 8))
    if concurrency < 1:
        raise ConfigError(f"concurrency must be >= 1, got {concurrency}")
    out = Path(cfg["out"])
    out.mkdir(parents=True, exist_ok=True)
    store = TrajectoryStore(out / TRAJECTORIES)
    plan = make_plan(cfg, store)
    check_manifest(out, cfg, plan.config_hash)
    if plan.done:
        log.info("resuming: %d of %d episodes already in %s", plan.done, len(plan.seeds), store.path)
    brain_name = str(dict(cfg["brain"]).get("name", "local"))
    worker = None
    if executor == "local" and plan.todo:
        worker = EpisodeWorker(cfg, chash=plan.config_hash)
        worker.check()
    max_failures = cfg.get("max_failures")
    progress = CollectProgress(console, len(plan.todo), f"{plan.env_name} / {brain_name} / {executor}",
                               enabled=bool(cfg.get("progress", True)))
    sink = Sink(store, FailureLog(out / "failed.jsonl"), progress, plan.env_name, store.episode_ids(),
                None if max_failures is None else int(max_failures))
    with progress:
        if plan.todo and worker is not None:
            asyncio.run(_run_local(worker, plan.todo, concurrency, sink))
        elif plan.todo:
            from agents.collect.ray_executor import run_ray

            run_ray(cfg, plan.config_hash, plan.todo, concurrency, sink)
    wall = progress.elapsed
    episodes = [ep for ep in store.read() if ep.episode_id in plan.wanted_ids]
    result = CollectResult(summary=summarize(episodes, wall), wanted=len(plan.seeds), completed=len(episodes),
                           new_episodes=progress.episodes, failed=dict(sink.failed), aborted=sink.abort_reason,
                           episodes_per_s=progress.episodes / wall if wall > 0 else 0.0,
                           tokens_per_s=sink.tokens / wall if wall > 0 else 0.0)
    _write_summary(out, cfg, result, plan.config_hash, executor)
    _report(console, result, f"{plan.env_name} / {brain_name} ({executor}, concurrency {concurrency})", out)
    return result


async def _run_local(worker: EpisodeWorker, seeds: list[int], concurrency: int, sink: Sink) -> None:
    from agents.collect.local import run_local

    await run_local(worker, seeds, concurrency, sink)


def _write_summary(out: Path, cfg: dict[str, Any], r: CollectResult, chash: str, executor: str) -> None:
    body = {"summary": r.summary.model_dump(), "episodes_wanted": r.wanted, "episodes_completed": r.completed,
            "episodes_this_run": r.new_episodes, "episodes_per_s": r.episodes_per_s, "tokens_per_s": r.tokens_per_s,
            "executor": executor, "config_hash": chash, "aborted": r.aborted,
            "failed_episodes": [{"seed": s, "error": e} for s, e in sorted(r.failed.items())],
            "config": {k: v for k, v in cfg.items() if k != "hydra"}}
    tmp = out / "summary.json.tmp"
    tmp.write_text(json.dumps(body, indent=2, default=str))
    tmp.replace(out / "summary.json")


def _report(console: Console, r: CollectResult, title: str, out: Path) -> None:
    console.print(summary_table(r.summary, title))
    console.print(f"collected {r.new_episodes} episodes this run at {r.episodes_per_s:.2f} episodes/s, "
                  f"{r.tokens_per_s:,.0f} tokens/s; {r.completed}/{r.wanted} done in {out / TRAJECTORIES}", soft_wrap=True)
    if r.failed:
        first = next(iter(r.failed.items()))
        console.print(f"[red]{len(r.failed)} episode(s) failed[/red] (see {out / 'failed.jsonl'}); first: seed {first[0]}: "
                      f"{first[1]}", soft_wrap=True)
    if r.aborted:
        console.print(f"[red]collection stopped:[/red] {r.aborted}", soft_wrap=True)
    if not r.complete:
        console.print("rerun the same command to finish the missing episodes (finished ones are kept)")
