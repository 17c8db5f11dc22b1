"""A run's results per task, for envs that play named tasks (a dataset of coding tasks): `tasks.json` and a table.

Each trial (episode) gets one error class, so a dataset run says at a glance what went wrong where:

- `none`: the episode ended and was graded (reward may still be 0: a wrong answer is not an error);
- `timeout`: the step limit cut the episode, or the verifier ran out of time;
- `verifier_error`: the verifier gave no valid verdict (no reward file, a forged or unreadable report);
- `agent_error`: the agent's side broke: the episode crashed, too many invalid outputs, or an exception cut it;
- `load_error`: the task could not be loaded or its sandbox not made (a broken task folder, a missing backend).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel
from rich.table import Table

from agents.trajectories.schema import EpisodeRecord

TASKS_FILE = "tasks.json"
ErrorClass = Literal["none", "timeout", "verifier_error", "agent_error", "load_error"]
ERROR_CLASSES: tuple[ErrorClass, ...] = ("none", "timeout", "verifier_error", "agent_error", "load_error")
# exception names that mean the task or its sandbox could not be made, not that the agent failed
LOAD_ERRORS = (
    "TaskFormatError",
    "UnreproducibleTaskError",
    "DockerfileError",
    "FileNotFoundError",
    "BackendUnavailableError",
    "TaskError",
)


class TrialResult(BaseModel):
    """One trial of one task."""

    task: str
    seed: int
    reward: float
    passed: bool
    time_s: float
    error_class: ErrorClass
    error: str | None = None  # what the class is based on (the exception, the truncation reason, the report problem)


class TaskSummary(BaseModel):
    """Every trial of one task, summed up."""

    task: str
    trials: int
    passed: int
    reward_mean: float
    reward_min: float
    reward_max: float
    time_mean_s: float
    time_total_s: float
    errors: dict[ErrorClass, int]  # error class -> trials (every class listed, zeros included)


class TaskReport(BaseModel):
    """`tasks.json`: the per-task summaries (sorted by task) and every trial behind them."""

    tasks: list[TaskSummary]
    trials: list[TrialResult]


def task_of(ep: EpisodeRecord) -> str | None:
    """The task an episode played: its env's `info["task"]` (the coding env sets it on every step)."""
    for step in reversed(ep.steps):
        name = step.info.get("task")
        if isinstance(name, str):
            return name
    return None


def classify_grade(grade: Mapping[str, Any]) -> tuple[ErrorClass, str | None]:
    """A verdict's class: `timeout` when the verifier timed out, `verifier_error` when it gave no valid reward."""
    if grade.get("timed_out"):
        return "timeout", "the verifier timed out"
    problem = grade.get("report_problem")
    if problem:
        return "verifier_error", str(problem)
    if "rewards" in grade and "verifier" in grade and not grade["rewards"]:  # a published task's: no reward file
        return "verifier_error", "the verifier wrote no reward (reward.txt / reward.json)"
    return "none", None


def classify_episode(ep: EpisodeRecord) -> tuple[ErrorClass, str | None]:
    """A finished episode's class, from how it ended and its last verdict."""
    reason = ep.outcome.truncation_reason or ""
    if reason.startswith("error:"):
        name = reason.removeprefix("error:").strip().split(":", 1)[0]
        return ("load_error" if name in LOAD_ERRORS else "agent_error"), reason
    if reason.startswith("invalid_outputs"):
        return "agent_error", reason
    grade = next((s.info["grade"] for s in reversed(ep.steps) if isinstance(s.info.get("grade"), dict)), None)
    if grade is not None:
        cls, why = classify_grade(grade)
        if cls != "none":
            return cls, why
    if ep.outcome.truncated:
        return "timeout", reason or "truncated"
    return "none", None


def classify_failure(error: str) -> ErrorClass:
    """A crashed episode's class, from its `ExceptionName: message` line (the failure log's form)."""
    name = error.split(":", 1)[0].strip()
    if name in LOAD_ERRORS:
        return "load_error"
    if name in ("TimeoutError", "TimeoutExpired"):
        return "timeout"
    return "agent_error"


def trial_results(
    episodes: Iterable[EpisodeRecord], failures: Mapping[int, str], tasks_by_seed: Mapping[int, str]
) -> list[TrialResult]:
    """Every trial with a known task: finished episodes, and crashed ones (`failures`, seed -> error) whose task
    the worker recorded."""
    out: list[TrialResult] = []
    for ep in episodes:
        name = task_of(ep) or tasks_by_seed.get(ep.seed)
        if name is None:
            continue
        cls, why = classify_episode(ep)
        out.append(
            TrialResult(
                task=name,
                seed=ep.seed,
                reward=ep.outcome.reward,
                passed=ep.outcome.success,
                time_s=ep.stats.wall_time_s,
                error_class=cls,
                error=why,
            )
        )
    for seed, error in sorted(failures.items()):
        name = tasks_by_seed.get(seed)
        if name is not None:
            out.append(
                TrialResult(
                    task=name,
                    seed=seed,
                    reward=0.0,
                    passed=False,
                    time_s=0.0,
                    error_class=classify_failure(error),
                    error=error,
                )
            )
    return sorted(out, key=lambda t: (t.task, t.seed))


def summarize_tasks(trials: Iterable[TrialResult]) -> TaskReport:
    """One `TaskSummary` per task, sorted by name."""
    by_task: dict[str, list[TrialResult]] = defaultdict(list)
    every = list(trials)
    for t in every:
        by_task[t.task].append(t)
    summaries = []
    for name, ts in sorted(by_task.items()):
        rewards = [t.reward for t in ts]
        errors: dict[ErrorClass, int] = dict.fromkeys(ERROR_CLASSES, 0)
        for t in ts:
            errors[t.error_class] += 1
        summaries.append(
            TaskSummary(
                task=name,
                trials=len(ts),
                passed=sum(t.passed for t in ts),
                reward_mean=statistics.fmean(rewards),
                reward_min=min(rewards),
                reward_max=max(rewards),
                time_mean_s=statistics.fmean(t.time_s for t in ts),
                time_total_s=sum(t.time_s for t in ts),
                errors=errors,
            )
        )
    return TaskReport(tasks=summaries, trials=every)


def task_table(report: TaskReport, title: str = "per task") -> Table:
    """The per-task table: trials, passes, mean reward, mean time, and the error classes seen."""
    t = Table(title=title)
    t.add_column("task", overflow="fold")
    for col in ("trials", "passed", "reward"):
        t.add_column(col, justify="right")
    t.add_column("time / trial", justify="right")
    t.add_column("errors")
    for s in report.tasks:
        errs = ", ".join(f"{k} {v}" for k, v in s.errors.items() if v and k != "none") or "-"
        t.add_row(s.task, str(s.trials), str(s.passed), f"{s.reward_mean:.2f}", f"{s.time_mean_s:.1f} s", errs)
    return t
