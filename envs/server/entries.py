"""Per-env server entries, validated: each env declares its `ServerEntry` (`envs/serving.py`) when it registers.

Why an allow-list: constructor kwargs reach `gymnasium.make` in the server process, so a client
that could name `catalog_path` or `dataset_path` could make the server open any file (and grow
without bound on `/dev/zero`). Data locations and anything else the operator decides come only
from `--env-kwargs`; a client may tune what changes an episode, within bounds that keep memory
bounded (`num_products <= --max-num-products`). Each model forbids unknown keys, so the 422 names
the key; `allowed()` lists the keys that would have been accepted.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from envs.registry import ENV_REGISTRY
from envs.serving import ClientKwargs, PathKwarg, ResetOptions, ServerEntry

__all__ = ["ENTRIES", "ClientKwargs", "KwargsRejected", "PathKwarg", "ResetOptions", "ServerEntry"]


class _Entries(Mapping[str, ServerEntry]):
    """The project's and plugins' server entries by env name, read from the env registry (a view)."""

    def _all(self) -> dict[str, ServerEntry]:
        return {s.name: s.server for s in ENV_REGISTRY.specs() if s.server is not None}

    def __getitem__(self, name: str) -> ServerEntry:
        return self._all()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


ENTRIES: Mapping[str, ServerEntry] = _Entries()


class KwargsRejected(ValueError):
    """A client's kwargs or options are not allowed or malformed; the message names the field."""


def _describe(e: ValidationError, what: str, allowed: list[str]) -> str:
    parts = []
    for err in e.errors():
        loc = ".".join(str(x) for x in err.get("loc", ())) or "(body)"
        if err.get("type") == "extra_forbidden":
            parts.append(
                f"{what} {loc!r} may not be set by a client (allowed: {', '.join(allowed) or 'none'}; "
                "data locations and other server settings come from the operator's --env-kwargs)"
            )
        else:
            parts.append(f"{what} {loc!r}: {err.get('msg', 'invalid').removeprefix('Value error, ')}")
    return "; ".join(parts)


_SCALAR = (str, int, float, bool, type(None))


def client_kwargs(entry: ServerEntry, name: str, given: dict[str, Any], max_num_products: int) -> dict[str, Any]:
    """Validate a client's kwargs for env `name`: the allow-listed keys only, values in range."""
    if entry.client_kwargs is None:
        bad = sorted(set(given) - set(entry.extra_keys))
        if bad:
            raise KwargsRejected(
                f"kwarg {bad[0]!r} may not be set by a client for env {name!r} (allowed: "
                f"{', '.join(entry.allowed()) or 'none'}; the operator allows more with --client-kwargs)"
            )
        for k, v in given.items():
            if (
                not isinstance(v, _SCALAR)
                or (isinstance(v, str) and len(v) > 1000)
                or (isinstance(v, float) and not math.isfinite(v))
            ):
                raise KwargsRejected(
                    f"kwarg {k!r} for env {name!r} must be a JSON scalar (a finite number, a "
                    "boolean, null, or a string up to 1,000 chars)"
                )
        return dict(given)
    try:
        model = entry.client_kwargs.model_validate(given, context={"max_num_products": max_num_products})
    except ValidationError as e:
        raise KwargsRejected(f"bad kwargs for env {name!r}: " + _describe(e, "kwarg", entry.allowed())) from e
    return model.to_env()


def reset_options(entry: ServerEntry, name: str, given: dict[str, Any] | None) -> dict[str, Any] | None:
    """Validate a client's reset options against the env's entry; the message names the field."""
    if given is None:
        return None
    try:
        return entry.reset_options.model_validate(given).to_env()
    except ValidationError as e:
        raise KwargsRejected(f"bad reset options for env {name!r}: " + _describe(e, "option", [])) from e


def check_operator_paths(entry: ServerEntry, name: str, kwargs: dict[str, Any]) -> None:
    """Fail at start-up (not on a client's request) when an operator's data location is wrong."""
    for p in entry.paths:
        value = kwargs.get(p.name)
        if value is None:
            continue
        path = Path(str(value)).expanduser()
        if not path.exists():
            raise ValueError(f"--env-kwargs {name}: {p.name}={str(value)!r} does not exist")
        if p.kind == "file" and not path.is_file():
            raise ValueError(f"--env-kwargs {name}: {p.name}={str(value)!r} is not a regular file")
        if p.kind == "dir":
            if not path.is_dir():
                raise ValueError(f"--env-kwargs {name}: {p.name}={str(value)!r} is not a directory")
            for must in p.must_hold:
                if not (path / must).is_file():
                    raise ValueError(f"--env-kwargs {name}: {p.name}={str(value)!r} holds no {must}")


def operator_kwargs(entry: ServerEntry, name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Check an operator's default kwargs once at start-up; convert nested bodies (e.g. FaultTree `expert`)."""
    check_operator_paths(entry, name, kwargs)
    if entry.client_kwargs is None:
        return dict(kwargs)
    known = {k: v for k, v in kwargs.items() if k in entry.client_kwargs.model_fields}
    try:
        converted = entry.client_kwargs.model_validate(known).to_env()
    except ValidationError as e:
        raise ValueError(f"--env-kwargs {name}: " + _describe(e, "kwarg", entry.allowed())) from e
    return {**kwargs, **converted}
