"""One engine from config to trajectories: what `agents.run` and `agents.collect` both are.

plan (which seeds are owed, `collect.json` pins the config) -> executor (asyncio lanes in this
process, or Ray actors) -> sink (the one writer of `trajectories.jsonl` and `failed.jsonl`, and the
progress display) -> an atomic `summary.json` and the table. The two commands differ only in
their defaults (`RunConfig` vs `CollectConfig`): one lane and a refusal to write into a folder
that holds episodes unless `resume=true`, against many lanes and resume-by-rerunning.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from agents.collect.failures import FailureLog
from agents.collect.plan import check_manifest, make_plan
from agents.collect.progress import CollectProgress
from agents.collect.sink import Sink
from agents.collect.tasks import TASKS_FILE, summarize_tasks, task_table, trial_results
from agents.collect.worker import EpisodeWorker
from agents.config import CollectConfig, ConfigError, RunConfig, validate_config
from agents.resolve import ResolvedRun, resolve
from agents.trajectories.schema import EpisodeRecord
from agents.trajectories.store import TRAJECTORIES, TrajectoryStore
from agents.trajectories.summary import RunSummary, summarize
from envs.capabilities import HasTasks
from envs.plugins import PluginError
from envs.registry import env_class
from envs.util import atomic_write_text

log = logging.getLogger(__name__)
SUMMARY = "summary.json"
FAILED = "failed.jsonl"


@dataclass
class EngineResult:
    """What one invocation achieved; `complete` decides the exit code (0 complete, 1 rerun to finish)."""

    summary: RunSummary
    wanted: int
    completed: int  # episodes of the plan now in the store
    new_episodes: int  # finished by this invocation
    failed: dict[int, str] = field(default_factory=dict)  # seed -> error, still missing after this invocation
    aborted: str | None = None
    episodes_per_s: float = 0.0
    tokens_per_s: float = 0.0

    @property
    def complete(self) -> bool:
        """Every episode of the plan is in the store."""
        return self.completed == self.wanted

    @property
    def exit_code(self) -> int:
        """0 when complete, else 1 (rerun to finish)."""
        return 0 if self.complete else 1


def run_config(cfg: dict[str, Any] | RunConfig, console: Console | None = None) -> EngineResult:
    """`python -m agents.run` as a function (tests, notebooks): interactive defaults."""
    return run_engine(validate_config(RunConfig, cfg), console)


def collect(cfg: dict[str, Any] | CollectConfig, console: Console | None = None) -> EngineResult:
    """`python -m agents.collect` as a function: collection defaults, resumed by rerunning."""
    return run_engine(validate_config(CollectConfig, cfg), console)


def with_trials(cfg: RunConfig) -> RunConfig:
    """`trials=k`: episodes = the env's task count x k (seed s plays task s % count, so each task runs k times);
    it replaces `episodes`. The env's class counts its tasks from the kwargs (`HasTasks.tasks_of`): no env is built."""
    if cfg.trials is None:
        return cfg
    if cfg.remote.url:
        raise ConfigError("trials= needs the env in this process (it counts the env's tasks); use episodes= remotely")
    try:
        env_cls = env_class(cfg.env.id, cfg.env.entry_point)
    except PluginError as e:
        raise ConfigError(str(e)) from None
    if not (isinstance(env_cls, type) and issubclass(env_cls, HasTasks)):
        raise ConfigError(
            f"trials= needs an env that plays named tasks (env=coding with a dataset folder); "
            f"{cfg.env.name or cfg.env.id} does not: use episodes="
        )
    try:
        count = len(env_cls.tasks_of(cfg.env.kwargs))
    except TypeError as e:
        raise ConfigError(f"bad env.kwargs for {cfg.env.id!r}: {e}") from e
    return validate_config(type(cfg), {**cfg.model_dump(), "episodes": count * cfg.trials})


def run_engine(config: RunConfig, console: Console | None = None) -> EngineResult:
    """Run every episode the plan still owes; config mistakes raise `ConfigError` before any episode starts."""
    run = resolve(with_trials(config))  # once: adapter, perception, lanes, step limit, the run's hash
    cfg = run.config
    console = console or Console(stderr=True)
    executor = cfg.executor if isinstance(cfg, CollectConfig) else "local"
    out = cfg.out_dir
    out.mkdir(parents=True, exist_ok=True)
    store = TrajectoryStore(out / TRAJECTORIES)
    held = store.episode_ids()  # read the store once: plan, resume check and sink share it
    plan = make_plan(run, held)
    if held and not cfg.resume:
        raise ConfigError(
            f"{store.path} already holds {len(held)} episodes; pass resume=true to continue "
            "that run, or choose another out=..."
        )
    check_manifest(out, run)
    if plan.done:
        log.info("resuming: %d of %d episodes already in %s", plan.done, len(plan.seeds), store.path)
    worker: EpisodeWorker | None = None
    if executor == "local" and run.brain.in_process and run.lanes > 1:
        log.warning(
            "concurrency=%d with brain=%s: the episodes share one in-process model and its cores, so more than one "
            "in flight only slows each step (their prompts evict each other's KV cache, or lengthen every decode's "
            "attention in KV slots); concurrency=1 is faster here",
            run.lanes,
            cfg.brain.name,
        )
    if executor == "local":
        worker = EpisodeWorker(run)
        worker.check()  # fail fast on a bad brain, env or memory state, before the progress bar
    model = worker.brain.model if worker is not None else str(cfg.brain.options.get("model", cfg.brain.name))
    adapter = worker.adapter if worker is not None else None
    title = f"{plan.env_name} / {cfg.brain.name}" + (f" / {executor}" if executor != "local" else "")
    progress = CollectProgress(console, len(plan.todo), title, enabled=cfg.progress)
    max_failures = cfg.max_failures if isinstance(cfg, CollectConfig) else None
    sink = Sink(store, FailureLog(out / FAILED), progress, plan.env_name, set(held), max_failures)
    with progress:
        if plan.todo and worker is not None:
            from agents.collect.local import run_local

            asyncio.run(run_local(worker, plan.todo, run.lanes, sink))
        elif plan.todo:
            from agents.collect.ray_executor import run_ray

            assert isinstance(cfg, CollectConfig)
            run_ray(cfg, plan.todo, run.lanes, sink)
    wall = progress.elapsed
    episodes = [ep for ep in store.read() if ep.episode_id in plan.wanted_ids]
    result = EngineResult(
        summary=summarize(episodes, wall),
        wanted=len(plan.seeds),
        completed=len(episodes),
        new_episodes=progress.episodes,
        failed=dict(sink.failed),
        aborted=sink.abort_reason,
        episodes_per_s=progress.episodes / wall if wall > 0 else 0.0,
        tokens_per_s=sink.tokens / wall if wall > 0 else 0.0,
    )
    if worker is None:  # Ray: the actors built the brains, and each episode says which adapter acted
        adapter = recorded_adapter(episodes)
    write_summary(out, run, result, executor, model, adapter)
    tasks = trial_results(episodes, result.failed, worker.tasks if worker is not None else {})
    task_report = summarize_tasks(tasks) if tasks else None
    if task_report is not None:
        atomic_write_text(out / TASKS_FILE, task_report.model_dump_json(indent=2))
    report(
        console,
        result,
        f"{title} ({model}{' + ' + adapter if adapter else ''}, concurrency {run.lanes})",
        out,
        "collection" if isinstance(cfg, CollectConfig) else "run",
    )
    if task_report is not None and len(task_report.tasks) > 1:
        console.print(task_table(task_report, f"per task ({out / TASKS_FILE})"))
    if plan.todo and not result.new_episodes and sink.user_error is not None:
        raise sink.user_error  # every episode hit the same user mistake (e.g. a dead endpoint): exit 2, not 1
    return result


def recorded_adapter(episodes: list[EpisodeRecord]) -> str | None:
    """The adapter(s) the episodes' brains ran, from their `meta` (a run may mix them after a resume)."""
    names = sorted({str(ep.meta["adapter"]) for ep in episodes if ep.meta.get("adapter")})
    return ", ".join(names) or None


def write_summary(
    out: Path, run: ResolvedRun, r: EngineResult, executor: str, model: str, adapter: str | None = None
) -> None:
    """`summary.json`, written atomically (a crash leaves the old one or the new one, never half)."""
    cfg = run.config
    body = {
        "summary": r.summary.model_dump(),
        "env": cfg.env.name or cfg.env.id,
        "brain": cfg.brain.name,
        "model": model,
        "adapter": adapter,
        "episodes_wanted": r.wanted,
        "episodes_completed": r.completed,
        "episodes_this_run": r.new_episodes,
        "episodes_per_s": r.episodes_per_s,
        "tokens_per_s": r.tokens_per_s,
        "executor": executor,
        "config_hash": run.run_hash,
        "aborted": r.aborted,
        "failed_episodes": [{"seed": s, "error": e} for s, e in sorted(r.failed.items())],
        "config": cfg.model_dump(mode="json"),
    }
    atomic_write_text(out / SUMMARY, json.dumps(body, indent=2, default=str))


def metric_table(title: str, rows: list[tuple[str, str]]) -> Table:
    """A two-column (metric, value) rich table: how every command reports its numbers."""
    t = Table(title=title)
    t.add_column("metric")
    t.add_column("value", justify="right")
    for k, v in rows:
        t.add_row(k, v)
    return t


def summary_table(s: RunSummary, title: str, failed: int = 0) -> Table:
    """The numbers people compare about a run."""
    return metric_table(
        title,
        [
            ("episodes", f"{s.episodes}"),
            ("failed (crashed)", f"{failed}"),
            ("success rate", f"{s.success_rate:.1%}"),
            ("mean score", f"{s.mean_score:.1f}"),
            ("mean steps", f"{s.mean_steps:.1f}"),
            ("invalid-action rate", f"{s.invalid_action_rate:.1%}"),
            ("tokens in / out", f"{s.tokens_in:,} / {s.tokens_out:,}"),
            ("wall time", f"{s.wall_time_s:.1f} s"),
            ("steps / s", f"{s.steps_per_s:.1f}"),
        ],
    )


def report(console: Console, r: EngineResult, title: str, out: Path, noun: str = "run") -> None:
    """The table, where the files are, and what to do when episodes are missing."""
    console.print(summary_table(r.summary, title, failed=len(r.failed)))
    console.print(
        f"{r.new_episodes} episodes this run at {r.episodes_per_s:.2f} episodes/s, {r.tokens_per_s:,.0f} tokens/s; "
        f"{r.completed}/{r.wanted} in {out / TRAJECTORIES}   summary: {out / SUMMARY}",
        soft_wrap=True,
    )
    if r.failed:
        seed, error = next(iter(sorted(r.failed.items())))
        console.print(
            f"[red]{len(r.failed)} episode(s) failed[/red] (see {out / FAILED}); first: seed {seed}: {error}",
            soft_wrap=True,
        )
    if r.aborted:
        console.print(f"[red]{noun} stopped:[/red] {r.aborted}", soft_wrap=True)
    if not r.complete:
        console.print(
            "rerun the same command (with resume=true for agents.run) to finish the missing episodes; "
            "finished ones are kept"
        )
