"""`python -m agents.ui runs/ [--host 127.0.0.1] [--port 8765] [--token T]`: browse the runs in a folder.

Read-only. Bound to loopback by default; any other address needs a token (as `envs.server` does):
open `http://HOST:PORT/?token=T` once and the browser keeps it in a cookie.
"""

from __future__ import annotations

import argparse
import os
import sys

from envs.server.config import MIN_TOKEN_CHARS, TOKEN_HOWTO, token_problem
from envs.util import is_loopback

TOKEN_ENV = "AGENTSIM_UI_TOKEN"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m agents.ui", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("runs", help="the folder that holds the runs (e.g. runs/); nothing outside it is served")
    p.add_argument("--host", default="127.0.0.1", help="bind address (a non-loopback address needs --token)")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument(
        "--token",
        default=os.environ.get(TOKEN_ENV),
        help=f"token browsers must present (default: ${TOKEN_ENV}); off loopback at least {MIN_TOKEN_CHARS} "
        f"characters, e.g. from: {TOKEN_HOWTO}",
    )
    a = p.parse_args(argv)
    if not os.path.isdir(a.runs):
        p.error(f"{a.runs} is not a folder: give the folder that holds your runs (e.g. runs/)")
    if not 0 < a.port < 65536:
        p.error(f"--port {a.port} is not a TCP port (1..65535)")
    if not is_loopback(a.host):
        why = token_problem(a.token)
        if why:
            p.error(f"serving on {a.host!r} (not loopback) requires a token, but {why}: pass --token or ${TOKEN_ENV}")
    return a


def build(runs: str, token: str | None):  # noqa: ANN201  (an ASGI app)
    """The app, behind the token check when a token is set."""
    from agents.ui.app import create_app
    from agents.ui.auth import BrowserToken

    app = create_app(runs)
    return BrowserToken(app, token) if token else app


def main(argv: list[str] | None = None) -> None:
    import uvicorn

    a = parse_args(argv)
    app = build(a.runs, a.token)
    print(
        f"agentsim runs UI: http://{a.host}:{a.port}/{'?token=…' if a.token else ''}  (serving {a.runs}, read-only)",
        file=sys.stderr,
    )
    uvicorn.run(app, host=a.host, port=a.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
