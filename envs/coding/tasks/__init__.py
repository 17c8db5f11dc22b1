"""Coding tasks: the `CodingTask` model and the Harbor / Terminal-Bench 1 loader (docs/coding.md)."""

from envs.coding.tasks.loader import (
    TASKS_ROOT,
    TaskFormatError,
    dataset_dirs,
    load_task,
    load_task_dir,
    shipped_tasks,
    task_dirs,
)
from envs.coding.tasks.model import CodingTask

__all__ = [
    "TASKS_ROOT",
    "CodingTask",
    "TaskFormatError",
    "dataset_dirs",
    "load_task",
    "load_task_dir",
    "shipped_tasks",
    "task_dirs",
]
