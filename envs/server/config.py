"""Server options, validated once: what a deployment may tune and the safety rules between them."""

from __future__ import annotations

import ipaddress
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}
MIN_TOKEN_CHARS = 16
TOKEN_HOWTO = 'python -c "import secrets; print(secrets.token_hex(16))"'


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address) is this machine: the one place that decides it."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def token_problem(token: str | None) -> str | None:
    """Why `token` is too weak to guard a server reachable off this machine (None if it is fine)."""
    if token is None or not token.strip():
        return "no token was given (or it is blank)"
    if token != token.strip() or any(c.isspace() for c in token):
        return "the token contains whitespace"
    if len(token) < MIN_TOKEN_CHARS:
        return f"the token has {len(token)} characters; at least {MIN_TOKEN_CHARS} are required"
    return None


class ServerConfig(BaseModel):
    """The operator's settings: where to bind, who may connect, and every limit a client cannot exceed."""

    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    token: str | None = None  # bearer token; required (and strong) when `host` is not loopback
    max_sessions: int = Field(256, ge=1)
    idle_timeout_s: float = Field(600.0, gt=0)  # a session unused this long is closed
    max_action_chars: int = Field(8192, ge=1)  # transport limit; envs judge shorter actions themselves
    max_body_bytes: int = Field(1 << 20, ge=1024)
    env_threads: int = Field(8, ge=1)  # worker threads running env code (the event loop never does)
    # env name -> default constructor kwargs (the operator's; a client may override only allow-listed keys)
    env_kwargs: dict[str, dict[str, Any]] = Field(default_factory=dict)
    # extra servable envs: name -> gymnasium id, or "id@module:Class" to register it too
    extra_envs: dict[str, str] = Field(default_factory=dict)
    # extra env name -> kwargs a client may set for it (JSON scalars only); the project's envs have fixed lists
    client_kwargs: dict[str, list[str]] = Field(default_factory=dict)
    imports: list[str] = Field(default_factory=list)  # modules to import first (they may register envs)
    preload: list[str] = Field(default_factory=list)  # envs built once at start-up so shared resources are warm
    agentgym_env: str | None = "webshop"  # env behind the AgentGym-compatible routes; None turns them off
    # -- resource limits a client cannot exceed
    max_num_products: int = Field(100_000, ge=10)  # largest synthetic WebShop catalog a client may ask for
    catalog_budget_mb: float = Field(1024.0, gt=0)  # bytes of WebShop catalogs kept in memory (LRU beyond it)
    disk_budget_mb: float = Field(2048.0, gt=0)  # bytes of built catalogs + indexes kept on disk (LRU beyond it)
    read_timeout_s: float = Field(30.0, gt=0)  # a request's headers, then its body, must each arrive within this
    keep_alive_s: float = Field(30.0, gt=0)  # idle keep-alive connections are closed after this
    max_connections: int = Field(1024, ge=1)  # concurrent connections + requests; more get 503

    @model_validator(mode="after")
    def _token_off_loopback(self) -> ServerConfig:
        if not is_loopback(self.host):
            why = token_problem(self.token)
            if why is not None:
                raise ValueError(
                    f"binding to {self.host!r} (not loopback) requires a bearer token of real strength, but {why}: pass "
                    f"--token or set AGENTSIM_SERVER_TOKEN to at least {MIN_TOKEN_CHARS} non-whitespace "
                    f"characters, e.g. generate one with: {TOKEN_HOWTO}"
                )
        return self
