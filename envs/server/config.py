"""Server options, validated once: what a deployment may tune and the safety rules between them."""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from envs.util import is_loopback

MIN_TOKEN_CHARS = 16
MAX_TOKEN_CHARS = 1024  # the strength estimate is quadratic in the length; no real token is longer
MIN_TOKEN_DISTINCT = 6
MIN_TOKEN_BITS = 36.0
MAX_TOKEN_RUN = 5  # the longest run allowed: a repeated character or a step of +-1 ("aaaaa", "12345")
TOKEN_HOWTO = 'python -c "import secrets; print(secrets.token_urlsafe(24))"'
# what the servable coding env is called; serving it hands each client a shell, so the operator must ask
CODING_ENV = "coding"
ALLOW_CODING_FLAG = "--allow-coding"
_CLASSES = (str.islower, str.isupper, str.isdigit)  # the rest of visible ASCII: 32 punctuation characters


def token_bits(token: str) -> float:
    """A guess at how many bits an attacker must search: each character costs log2 of the alphabet its
    classes span, but one that repeats or steps by one from the previous costs 1 bit, and a stretch
    of 3+ characters seen earlier in the token costs only the bits to point back at it."""
    pool = sum(n for cls, n in zip(_CLASSES, (26, 26, 10)) if any(cls(c) for c in token))
    pool += 32 if any(not c.isalnum() for c in token) else 0
    per_char = math.log2(max(pool, 2))
    bits, i = 0.0, 0
    while i < len(token):
        back = _longest_earlier(token, i)
        if back >= 3:
            bits += math.log2(i + 1) + math.log2(back)  # where the copy starts, and how long it is
            i += back
            continue
        bits += 1.0 if i and abs(ord(token[i]) - ord(token[i - 1])) <= 1 else per_char
        i += 1
    return bits


def _longest_earlier(token: str, i: int) -> int:
    """The longest prefix of token[i:] that also starts at an earlier position (overlap allowed)."""
    best = 0
    for j in range(i):
        k = 0
        while i + k < len(token) and token[j + k] == token[i + k]:
            k += 1
        best = max(best, k)
    return best


def _period(token: str) -> int:
    """The shortest p with token == (token[:p] * n)[:len(token)]: how long its repeating unit is."""
    for p in range(1, len(token)):
        if all(token[i] == token[i - p] for i in range(p, len(token))):
            return p
    return len(token)


def _longest_run(token: str) -> str:
    """The longest stretch where each character repeats, or steps by +-1 from, the one before (same step)."""
    best, start, step = token[:1], 0, None
    for i in range(1, len(token)):
        d = ord(token[i]) - ord(token[i - 1])
        if abs(d) <= 1 and (step is None or d == step):
            step = d
        else:
            start, step = (i - 1, d) if abs(d) <= 1 else (i, None)
        if i + 1 - start > len(best):
            best = token[start : i + 1]
    return best


def token_problem(token: str | None) -> str | None:
    """Why `token` is too weak to guard this server (None if it is fine): length, variety and a bits estimate."""
    if token is None or not token.strip():
        return "no token was given (or it is blank)"
    odd = sorted({c for c in token if not ("!" <= c <= "~")})
    if odd:
        shown = ", ".join(f"U+{ord(c):04X}" for c in odd[:3])
        return f"the token has characters that are not visible ASCII ({shown}: spaces, control or Unicode characters)"
    if not MIN_TOKEN_CHARS <= len(token) <= MAX_TOKEN_CHARS:
        return f"the token has {len(token):,} characters; {MIN_TOKEN_CHARS} to {MAX_TOKEN_CHARS:,} are allowed"
    distinct = len(set(token))
    if distinct < MIN_TOKEN_DISTINCT:
        return f"the token has {distinct} distinct characters; at least {MIN_TOKEN_DISTINCT} are required"
    p = _period(token)
    if p <= len(token) // 2:
        return f"the token is {token[:p]!r}... repeated ({len(token) / p:.1f} times)"
    run = _longest_run(token)
    if len(run) > MAX_TOKEN_RUN:
        return f"the token holds a run of {len(run)} characters ({run[:3]!r}...); at most {MAX_TOKEN_RUN} are allowed"
    bits = token_bits(token)
    if bits < MIN_TOKEN_BITS:
        return f"the token has about {bits:.0f} bits of entropy by our estimate; at least {MIN_TOKEN_BITS:.0f} are required"
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

    # serve the coding env, i.e. a shell in a sandbox to every client that holds the token (off unless asked)
    allow_coding: bool = False

    @model_validator(mode="after")
    def _token_strong(self) -> ServerConfig:
        rules = (
            f"at least {MIN_TOKEN_CHARS} visible ASCII characters, {MIN_TOKEN_DISTINCT} of them distinct, no "
            f"repetition or run, about {MIN_TOKEN_BITS:.0f} bits; generate one with: {TOKEN_HOWTO}"
        )
        if self.token is not None:
            why = token_problem(self.token)
            if why is not None:
                raise ValueError(f"the bearer token is too weak: {why}. A token needs {rules}")
        elif not is_loopback(self.host):
            raise ValueError(
                f"binding to {self.host!r} (not loopback) requires a bearer token: pass --token or set "
                f"AGENTSIM_SERVER_TOKEN to {rules}"
            )
        return self

    @model_validator(mode="after")
    def _coding_only_when_allowed(self) -> ServerConfig:
        if self.allow_coding:
            return self
        named = [
            where
            for where, names in (
                ("--env-kwargs", list(self.env_kwargs)),
                ("--preload", self.preload),
                ("--agentgym-env", [self.agentgym_env or ""]),
                ("--client-kwargs", list(self.client_kwargs)),
                ("--env", [f"{k}={v}" for k, v in self.extra_envs.items()]),
            )
            if any(names_coding(n) for n in names)
        ]
        if named:
            raise ValueError(
                f"{', '.join(named)} names the coding env, which this server does not serve unless the operator "
                f"passes {ALLOW_CODING_FLAG} (it gives every client with the token a shell in a sandbox)"
            )
        return self


def names_coding(text: str) -> bool:
    """Whether an option value names the coding env: its short name, its gymnasium id or its module."""
    from envs import ENVS

    coding_id, entry = ENVS[CODING_ENV]
    return text.partition("=")[0] == CODING_ENV or any(x in text for x in (coding_id, entry.partition(":")[0]))
