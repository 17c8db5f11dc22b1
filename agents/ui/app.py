"""The UI's FastAPI app: read-only GET routes over one runs folder, HTML pages and two small JSON endpoints.

Every request names runs and episodes by query parameters, resolved by `RunsRoot` (which refuses
anything outside the folder); a name that is not there is a 404 that says so, a malformed
parameter a 400 that says what is allowed. Assets are the package's own files: no CDN.
"""

from __future__ import annotations

import logging
import sqlite3
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from agents.ui.html import error_page, h, page, table, url
from agents.ui.pages_compare import compare_page
from agents.ui.pages_episode import episode_page
from agents.ui.pages_runs import EpisodeFilter, run_page, run_totals, runs_page
from agents.ui.pages_society import rounds_played, society_page, states
from agents.ui.runs import TRAJECTORIES, Indexing, NotFound, RunsRoot

log = logging.getLogger(__name__)

STATIC = {"ui.css": "text/css; charset=utf-8", "ui.js": "text/javascript; charset=utf-8"}
LIVE_ROWS = 50  # newest episodes the live page lists, and the most one poll returns
SECURITY_HEADERS = {
    "content-security-policy": "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
    "script-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",  # a ?token= never leaks in a Referer
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}


def _wants_json(request: Request) -> bool:
    return request.url.path.startswith("/api/")


def _error(request: Request, status: int, message: str) -> Response:
    if _wants_json(request):
        return JSONResponse({"detail": message}, status_code=status, headers=SECURITY_HEADERS)
    return HTMLResponse(error_page(status, message), status_code=status, headers=SECURITY_HEADERS)


def optional_int(name: str, value: str) -> int | None:
    """A filter field of a form: empty means no filter, else a whole number."""
    if not value.strip():
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name}={value[:40]!r} is not a whole number (leave it empty for any)") from None


def create_app(runs_dir: str | Path) -> FastAPI:
    """The app serving `runs_dir` (read-only; indexes are written beside stores, or in a temp dir)."""
    root = RunsRoot(runs_dir)
    app = FastAPI(title="agentsim runs", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.root = root

    @app.exception_handler(NotFound)
    async def not_found(request: Request, e: NotFound) -> Response:
        return _error(request, 404, str(e))

    @app.exception_handler(ValueError)
    async def bad_value(request: Request, e: ValueError) -> Response:
        return _error(request, 400, str(e))

    @app.exception_handler(Indexing)
    async def indexing(request: Request, e: Indexing) -> Response:
        if _wants_json(request):
            body = {"detail": str(e), "indexing": {"run": e.run, "done_bytes": e.done, "total_bytes": e.total}}
            return JSONResponse(body, status_code=202, headers=SECURITY_HEADERS)
        text = page("indexing…", f"<p class='stats' id='indexing'>{h(str(e))}</p>", reload_s=2)
        return HTMLResponse(text, status_code=202, headers=SECURITY_HEADERS)

    @app.exception_handler(sqlite3.DatabaseError)
    async def unreadable_db(request: Request, e: sqlite3.DatabaseError) -> Response:
        if isinstance(e, sqlite3.OperationalError) and "locked" in str(e):
            return _error(request, 503, "the run's database is busy (a run is writing it); try again in a moment")
        return _error(request, 422, f"a database of this run could not be read ({type(e).__name__}: {str(e)[:120]})")

    @app.exception_handler(RequestValidationError)
    async def bad_params(request: Request, e: RequestValidationError) -> Response:
        parts = [f"{'.'.join(str(x) for x in err['loc'][1:])}: {err['msg']}" for err in e.errors()]
        return _error(request, 400, "bad query parameters: " + "; ".join(parts))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, e: StarletteHTTPException) -> Response:
        msg = str(e.detail)
        if e.status_code == 404:
            msg = f"no page {request.url.path!r}: the pages are /, /run, /episode, /compare, /society, /live"
        elif e.status_code == 405:
            msg = "this UI is read-only: only GET requests are answered"
        return _error(request, e.status_code, msg)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, e: Exception) -> Response:  # names no server file
        log.exception("error answering %s", request.url.path)
        return _error(request, 500, f"internal error ({type(e).__name__}); the server log has the details")

    def html(text: str) -> HTMLResponse:
        return HTMLResponse(text, headers=SECURITY_HEADERS)

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/favicon.ico")
    def favicon() -> Response:  # browsers ask for it on every first visit; there is none
        return Response(status_code=204)

    @app.get("/static/{name}")
    def static(name: str) -> Response:
        if name not in STATIC:
            raise NotFound(f"no asset {name!r} (the UI ships {', '.join(STATIC)})")
        data = resources.files("agents.ui").joinpath("static", name).read_bytes()
        return Response(data, media_type=STATIC[name], headers={**SECURITY_HEADERS, "cache-control": "max-age=300"})

    @app.get("/", response_class=HTMLResponse)
    def index() -> HTMLResponse:
        return html(runs_page(root))

    @app.get("/run", response_class=HTMLResponse)
    def run(
        run: str | None = None,
        outcome: str = "all",
        q: str = "",
        seed: str = "",
        min_steps: str = "",
        max_steps: str = "",
        sort: str = "file",
        page_no: int = Query(1, alias="page"),
    ) -> HTMLResponse:
        ints = {k: optional_int(k, v) for k, v in (("seed", seed), ("min_steps", min_steps), ("max_steps", max_steps))}
        f = EpisodeFilter(outcome, q, ints["seed"], ints["min_steps"], ints["max_steps"], sort, page_no)
        return html(run_page(root, root.run(run), f))

    @app.get("/episode", response_class=HTMLResponse)
    def episode(run: str | None = None, ep: str | None = None, step: int | None = None) -> HTMLResponse:
        return html(episode_page(root, root.run(run), ep, step))

    @app.get("/compare", response_class=HTMLResponse)
    def compare(
        a: str | None = None,
        b: str | None = None,
        which: str = "all",
        page_no: int = Query(1, alias="page"),
        seed: int | None = None,
    ) -> HTMLResponse:
        return html(compare_page(root, root.run(a), root.run(b), which, page_no, seed))

    @app.get("/society", response_class=HTMLResponse)
    def society(run: str | None = None, agent: int | None = None, round: int | None = None) -> HTMLResponse:
        return html(society_page(root, root.run(run), agent, round))

    @app.get("/api/society/state")
    def society_state(run: str | None = None, round: int = 0) -> JSONResponse:
        return JSONResponse(states(root.run(run), round), headers=SECURITY_HEADERS)

    @app.get("/live", response_class=HTMLResponse)
    def live(run: str | None = None) -> HTMLResponse:
        r = root.run(run)
        body = (
            f"<div id='live' data-run='{h(r.name)}' data-after='0'>"
            "<p class='stats'><span id='live-episodes'>0</span> episodes · success <span id='live-success'>–</span> · "
            "mean score <span id='live-score'>–</span> · mean steps <span id='live-steps'>–</span> · "
            "<span id='live-status' class='muted'>connecting…</span></p>"
            + table(["#", "episode", "seed", "outcome", "score", "steps"], [], cls="episodes live")
            + "</div>"
        )
        return html(page(f"{r.name}: live", body, [(r.name, url("/run", run=r.name))]))

    @app.get("/api/progress")
    def progress(run: str | None = None, after: int = Query(0, ge=0)) -> JSONResponse:
        """The run's totals and the episodes after row `after` (the live page polls this)."""
        r = root.run(run)
        rounds = rounds_played(r)
        if r.file(TRAJECTORIES) is None:
            body0 = {"episodes": 0, "rows": [], "store_bytes": 0, "indexed_bytes": 0, "rounds": rounds}
            return JSONResponse(body0, headers=SECURITY_HEADERS)
        idx = root.index(r)
        state = idx.refresh()
        totals = run_totals(root, r)
        rows = idx.query(
            "SELECT row, episode_id, seed, success, reward, steps FROM episodes WHERE row > ? ORDER BY row DESC LIMIT ?",
            (after, LIVE_ROWS),
        )
        for x in rows:
            x["href"] = url("/episode", run=r.name, ep=x["episode_id"]).replace("&amp;", "&")
        body: dict[str, Any] = {
            "episodes": totals["episodes"],
            "success_rate": totals.get("success_rate"),
            "mean_score": totals.get("mean_score"),
            "mean_steps": totals.get("mean_steps"),
            "store_bytes": state.store_bytes,
            "indexed_bytes": state.indexed_bytes,
            "rows": rows[::-1],
            "rounds": rounds,  # a society's last round so far (its store is written at the end)
        }
        return JSONResponse(body, headers=SECURITY_HEADERS)

    return app
