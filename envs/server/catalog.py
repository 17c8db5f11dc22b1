"""Which envs this server may build, and building them: the project's registry plus configured extras.

Clients name an env by short name or gymnasium id; anything else is refused (a server must not
instantiate arbitrary classes on request). Heavy resources are shared because the envs share them
per process (e.g. `envs.webshop.resources`), and every session lives in this one process.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

import envs


class UnknownEnv(LookupError):
    pass


class BadEnvArguments(ValueError):
    pass


@dataclass(frozen=True)
class EnvCatalog:
    names: dict[str, str]  # short name -> gymnasium id
    defaults: dict[str, dict[str, Any]]  # short name -> default kwargs

    @classmethod
    def build(cls, extra: dict[str, str], defaults: dict[str, dict[str, Any]], imports: list[str]) -> "EnvCatalog":
        for module in imports:
            importlib.import_module(module)
        names = {name: env_id for name, (env_id, _) in envs.ENVS.items()}
        for name, spec in extra.items():
            env_id, _, entry = spec.partition("@")
            if entry and env_id not in gym.registry:
                gym.register(id=env_id, entry_point=entry)
            if env_id not in gym.registry:
                raise ValueError(f"extra env {name}={spec!r}: {env_id!r} is not registered; use {name}=<id>@module:Class")
            names[name] = env_id
        unknown = set(defaults) - set(names)
        if unknown:
            raise ValueError(f"default kwargs given for unknown env(s) {sorted(unknown)}; servable: {sorted(names)}")
        return cls(names, defaults)

    def resolve(self, env: str) -> tuple[str, str]:
        """(short name, gymnasium id) for a short name or an id."""
        if env in self.names:
            return env, self.names[env]
        for name, env_id in self.names.items():
            if env_id == env:
                return name, env_id
        raise UnknownEnv(f"unknown env {env!r}; this server serves: "
                         + ", ".join(f"{n} ({i})" for n, i in sorted(self.names.items())))

    def make(self, env: str, kwargs: dict[str, Any]) -> tuple[str, str, dict[str, Any], gym.Env]:
        name, env_id = self.resolve(env)
        merged = {**self.defaults.get(name, {}), **kwargs}
        try:
            made = gym.make(env_id, disable_env_checker=True, **merged)
        except (TypeError, ValueError) as e:  # includes pydantic's ValidationError
            raise BadEnvArguments(f"bad kwargs for env {name!r}: {e}") from e
        return name, env_id, merged, made
