"""`python -m envs.server [--host 127.0.0.1] [--port 8000] ...`: serve every registered env over HTTP.

Examples:
    python -m envs.server --env-kwargs 'webshop={"num_products": 2000}' --preload webshop
    AGENTSIM_SERVER_TOKEN=secret python -m envs.server --host 0.0.0.0
One process holds all sessions (they share heavy resources), so there is one uvicorn worker.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys

from pydantic import ValidationError

from envs.server.config import ServerConfig

log = logging.getLogger("envs.server")


def _pairs(items: list[str], what: str, parse_json: bool) -> dict:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise SystemExit(f"error: {what} must look like NAME=VALUE, got {item!r}")
        try:
            out[name] = json.loads(value) if parse_json else value
        except json.JSONDecodeError as e:
            raise SystemExit(f"error: {what} {name}: value is not JSON ({e})") from e
    return out


def parse_args(argv: list[str] | None = None) -> ServerConfig:
    p = argparse.ArgumentParser(prog="python -m envs.server", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1", help="bind address (a non-loopback address needs a token)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--token", default=os.environ.get("AGENTSIM_SERVER_TOKEN"),
                   help="bearer token clients must send (default: $AGENTSIM_SERVER_TOKEN)")
    p.add_argument("--max-sessions", type=int, default=256)
    p.add_argument("--idle-timeout", type=float, default=600.0, help="seconds before an unused session is closed")
    p.add_argument("--max-action-chars", type=int, default=8192)
    p.add_argument("--max-body-bytes", type=int, default=1 << 20)
    p.add_argument("--env-threads", type=int, default=8, help="worker threads that run env code")
    p.add_argument("--env-kwargs", action="append", default=[], metavar="NAME=JSON",
                   help="default constructor kwargs for an env, e.g. 'webshop={\"num_products\": 2000}'")
    p.add_argument("--env", action="append", default=[], metavar="NAME=ID[@module:Class]",
                   help="serve one more gymnasium env under NAME (registering it if an entry point is given)")
    p.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                   help="import MODULE first (e.g. a package that registers its envs)")
    p.add_argument("--preload", action="append", default=[], metavar="NAME", help="build NAME once at start-up")
    p.add_argument("--agentgym-env", default="webshop", help="env behind the AgentGym routes ('none' turns them off)")
    p.add_argument("--log-level", default="INFO")
    a = p.parse_args(argv)
    logging.basicConfig(level=a.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return ServerConfig(host=a.host, port=a.port, token=a.token or None, max_sessions=a.max_sessions,
                            idle_timeout_s=a.idle_timeout, max_action_chars=a.max_action_chars,
                            max_body_bytes=a.max_body_bytes, env_threads=a.env_threads,
                            env_kwargs=_pairs(a.env_kwargs, "--env-kwargs", True),
                            extra_envs=_pairs(a.env, "--env", False), imports=a.imports, preload=a.preload,
                            agentgym_env=None if a.agentgym_env.lower() == "none" else a.agentgym_env)
    except ValidationError as e:
        raise SystemExit("error: " + "; ".join(err["msg"].removeprefix("Value error, ") for err in e.errors())) from e


def main(argv: list[str] | None = None) -> None:
    import uvicorn

    from envs.server.app import build_app

    cfg = parse_args(argv)
    try:
        app = build_app(cfg)
    except (ValueError, LookupError, ImportError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    log.info("serving %s on http://%s:%d (max %d sessions, idle timeout %g s%s)", ", ".join(sorted(
        app.app.state.service.catalog.names)), cfg.host, cfg.port, cfg.max_sessions, cfg.idle_timeout_s,
        ", token required" if cfg.token else "")
    uvicorn.run(app, host=cfg.host, port=cfg.port, log_level="warning", access_log=False, timeout_keep_alive=30)


if __name__ == "__main__":
    main()
