"""Generated bad requests to every route of the env server: none may answer 5xx, every 4xx says why.

Where `badset.py` is a fixed list of known mistakes, this draws thousands from a seeded generator:
bodies that are not JSON or nest too deep, wrong types, huge / negative / non-finite numbers,
unknown and odd ids, methods a route does not take, unicode (lone surrogates, zero-width, RTL),
oversize bodies and actions. Valid sessions are opened first so the bad input reaches env code
too; a request that happens to succeed in opening a session closes it again, so the server never
fills up. Run as a script against any server to print the counts (for before/after notes):
    python -m tests.server.fuzz http://127.0.0.1:8000 [count]
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx

ENVS = ["webshop", "faulttree", "corridor", "coding", "agentsim/WebShop-v0", "agentsim/Coding-v0", "chess", ""]
KWARG_KEYS = [
    "num_products", "catalog_seed", "split", "observation_mode", "max_steps", "max_episode_steps", "domain",
    "max_turns", "n_entries", "expert", "task", "backend", "command_timeout", "output_chars", "catalog_path",
    "dataset_path", "length", "__class__", "",
]  # fmt: skip
WEIRD_TEXT = [
    "", " ", "\u200b" * 16, "\u202eevil", "\ud800", "\udfff\ud800", "é" * 3, "😀" * 50, "\x00", "\n\r\t",
    "../../etc/passwd", "%2e%2e%2f", "{}", "null", "search[" + "x" * 300 + "]", "click[\u200b]", "a" * 10_000,
    "search[😀]", "click[< prev]", "submit[]", "bash[ls]", "view[/etc/shadow]",
]  # fmt: skip
NUMBERS: list[Any] = [-1, 0, 1, -(10**30), 10**30, 2**63, 2**64, -(2**63) - 1, 1e308, -1e308, 0.5, -0.0, 10**400]
RAW_BODIES = [
    b"", b"{", b"}", b"[", b"null", b"true", b"42", b'"text"', b"[]", b"{}", b'{"env": "webshop",',
    b'{"env": NaN}', b'{"seed": Infinity}', b'{"seed": -Infinity}', b'{"seed": 1e400}', b'{"a": 1,}',
    b"[" * 100_000 + b"]" * 100_000, b'{"x":' * 50_000 + b"1" + b"}" * 50_000, b"\xff\xfe", b"\xc3\x28",
    b'{"action": "\\ud800"}', b'{"env": "\\u0000"}', b"\x00" * 64, b'{"env": "webshop"}' * 3,
]  # fmt: skip


@dataclass
class Outcome:
    """What the server answered, per status, and every answer that broke a rule."""

    sent: int = 0
    statuses: Counter = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)  # 5xx, a 4xx without a message, a dropped connection


def _value(rng: random.Random, depth: int = 0) -> Any:
    """A JSON-able value of a random kind, often of the wrong type for wherever it lands."""
    kind = rng.randrange(8 if depth < 3 else 5)
    if kind == 0:
        return rng.choice(NUMBERS)
    if kind == 1:
        return rng.choice(WEIRD_TEXT)
    if kind == 2:
        return rng.choice([None, True, False])
    if kind == 3:
        return rng.randint(-5, 50)
    if kind == 4:
        return rng.random() * rng.choice([1, 1e6, -1e6])
    if kind == 5:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 6:
        return {rng.choice(KWARG_KEYS): _value(rng, depth + 1) for _ in range(rng.randrange(4))}
    return {"env": rng.choice(ENVS), "kwargs": _value(rng, depth + 1)}


def _create_body(rng: random.Random) -> Any:
    env = rng.choice(ENVS + [_value(rng)])
    kwargs: Any = {rng.choice(KWARG_KEYS): _value(rng) for _ in range(rng.randrange(1, 4))}
    if env in ("coding", "agentsim/Coding-v0") and rng.random() < 0.3:  # valid but for a backend not here
        return {"env": env, "kwargs": {"task": "example-kv-delete", "backend": "docker"}}
    if env in ("coding", "agentsim/Coding-v0"):  # never a valid bwrap session: that would build a sandbox
        kwargs["task"] = rng.choice(["nope", "../x", "", "\u200b"]) if rng.random() < 0.7 else "example-kv-delete"
        kwargs.setdefault("backend", rng.choice(["docker", "local", "bwrap", 7, None]))
        if kwargs["task"] == "example-kv-delete" and kwargs["backend"] == "bwrap":
            kwargs["backend"] = "docker"
    if env in ("webshop", "agentsim/WebShop-v0"):  # never a new catalog: that is seconds of CPU each
        kwargs["num_products"] = rng.choice([-1, 0, 5, 10**9, "many", None, 1.5])
    body: dict[str, Any] = {"env": env, "kwargs": kwargs if rng.random() < 0.9 else _value(rng)}
    if rng.random() < 0.2:
        body[rng.choice(["extra", "seed", "session_id"])] = _value(rng)
    return body


@dataclass
class Targets:
    """Ids that exist, so bad input reaches the sessions' env code (plus ones that never existed)."""

    sids: list[str]
    idxs: list[int]

    def sid(self, rng: random.Random) -> str:
        if rng.random() < 0.6:
            return rng.choice(self.sids)
        return rng.choice(["nope", "x" * 2000, "%00", "..", "😀", "%2F..%2F", "-1", "0", " ", "%ED%A0%80"])

    def idx(self, rng: random.Random) -> Any:
        if rng.random() < 0.5:
            return rng.choice(self.idxs)
        return rng.choice([-1, 10**30, "zero", "1e5", "", "0x1", 2**63, "😀", "1.5", None])


def _request(rng: random.Random, t: Targets, max_body: int) -> tuple[str, str, dict[str, Any]]:
    """(method, path, httpx keyword arguments) of one generated bad request."""
    sid = t.sid(rng)
    routes: list[tuple[str, str, str]] = [  # (method, path, what the body is)
        ("POST", "/sessions", "create"),
        ("POST", f"/sessions/{sid}/reset", "reset"),
        ("POST", f"/sessions/{sid}/step", "step"),
        ("GET", f"/sessions/{sid}/observation", "none"),
        ("GET", f"/sessions/{sid}/available_actions", "none"),
        ("GET", f"/sessions/{sid}/expert_action", "none"),
        ("DELETE", f"/sessions/{rng.choice(['nope', sid + 'x', '😀'])}", "none"),
        ("POST", f"/sessions/{rng.choice(['nope', sid + 'x'])}/close", "none"),
        ("GET", "/sessions", "none"),
        ("GET", "/envs", "none"),
        ("GET", "/health", "none"),
        ("POST", "/create", "any"),
        ("POST", "/step", "ag_step"),
        ("POST", "/reset", "ag_reset"),
        ("POST", "/close", "ag_close"),
        ("GET", "/observation", "query"),
        ("GET", "/available_actions", "query"),
        ("GET", "/instruction_text", "query"),
        ("GET", "/state", "query"),
        ("GET", "/list_envs", "none"),
        ("GET", rng.choice(["/nope", "/sessions/", "/sessions//step", "/" + "a" * 3000, "/😀", "/docs/../x"]), "none"),
    ]
    method, path, what = rng.choice(routes)
    if rng.random() < 0.1:  # a method the route does not take
        method = rng.choice([m for m in ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS") if m != method])
    kw: dict[str, Any] = {}
    shape = rng.random()
    if shape < 0.25:
        kw["content"] = rng.choice(RAW_BODIES)
        kw["headers"] = {"content-type": rng.choice(["application/json", "text/plain", "multipart/form-data"])}
    elif shape < 0.3:  # oversize: a declared length, or a long action, over the server's limit
        kw["content"] = b'{"action": "' + b"x" * (max_body + rng.randrange(1, 1000)) + b'"}'
        kw["headers"] = {"content-type": "application/json"}
    elif what == "create":
        kw["json"] = _create_body(rng)
    elif what == "reset":
        kw["json"] = rng.choice(
            [
                {"seed": _value(rng)},
                {"options": _value(rng)},
                {"options": {rng.choice(["goal_index", "entry_index", "task"]): _value(rng)}},
                _value(rng),
            ]  # fmt: skip
        )
    elif what == "step":
        kw["json"] = rng.choice([{"action": rng.choice(WEIRD_TEXT)}, {"action": _value(rng)}, _value(rng)])
    elif what == "ag_step":
        kw["json"] = {"env_idx": t.idx(rng), "action": rng.choice(WEIRD_TEXT + [_value(rng)])}
    elif what == "ag_reset":
        kw["json"] = {"env_idx": t.idx(rng), "session_id": _value(rng)}
    elif what in ("ag_close", "any"):
        kw["json"] = {"env_idx": t.idx(rng)} if rng.random() < 0.7 else _value(rng)
    elif what == "query":
        kw["params"] = {"env_idx": t.idx(rng)} if rng.random() < 0.8 else {}
    if "json" in kw:  # encoded here: lone surrogates escaped, NaN / Infinity written as Python's json writes them
        kw["content"] = json.dumps(kw.pop("json")).encode()
        kw["headers"] = {"content-type": "application/json"}
    return method, path, kw


def message_problem(r: httpx.Response) -> str | None:
    """Why a 4xx answer does not tell the client what was wrong (None when it does)."""
    try:
        detail = r.json().get("detail")
    except (ValueError, AttributeError):
        return f"body is not a JSON object: {r.text[:80]!r}"
    if not isinstance(detail, str) or len(detail.split()) < 4:
        return f"no message that says what was wrong: {detail!r}"
    return None


def _open_targets(c: httpx.Client) -> Targets:
    sids, idxs = [], []
    for env in ("webshop", "faulttree", "corridor"):
        sid = c.post("/sessions", json={"env": env}).json()["session_id"]
        c.post(f"/sessions/{sid}/reset", json={"seed": 0})
        sids.append(sid)
    sids.append(c.post("/sessions", json={"env": "corridor"}).json()["session_id"])  # never reset: 409s
    idxs.append(int(c.post("/create").json()))
    return Targets(sids, idxs)


def _send(c: httpx.Client, out: Outcome, method: str, path: str, kw: dict[str, Any]) -> httpx.Response | None:
    """One request, judged: a 5xx, a 4xx without a message or a dropped connection is a problem."""
    what = f"{method} {path[:80]} {_shown(kw)}"
    out.sent += 1
    try:
        r = c.request(method, path, **kw)
    except httpx.HTTPError as e:  # the server dropped the connection instead of answering
        out.statuses["dropped"] += 1
        out.problems.append(f"{what} -> no answer ({type(e).__name__}: {e})")
        return None
    out.statuses[r.status_code] += 1
    why = None
    if r.status_code >= 500:
        why = f"{r.status_code}: {r.text[:200]!r}"
    elif r.status_code >= 400:
        why = message_problem(r)
    if why:
        out.problems.append(f"{what} -> {why}")
    return r


def _follow_up(c: httpx.Client, out: Outcome, r: httpx.Response, path: str, keep: set[str]) -> None:
    """A create that was valid after all: reset the session it opened (bad kwargs may only bite there, and
    that reset is judged too), then close it so the server never fills up."""
    if r.status_code == 201 and path == "/sessions":
        sid = r.json().get("session_id")
        if sid and sid not in keep:
            _send(c, out, "POST", f"/sessions/{sid}/reset", {"json": {"seed": 0}})
            _quiet(c, "DELETE", f"/sessions/{sid}")
    if r.status_code == 200 and path == "/create":
        _quiet(c, "POST", "/close", json={"env_idx": r.json()})


def _quiet(c: httpx.Client, method: str, path: str, **kw: Any) -> None:
    """Housekeeping (closing what was opened): not judged, and a dropped connection is no reason to stop."""
    try:
        c.request(method, path, **kw)
    except httpx.HTTPError:
        pass


def run(url: str, count: int, seed: int = 0, time_budget_s: float = 120.0, token: str | None = None,
        max_body: int = 1 << 20) -> Outcome:  # fmt: skip
    """Send up to `count` generated bad requests (stopping after `time_budget_s`); what came back."""
    rng = random.Random(seed)
    out = Outcome()
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    deadline = time.monotonic() + time_budget_s
    with httpx.Client(base_url=url, timeout=60, headers=headers) as c:
        t = _open_targets(c)
        keep = set(t.sids)
        while out.sent < count and time.monotonic() < deadline:
            method, path, kw = _request(rng, t, max_body)
            r = _send(c, out, method, path, kw)
            if r is not None:
                _follow_up(c, out, r, path, keep)
        for sid in t.sids:
            _quiet(c, "DELETE", f"/sessions/{sid}")
        for idx in t.idxs:
            _quiet(c, "POST", "/close", json={"env_idx": idx})
    return out


def _shown(kw: dict[str, Any]) -> str:
    body = kw.get("json", kw.get("content", kw.get("params", "")))
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else json.dumps(body, default=str)
    return text[:120]


if __name__ == "__main__":
    got = run(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3000)
    print(f"sent {got.sent}; statuses {dict(sorted(got.statuses.items(), key=str))}; problems {len(got.problems)}")
    for p in got.problems[:40]:
        print("  ", p)
