"""`python -m envs.webshop.web`: the shop as a web page a person can use.

The page is the env's own `html` observation (same state machine, same renderer), wrapped in
a goal bar and posted back to `/s/{session}/act`: one implementation, two views. Each browser
session gets its own `WebShopEnv`; all of them share the process-wide catalog and index.
"""

from __future__ import annotations

import argparse
import html
import logging
import secrets
import threading
from collections import OrderedDict
from typing import Any, cast
from urllib.parse import parse_qs

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from gymnasium.wrappers import TimeLimit

from .catalog import Split
from .env import WebShopEnv
from .render import render_html

STEP_LIMIT = 100  # steps a person gets on the page (Gymnasium's TimeLimit, as in the contract)
log = logging.getLogger(__name__)

CSS = """
body{font-family:system-ui,sans-serif;max-width:960px;margin:1.5rem auto;padding:0 1rem;color:#222}
header{background:#232f3e;color:#fff;padding:.7rem 1rem;border-radius:6px}
header a{color:#febd69} .instruction{background:#fff8e6;border:1px solid #f0c36d;padding:.6rem;border-radius:6px}
.btn{margin:.15rem;padding:.35rem .7rem;border:1px solid #888;border-radius:4px;background:#f3f3f3;cursor:pointer}
.btn.chosen{background:#febd69;border-color:#c7511f;font-weight:bold} .title{margin:.6rem 0 .2rem}
#search-input{width:60%;padding:.4rem} .error{color:#b00020;border:1px solid #b00020;padding:.5rem;border-radius:4px}
table.breakdown{border-collapse:collapse;margin-top:1rem} table.breakdown th,table.breakdown td{border:1px solid #ccc;padding:.3rem .6rem;text-align:left}
.goal-list li{margin:.3rem 0}
"""


def _page(title: str, body: str) -> HTMLResponse:
    return HTMLResponse(
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{CSS}</style></head><body><header><b>WebShop</b> · <a href='/'>pick a goal</a></header>"
        f"{body}</body></html>"
    )


class Sessions:
    """Live envs by session id, oldest dropped beyond `limit` (a person's tab, not a database)."""

    def __init__(self, limit: int = 256) -> None:
        self._envs: OrderedDict[str, tuple[TimeLimit, dict[str, Any]]] = OrderedDict()
        self._limit = limit
        self._lock = threading.Lock()

    def add(self, env: TimeLimit) -> str:
        sid = secrets.token_urlsafe(12)
        with self._lock:
            self._envs[sid] = (env, {})
            while len(self._envs) > self._limit:
                self._envs.popitem(last=False)
        return sid

    def get(self, sid: str) -> tuple[TimeLimit, dict[str, Any]]:
        with self._lock:
            if sid not in self._envs:
                raise HTTPException(404, "unknown or expired session; pick a goal again")
            self._envs.move_to_end(sid)
            return self._envs[sid]


async def _form(request: Request) -> dict[str, str]:
    body = (await request.body()).decode("utf-8", errors="replace")
    return {k: v[0] for k, v in parse_qs(body, keep_blank_values=True).items()}


def create_app(**env_kwargs: Any) -> FastAPI:
    """The web app; `env_kwargs` go to every `WebShopEnv` (e.g. num_products, split)."""
    max_steps = int(env_kwargs.pop("max_steps", STEP_LIMIT))
    env_kwargs = {**env_kwargs, "observation_mode": "html"}
    app = FastAPI(title="WebShop")
    sessions = Sessions()
    probe = WebShopEnv(**{**env_kwargs, "split": env_kwargs.get("split", "test")})

    @app.get("/", response_class=HTMLResponse)
    def home(split: str = "test", start: int = 0) -> HTMLResponse:
        if split not in ("train", "eval", "test"):
            raise HTTPException(400, "split must be train, eval or test")
        goals = probe.catalog.goals(cast(Split, split))  # checked just above
        start = max(0, min(start, max(0, len(goals) - 20)))
        items = "".join(
            f"<li><form method='post' action='/start' style='display:inline'>"
            f"<input type='hidden' name='split' value='{split}'><input type='hidden' name='goal_index' value='{i}'>"
            f"<button class='btn pick-goal' type='submit' id='goal-{i}'>Shop</button></form> #{i}: "
            f"{html.escape(goals[i].instruction)}</li>"
            for i in range(start, min(len(goals), start + 20))
        )
        tabs = " · ".join(f"<a href='/?split={s}'>{s}</a>" for s in ("train", "eval", "test"))
        nav = f"<a href='/?split={split}&start={start + 20}'>more goals</a>"
        return _page(
            "WebShop — pick a goal",
            f"<h2>Pick a goal ({split}, {len(goals)} goals)</h2><p>{tabs}</p><ol class='goal-list'>{items}</ol>{nav}",
        )

    @app.post("/start")
    async def start(request: Request) -> RedirectResponse:
        form = await _form(request)
        split = form.get("split", "test")
        if split not in ("train", "eval", "test"):
            raise HTTPException(400, "split must be train, eval or test")
        env = TimeLimit(WebShopEnv(**{**env_kwargs, "split": split}), max_episode_steps=max_steps)
        try:
            goal_index = int(form.get("goal_index", "0"))
            env.reset(options={"goal_index": goal_index})
        except ValueError as e:
            raise HTTPException(400, str(e)) from e
        return RedirectResponse(f"/s/{sessions.add(env)}", status_code=303)

    @app.get("/s/{sid}", response_class=HTMLResponse)
    def show(sid: str) -> HTMLResponse:
        env, meta = sessions.get(sid)
        shop = cast(WebShopEnv, env.unwrapped)
        error = meta.get("error")
        status = f"step {env._elapsed_steps} of {max_steps}"
        if meta.get("truncated"):
            status += " — step limit reached"
        parts = [
            f"<p class='instruction' id='instruction'><b>Instruction:</b> {html.escape(shop.goal.instruction)}</p>",
            f"<p id='status'>{status}</p>",
        ]
        if error:
            parts.append(f"<p class='error' id='error'>{html.escape(error)}</p>")
        parts.append(render_html(shop.view(), form_action=f"/s/{sid}/act", include_instruction=False))
        return _page("WebShop", "".join(parts))

    @app.post("/s/{sid}/act")
    async def act(sid: str, request: Request) -> RedirectResponse:
        env, meta = sessions.get(sid)
        form = await _form(request)
        action = form.get("action", "")
        if action == "search[...]":
            action = f"search[{form.get('query', '')}]"
        _, reward, terminated, truncated, info = env.step(action)
        meta["error"] = info.get("error")
        meta["truncated"] = truncated
        log.info("session %s: %s -> reward %.3f%s", sid, action[:80], reward, " (done)" if terminated else "")
        return RedirectResponse(f"/s/{sid}", status_code=303)

    return app


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Serve the WebShop env as a web page.")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--num-products", type=int, default=10_000)
    ap.add_argument("--catalog-seed", type=int, default=0)
    ap.add_argument("--catalog-path", default=None, help="items_shuffle*.json of the original WebShop")
    ap.add_argument("--attributes-path", default=None, help="items_ins_v2*.json")
    ap.add_argument("--human-goals-path", default=None, help="items_human_ins.json")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    import uvicorn

    app = create_app(
        num_products=args.num_products,
        catalog_seed=args.catalog_seed,
        catalog_path=args.catalog_path,
        attributes_path=args.attributes_path,
        human_goals_path=args.human_goals_path,
    )
    log.info("WebShop at http://%s:%d/", args.host, args.port)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
