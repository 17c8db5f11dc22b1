"""Published Harbor and Terminal-Bench 1 tasks, run as their authors wrote them (docs/coding_tasks.md).

`formats` reads the task folder, `dockerfile` what its Dockerfile / compose file declares (and what bwrap
cannot reproduce), `workspace` builds the start state and the oracle, `verifier` runs the task's own verifier.
"""

from envs.coding.published.formats import is_agentsim_native, load_published
from envs.coding.published.model import EnvironmentPlan, PublishedTask, Service, SkippedStep
from envs.coding.published.workspace import UnreproducibleTaskError, check_reproducible

__all__ = [
    "EnvironmentPlan",
    "PublishedTask",
    "Service",
    "SkippedStep",
    "UnreproducibleTaskError",
    "check_reproducible",
    "is_agentsim_native",
    "load_published",
]
