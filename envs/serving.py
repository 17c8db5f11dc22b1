"""What an env declares for serving: the constructor kwargs and reset options a *client* may set, and the
operator-only data paths. Each env registers one `ServerEntry` with its spec (`register_env(server=...)`);
the env server (`envs/server/entries.py`) validates a client's request against it.

Why an allow-list: constructor kwargs reach `gymnasium.make` in the server process, so a client
that could name `catalog_path` or `dataset_path` could make the server open any file (and grow
without bound on `/dev/zero`). Data locations and anything else the operator decides come only
from `--env-kwargs`; a client may tune what changes an episode, within bounds that keep memory
bounded. Each model forbids unknown keys, so the 422 names the key; `allowed()` lists the keys
that would have been accepted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class ClientKwargs(BaseModel):
    """Base of every env's client kwargs: unknown keys are refused, values validated strictly."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # gymnasium.make's own kwarg: the TimeLimit the env is wrapped in (every env registers a default)
    max_episode_steps: int | None = Field(None, ge=1, le=10_000)

    def to_env(self) -> dict[str, Any]:
        """The kwargs the client set (not the defaults), in the form the env constructor takes."""
        return self.model_dump(exclude_unset=True)


class ResetOptions(BaseModel):
    """Reset options of an env without a model of its own: any JSON object, passed through."""

    model_config = ConfigDict(extra="allow", frozen=True)

    def to_env(self) -> dict[str, Any]:
        """The options as the env's reset takes them."""
        return self.model_dump(exclude_unset=True)


@dataclass(frozen=True)
class PathKwarg:
    """An operator-only kwarg naming a file or directory; checked at start-up, never taken from a client."""

    name: str
    kind: Literal["file", "dir"]
    must_hold: tuple[str, ...] = ()  # files a directory must contain


@dataclass(frozen=True)
class ServerEntry:
    """One env's server policy: client kwargs, reset options and the operator-only path kwargs."""

    client_kwargs: type[ClientKwargs] | None  # None: any key in `extra_keys` (JSON scalars), nothing else
    reset_options: type[ResetOptions] = ResetOptions
    paths: tuple[PathKwarg, ...] = ()
    extra_keys: tuple[str, ...] = field(default=())

    def allowed(self) -> list[str]:
        """The kwargs a client may set, for error messages."""
        if self.client_kwargs is not None:
            return sorted(self.client_kwargs.model_fields)
        return sorted(self.extra_keys)
