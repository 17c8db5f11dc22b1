"""Which envs this server may build, and building them: the project's registry plus configured extras.

Clients name an env by short name or gymnasium id; anything else is refused (a server must not
instantiate arbitrary classes on request). A client's kwargs pass through the env's allow-list
(`entries.py`) before they meet the operator's defaults, so data locations stay the operator's.
Heavy resources are shared because the envs share them per process (e.g. `envs.webshop.resources`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

import envs
from envs.server.entries import ENTRIES, KwargsRejected, ServerEntry, client_kwargs, operator_kwargs, reset_options


class UnknownEnv(LookupError):
    """A client named an env this server does not serve (404; the message lists the servable ones)."""

    pass


class BadEnvArguments(ValueError):
    """A client's kwargs or reset options are not allowed or malformed (422, the field named)."""

    pass


@dataclass(frozen=True)
class EnvCatalog:
    """What this server can build: the project's envs plus the operator's, with the operator's default kwargs and the client allow-lists."""

    names: dict[str, str]  # short name -> gymnasium id
    defaults: dict[str, dict[str, Any]]  # short name -> the operator's default kwargs (checked, converted)
    entries: dict[str, ServerEntry]  # short name -> what a client may set
    max_num_products: int = 100_000

    @classmethod
    def build(
        cls,
        extra: dict[str, str],
        defaults: dict[str, dict[str, Any]],
        imports: list[str],
        client_keys: dict[str, list[str]] | None = None,
        max_num_products: int = 100_000,
    ) -> EnvCatalog:
        """Build the catalog from the server config (extra envs registered, imports done, operator kwargs checked)."""
        for module in imports:
            importlib.import_module(module)
        names = {name: env_id for name, (env_id, _) in envs.ENVS.items()}
        for name, spec in extra.items():
            env_id, _, entry = spec.partition("@")
            if entry and env_id not in gym.registry:
                gym.register(id=env_id, entry_point=entry)
            if env_id not in gym.registry:
                raise ValueError(
                    f"extra env {name}={spec!r}: {env_id!r} is not registered; use {name}=<id>@module:Class"
                )
            names[name] = env_id
        unknown = set(defaults) - set(names)
        if unknown:
            raise ValueError(f"default kwargs given for unknown env(s) {sorted(unknown)}; servable: {sorted(names)}")
        client_keys = client_keys or {}
        for name in client_keys:
            if name not in names:
                raise ValueError(f"--client-kwargs given for unknown env {name!r}; servable: {sorted(names)}")
            if name in ENTRIES:
                raise ValueError(
                    f"--client-kwargs {name}: the project's envs have a fixed allow-list "
                    f"({', '.join(ENTRIES[name].allowed())})"
                )
        entries = {n: ENTRIES.get(n) or ServerEntry(None, extra_keys=tuple(client_keys.get(n, ()))) for n in names}
        checked = {n: operator_kwargs(entries[n], n, kw) for n, kw in defaults.items()}
        return cls(names, checked, entries, max_num_products)

    def resolve(self, env: str) -> tuple[str, str]:
        """(short name, gymnasium id) for a short name or an id."""
        if env in self.names:
            return env, self.names[env]
        for name, env_id in self.names.items():
            if env_id == env:
                return name, env_id
        raise UnknownEnv(
            f"unknown env {env!r}; this server serves: "
            + ", ".join(f"{n} ({i})" for n, i in sorted(self.names.items()))
        )

    def client_kwargs(self, env: str, kwargs: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
        """Validate a client's kwargs (cheap, on the event loop) before a slot or a thread is taken."""
        name, env_id = self.resolve(env)
        try:
            return name, env_id, client_kwargs(self.entries[name], name, kwargs, self.max_num_products)
        except KwargsRejected as e:
            raise BadEnvArguments(str(e)) from e

    def reset_options(self, name: str, options: dict[str, Any] | None) -> dict[str, Any] | None:
        """Validate a client's reset options for env `name` (422 on anything not allowed)."""
        try:
            return reset_options(self.entries[name], name, options)
        except KwargsRejected as e:
            raise BadEnvArguments(str(e)) from e

    def make(self, env: str, kwargs: dict[str, Any], trusted: bool = False) -> tuple[str, str, dict[str, Any], gym.Env]:
        """Build env `env`; `kwargs` are a client's unless `trusted` (already validated or the operator's)."""
        if trusted:
            name, env_id = self.resolve(env)
        else:
            name, env_id, kwargs = self.client_kwargs(env, kwargs)
        merged = {**self.defaults.get(name, {}), **kwargs}
        try:
            made = gym.make(env_id, **merged)
        except (TypeError, ValueError, OverflowError) as e:  # includes pydantic's ValidationError
            raise BadEnvArguments(f"bad kwargs for env {name!r}: {e}") from e
        return name, env_id, merged, made
