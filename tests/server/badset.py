"""A fixed set of client mistakes and attacks on the env server; none may answer 5xx.

Run as a script against any server to print the status table (for before/after notes):
    python -m tests.server.badset http://127.0.0.1:8000
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass(frozen=True)
class Bad:
    name: str
    method: str
    path: str  # "{ws}" / "{ft}": a reset WebShop / FaultTree session id
    body: Any = None  # JSON-able, or bytes sent as-is
    expect: int = 422
    risky: bool = False  # too costly to send to an unhardened server (builds a huge catalog)


def _create(env: str, **kwargs: Any) -> dict:
    return {"env": env, "kwargs": kwargs}


BAD: list[Bad] = [
    Bad("webshop catalog_path=/etc/passwd", "POST", "/sessions", _create("webshop", catalog_path="/etc/passwd")),
    Bad("webshop catalog_path missing", "POST", "/sessions", _create("webshop", catalog_path="/nonexistent/x.json")),
    Bad("webshop catalog_path=/tmp (dir)", "POST", "/sessions", _create("webshop", catalog_path="/tmp")),
    Bad("webshop attributes_path", "POST", "/sessions", _create("webshop", attributes_path="/etc/hostname")),
    Bad("webshop human_goals_path=/dev/zero", "POST", "/sessions", _create("webshop", human_goals_path="/dev/zero")),
    Bad("faulttree dataset_path=/etc", "POST", "/sessions", _create("faulttree", dataset_path="/etc")),
    Bad("faulttree dataset_path missing", "POST", "/sessions", _create("faulttree", dataset_path="/nonexistent")),
    Bad("webshop num_products=5,000,000", "POST", "/sessions", _create("webshop", num_products=5_000_000), risky=True),
    Bad(
        "webshop num_products=Infinity",
        "POST",
        "/sessions",
        b'{"env": "webshop", "kwargs": {"num_products": Infinity}}',
    ),
    Bad("webshop catalog_seed=-1", "POST", "/sessions", _create("webshop", catalog_seed=-1)),
    Bad("webshop search_backend", "POST", "/sessions", _create("webshop", search_backend="bm25s")),
    Bad("faulttree expert='fast'", "POST", "/sessions", _create("faulttree", expert="fast")),
    Bad("faulttree expert={confidence:'x'}", "POST", "/sessions", _create("faulttree", expert={"confidence": "x"})),
    Bad("faulttree max_turns=0", "POST", "/sessions", _create("faulttree", max_turns=0)),
    Bad("faulttree domain=nope", "POST", "/sessions", _create("faulttree", domain="nope")),
    Bad("faulttree rephraser", "POST", "/sessions", _create("faulttree", rephraser="x")),
    Bad("webshop reset seed=-1", "POST", "/sessions/{ws}/reset", {"seed": -1}),
    Bad("faulttree reset seed=-1", "POST", "/sessions/{ft}/reset", {"seed": -1}),
    Bad("webshop reset seed=Infinity", "POST", "/sessions/{ws}/reset", b'{"seed": Infinity}'),
    Bad("webshop goal_index=Infinity", "POST", "/sessions/{ws}/reset", b'{"options": {"goal_index": Infinity}}'),
    Bad("webshop goal_index=NaN", "POST", "/sessions/{ws}/reset", b'{"options": {"goal_index": NaN}}'),
    Bad("webshop goal_index=1e400", "POST", "/sessions/{ws}/reset", b'{"options": {"goal_index": 1e400}}'),
    Bad("webshop goal_index=10**30", "POST", "/sessions/{ws}/reset", {"options": {"goal_index": 10**30}}),
    Bad("webshop goal_index=-1", "POST", "/sessions/{ws}/reset", {"options": {"goal_index": -1}}),
    Bad("webshop goal_index='x'", "POST", "/sessions/{ws}/reset", {"options": {"goal_index": "x"}}),
    Bad("faulttree entry_index=Infinity", "POST", "/sessions/{ft}/reset", b'{"options": {"entry_index": Infinity}}'),
    Bad("faulttree entry_index=10**30", "POST", "/sessions/{ft}/reset", {"options": {"entry_index": 10**30}}),
    Bad("faulttree entry_index=-1", "POST", "/sessions/{ft}/reset", {"options": {"entry_index": -1}}),
    Bad("agentgym reset session_id=-1", "POST", "/reset", b'{"env_idx": {idx}, "session_id": -1}'),
    Bad("agentgym reset session_id=Infinity", "POST", "/reset", b'{"env_idx": {idx}, "session_id": Infinity}'),
    Bad("invalid UTF-8 body", "POST", "/sessions", b'{"env": "web\xffshop"}'),
    Bad("invalid UTF-8 in step", "POST", "/sessions/{ws}/step", b'{"action": "search[\xc3\x28]"}'),
    Bad("truncated JSON", "POST", "/sessions", b'{"env": "webshop",'),
]


def _send(c: httpx.Client, bad: Bad, ids: dict[str, str]) -> int:
    path = bad.path.format(**ids)
    if isinstance(bad.body, bytes):
        body = bad.body.replace(b"{idx}", ids["idx"].encode())
        r = c.request(bad.method, path, content=body, headers={"content-type": "application/json"})
    else:
        r = c.request(bad.method, path, json=bad.body)
    if r.status_code in (200, 201) and bad.path == "/sessions":
        sid = r.json().get("session_id")
        if sid:
            c.delete(f"/sessions/{sid}")
    return r.status_code


def run(url: str, token: str | None = None, risky: bool = True) -> list[tuple[str, int, str]]:
    """Send every bad request; [(name, status, detail-or-error)]. A request that errors counts as 599."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    headers["Connection"] = "close"  # one connection per request: a 500 that drops its connection spoils no other row
    out = []
    with httpx.Client(base_url=url, timeout=60, headers=headers) as c:
        ids = {}
        for key, env in (("ws", "webshop"), ("ft", "faulttree")):
            ids[key] = c.post("/sessions", json={"env": env}).json()["session_id"]
            c.post(f"/sessions/{ids[key]}/reset", json={"seed": 0})
        ids["idx"] = str(c.post("/create").json())
        for bad in BAD:
            if bad.risky and not risky:
                out.append((bad.name, 0, "not sent"))
                continue
            try:
                out.append((bad.name, _send(c, bad, ids), ""))
            except httpx.HTTPError as e:
                out.append((bad.name, 599, f"{type(e).__name__}: {e}"))
        for key in ("ws", "ft"):
            c.delete(f"/sessions/{ids[key]}")
        c.post("/close", json={"env_idx": int(ids["idx"])})
    return out


if __name__ == "__main__":
    rows = run(sys.argv[1], sys.argv[2] or None if len(sys.argv) > 2 else None, risky="--safe" not in sys.argv)
    for name, code, err in rows:
        print(f"{code}\t{name}\t{err}")
    if len(sys.argv) > 3 and sys.argv[3] != "--safe":
        with open(sys.argv[3], "w") as f:
            json.dump({name: code for name, code, _ in rows}, f, indent=1)
