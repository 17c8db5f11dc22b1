"""`python -m envs.server [--host 127.0.0.1] [--port 8000] ...`: serve every registered env over HTTP.

Examples:
    python -m envs.server --env-kwargs 'webshop={"num_products": 2000}' --preload webshop
    AGENTSIM_SERVER_TOKEN=$(python -c "import secrets; print(secrets.token_urlsafe(24))") \
        python -m envs.server --host 0.0.0.0
    python -m envs.server --allow-coding      # also serve the coding env (a shell in a sandbox per session)
One process holds all sessions (they share heavy resources), so there is one uvicorn worker.
A bad option exits 2 with one `error: ...` line.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from typing import NoReturn, cast

from fastapi import FastAPI
from pydantic import ValidationError

from envs.server.config import ALLOW_CODING_FLAG, MIN_TOKEN_CHARS, TOKEN_HOWTO, ServerConfig

log = logging.getLogger("envs.server")


def usage_error(message: str) -> NoReturn:
    """One `error: ...` line on stderr and exit code 2 (argparse's code for a bad command line)."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def _pairs(items: list[str], what: str, parse_json: bool) -> dict:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            usage_error(f"{what} must look like NAME=VALUE, got {item!r}")
        try:
            out[name] = json.loads(value) if parse_json else value
        except json.JSONDecodeError as e:
            usage_error(f"{what} {name}: value is not JSON ({e})")
    return out


def parse_args(argv: list[str] | None = None) -> ServerConfig:
    """The command line as a ServerConfig (operator options; exits 2 with a message on a bad one)."""
    p = argparse.ArgumentParser(
        prog="python -m envs.server", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--host", default="127.0.0.1", help="bind address (a non-loopback address needs a token)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument(
        "--token",
        default=os.environ.get("AGENTSIM_SERVER_TOKEN"),
        help="bearer token clients must send (default: $AGENTSIM_SERVER_TOKEN); required off loopback; at least "
        f"{MIN_TOKEN_CHARS} visible ASCII characters with variety, e.g. from: {TOKEN_HOWTO}",
    )
    p.add_argument(
        ALLOW_CODING_FLAG,
        action="store_true",
        help="serve the coding env: every client with the token gets a shell in a sandbox (off by default)",
    )
    p.add_argument("--max-sessions", type=int, default=256)
    p.add_argument("--idle-timeout", type=float, default=600.0, help="seconds before an unused session is closed")
    p.add_argument("--max-action-chars", type=int, default=8192)
    p.add_argument("--max-body-bytes", type=int, default=1 << 20)
    p.add_argument("--env-threads", type=int, default=8, help="worker threads that run env code")
    p.add_argument(
        "--env-kwargs",
        action="append",
        default=[],
        metavar="NAME=JSON",
        help="default constructor kwargs for an env, e.g. 'webshop={\"num_products\": 2000}' (the only "
        "way to set data locations such as catalog_path or dataset_path)",
    )
    p.add_argument(
        "--client-kwargs",
        action="append",
        default=[],
        metavar="NAME=KEY[,KEY...]",
        help="kwargs a client may set for an extra (--env) env; the project's envs have fixed lists",
    )
    p.add_argument(
        "--max-num-products", type=int, default=100_000, help="largest synthetic WebShop catalog a client may ask for"
    )
    p.add_argument(
        "--catalog-budget-mb",
        type=float,
        default=1024.0,
        help="memory for WebShop catalogs; least recently used unused ones are freed beyond it",
    )
    p.add_argument(
        "--disk-budget-mb",
        type=float,
        default=2048.0,
        help="disk for built WebShop catalogs and indexes ($AGENTSIM_CACHE); least recently used unused ones are deleted",
    )
    p.add_argument(
        "--read-timeout",
        type=float,
        default=30.0,
        help="seconds a request's headers, then its body, may each take to arrive; slower ones are "
        "disconnected (a late body gets 408 first)",
    )
    p.add_argument("--keep-alive", type=float, default=30.0, help="seconds an idle keep-alive connection is kept")
    p.add_argument(
        "--max-connections",
        type=int,
        default=1024,
        help="concurrent connections and requests; beyond it requests get 503",
    )
    p.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=ID[@module:Class]",
        help="serve one more gymnasium env under NAME (registering it if an entry point is given)",
    )
    p.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE first (e.g. a package that registers its envs)",
    )
    p.add_argument("--preload", action="append", default=[], metavar="NAME", help="build NAME once at start-up")
    p.add_argument(
        "--agentgym-env",
        default="webshop",
        help="env behind the AgentGym routes: webshop, textcraft or babyai ('none' turns them off)",
    )
    p.add_argument("--log-level", default="INFO")
    a = p.parse_args(argv)
    logging.basicConfig(level=a.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return ServerConfig(
            host=a.host,
            port=a.port,
            token=a.token or None,
            max_sessions=a.max_sessions,
            idle_timeout_s=a.idle_timeout,
            max_action_chars=a.max_action_chars,
            max_body_bytes=a.max_body_bytes,
            env_threads=a.env_threads,
            env_kwargs=_pairs(a.env_kwargs, "--env-kwargs", True),
            extra_envs=_pairs(a.env, "--env", False),
            imports=a.imports,
            preload=a.preload,
            agentgym_env=None if a.agentgym_env.lower() == "none" else a.agentgym_env,
            client_kwargs={
                k: [x.strip() for x in v.split(",") if x.strip()]
                for k, v in _pairs(a.client_kwargs, "--client-kwargs", False).items()
            },
            max_num_products=a.max_num_products,
            catalog_budget_mb=a.catalog_budget_mb,
            disk_budget_mb=a.disk_budget_mb,
            read_timeout_s=a.read_timeout,
            keep_alive_s=a.keep_alive,
            max_connections=a.max_connections,
            allow_coding=a.allow_coding,
        )
    except ValidationError as e:
        usage_error("; ".join(err["msg"].removeprefix("Value error, ") for err in e.errors()))


def main(argv: list[str] | None = None) -> None:
    """`python -m envs.server`: validate the config, then serve until stopped."""
    import uvicorn

    from envs.server.app import build_app
    from envs.server.transport import http_protocol

    cfg = parse_args(argv)
    try:
        app = build_app(cfg)
    except (ValueError, LookupError, ImportError) as e:
        usage_error(str(e))
    log.info(
        "serving %s on http://%s:%d (max %d sessions, idle timeout %g s, read timeout %g s, max %d "
        "connections, catalog budget %g MB%s)",
        ", ".join(sorted(cast(FastAPI, app.app).state.service.servable())),
        cfg.host,
        cfg.port,
        cfg.max_sessions,
        cfg.idle_timeout_s,
        cfg.read_timeout_s,
        cfg.max_connections,
        cfg.catalog_budget_mb,
        ", token required" if cfg.token else "",
    )
    uvicorn.run(
        app,
        host=cfg.host,
        port=cfg.port,
        log_level="warning",
        access_log=False,
        limit_concurrency=cfg.max_connections,
        timeout_keep_alive=cfg.keep_alive_s,  # type: ignore[arg-type]  # a float works (call_later)
        http=http_protocol(cfg.read_timeout_s),
        ws_max_size=cfg.max_body_bytes,  # OpenEnv's WebSocket: a frame over the body limit closes the socket (1009)
    )


if __name__ == "__main__":
    main()
