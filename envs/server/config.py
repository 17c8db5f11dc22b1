"""Server options, validated once: what a deployment may tune and the safety rules between them."""

from __future__ import annotations

import ipaddress
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    token: str | None = None  # bearer token; required when `host` is not loopback
    max_sessions: int = Field(256, ge=1)
    idle_timeout_s: float = Field(600.0, gt=0)  # a session unused this long is closed
    max_action_chars: int = Field(8192, ge=1)  # transport limit; envs judge shorter actions themselves
    max_body_bytes: int = Field(1 << 20, ge=1024)
    env_threads: int = Field(8, ge=1)  # worker threads running env code (the event loop never does)
    # env name -> default constructor kwargs (a client's kwargs override them)
    env_kwargs: dict[str, dict[str, Any]] = Field(default_factory=dict)
    # extra servable envs: name -> gymnasium id, or "id@module:Class" to register it too
    extra_envs: dict[str, str] = Field(default_factory=dict)
    imports: list[str] = Field(default_factory=list)  # modules to import first (they may register envs)
    preload: list[str] = Field(default_factory=list)  # envs built once at start-up so shared resources are warm
    agentgym_env: str | None = "webshop"  # env behind the AgentGym-compatible routes; None turns them off

    @model_validator(mode="after")
    def _token_off_loopback(self) -> "ServerConfig":
        if not is_loopback(self.host) and not self.token:
            raise ValueError(f"binding to {self.host!r} (not loopback) requires a bearer token: pass --token or set "
                             "AGENTSIM_SERVER_TOKEN")
        return self
