"""The contract every text environment in this project keeps (see DESIGN.md).

An env is a `gymnasium.Env` with `FreeText` observation and action spaces.

- `reset(seed=, options=) -> (obs, info)`; `step(action) -> (obs, reward, terminated, truncated, info)`.
- `info` always carries:
    - `instruction`: the goal in words (str),
    - `available_actions`: list[str] of concrete, complete actions valid now (where finite),
    - `action_templates`: list[str] of free-text action forms valid now, each with one `...`
      slot, e.g. `"search[...]"` (may be empty),
    - on a bad action, `error`: what was wrong and what is allowed. A bad action never raises
      and never silently no-ops; the state is unchanged.
- `terminated` = the task ended (success or failure decided); `truncated` = outside cut-off.
- Same seed + same actions = same trajectory.

Optional capabilities, detected with `isinstance(env.unwrapped, Protocol)`:
- `Snapshottable`: `snapshot() -> object` and `restore(snap)` so search can branch.
- `HasExpert`: `expert_action() -> str`, the scripted expert's deterministic choice in the
  current state (the agents' `scripted` brain adds epsilon noise on top).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

SLOT = "..."


@runtime_checkable
class Snapshottable(Protocol):
    def snapshot(self) -> Any: ...

    def restore(self, snapshot: Any) -> None: ...


@runtime_checkable
class HasExpert(Protocol):
    def expert_action(self) -> str: ...


def invalid_action_message(problem: str, allowed: list[str], templates: list[str] | None = None, limit: int = 20) -> str:
    """One wording for every env's bad-action feedback: what was wrong, then what is allowed."""
    shown = list(templates or []) + list(allowed[:limit])
    more = f" (and {len(allowed) - limit} more)" if len(allowed) > limit else ""
    return f"Invalid action: {problem}. Allowed actions: " + ", ".join(shown) + more + "."
