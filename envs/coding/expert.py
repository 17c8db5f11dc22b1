"""The coding env's scripted expert: replay the task's reference solution, then submit.

`CodingEnv.expert_action()` implements it (it needs the env's state); this module names the
policy for readers and for code that wants the plan without an env:

1. `bash[ls]` (look),
2. the oracle action `bash[bash /grader/oracle-<key>/solve.sh]`: the env copies the solution into
   the read-only stash for that one call and runs it in /workspace (`<key>` is random per process,
   so neither an agent nor a recorded trajectory from another process can trigger it),
3. `bash[ls]` (look again),
4. `submit[]`.

Four steps, so the contract checker can branch mid-episode before the episode ends.
"""

from __future__ import annotations

from envs.coding.env import CHECK_ACTION, ORACLE_ACTION, SUBMIT

PLAN = (CHECK_ACTION, ORACLE_ACTION, CHECK_ACTION, SUBMIT)


def expert_plan() -> tuple[str, ...]:
    """The expert's actions from a fresh episode, in order (this process's oracle key included)."""
    return PLAN
