"""Optional env abilities the agent side uses, declared so callers check them with `isinstance`.

They complement `envs.contract` (`Snapshottable`, `HasExpert`): an env that talks to a server
(`envs.server.client.RemoteEnv`) can be driven without blocking an event loop and can say
which envs its server serves.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class AsyncEnv(Protocol):
    """An env whose reset/step can be awaited (a remote env); async episode loops prefer these."""

    async def areset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """`reset`, awaitable."""
        ...

    async def astep(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """`step`, awaitable."""
        ...


@runtime_checkable
class AsyncClosable(Protocol):
    """An env holding async resources (an HTTP client) that must be closed from the event loop."""

    async def aclose(self) -> None:
        """`close`, awaitable."""
        ...


@runtime_checkable
class ServesEnvs(Protocol):
    """A proxy env that can list what its server serves (short name -> gymnasium id), to fail fast on a typo."""

    def servable(self) -> dict[str, str]:
        """Short name -> gymnasium id of every env the server serves."""
        ...


@runtime_checkable
class HasAsyncExpert(Protocol):
    """An env whose expert answer can be awaited (a remote env's expert is an HTTP call)."""

    async def aexpert_action(self) -> str:
        """`expert_action`, awaitable."""
        ...


@runtime_checkable
class HasStateKey(Protocol):
    """An env that can name its current state with a hashable key, equal for equal states however reached
    (group-based RL such as GiGPO groups steps of a group's rollouts by it; see `envs.batched`)."""

    def state_key(self) -> Any:
        """A hashable key of the current state."""
        ...


@runtime_checkable
class HasCandidateExpert(Protocol):
    """An env whose expert can choose among the actions an agent was offered.

    `expert_action()` may name an action no candidate list holds (WebShop's expert searches with the goal's hidden
    keywords, not words of the instruction); for demonstrations and DAgger labels a ranked-choice student can learn
    from, the expert must pick among the student's own candidates."""

    def expert_choice(self, candidates: list[str], settle: float | None = None) -> str:
        """The expert's action if it is a candidate, else the candidate the expert rates best for the goal;
        `settle` (a reward in [0, 1]): keep to what is in view when it is that good (see WebShop's `settle_for`)."""
        ...


def steps_block(env: Any) -> bool:
    """Whether the env's reset/step wait on something outside Python (sandboxed processes, a verifier): an
    env says so with a true class attribute `steps_block` (on the unwrapped env). Async episode loops then run
    its reset/step in a worker thread, so `concurrency` episodes of it really overlap."""
    inner = getattr(env, "unwrapped", env)
    return bool(getattr(inner, "steps_block", False))


@runtime_checkable
class HasTasks(Protocol):
    """An env that plays a set of named tasks chosen by the episode's seed (a dataset): runs can then ask for
    `trials` per task and report per task (`agents.collect.tasks`)."""

    @classmethod
    def tasks_of(cls, kwargs: Mapping[str, Any]) -> list[str]:
        """Every task an env made with these constructor kwargs would play, in seed order, answered by the class
        without making the env (no sandbox): what `trials=` counts. TypeError for a kwarg the env does not take."""
        ...

    def task_names(self) -> list[str]:
        """Every task the env plays, in seed order (episode seed s plays task s % len)."""
        ...

    def task_for_seed(self, seed: int) -> str:
        """The task an episode with this seed plays."""
        ...
