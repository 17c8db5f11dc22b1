"""Issue 12, the env server: client-named files, bounded catalogs, no 500s, stalled bodies, tokens, UTF-8."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import httpx
import numpy as np
import pytest

from envs.server.config import ServerConfig
from envs.webshop.resources import CatalogBudgetExceeded, CatalogSpec, Shop, ShopCache, estimate_bytes
from tests.server import badset
from tests.server.conftest import ROOT


def detail(r: httpx.Response) -> str:
    return r.json()["detail"]


@pytest.fixture
def client(server):
    with httpx.Client(base_url=server.url, timeout=60) as c:
        yield c


# -- 1. a client cannot name files; allowed kwargs are validated -----------------------------------
@pytest.mark.parametrize(
    "env,key,value",
    [
        ("webshop", "catalog_path", "/etc/passwd"),
        ("webshop", "catalog_path", "/nonexistent/items.json"),
        ("webshop", "attributes_path", "/etc/hostname"),
        ("webshop", "human_goals_path", "/dev/zero"),
        ("webshop", "search_backend", "bm25s"),
        ("faulttree", "dataset_path", "/etc"),
        ("faulttree", "rephraser", "my-rephraser"),
        ("corridor", "length", 3),
    ],
)
def test_client_cannot_set_operator_kwargs(client, env, key, value):
    r = client.post("/sessions", json={"env": env, "kwargs": {key: value}})
    assert r.status_code == 422, r.text
    d = detail(r)
    assert repr(key) in d and "may not be set by a client" in d and "allowed:" in d
    if isinstance(value, str):
        assert value not in d  # nothing about the file is echoed, so no existence oracle either
    if env == "webshop":
        assert "num_products" in d and "catalog_seed" in d


def test_same_answer_for_existing_and_missing_files(client):
    a = client.post("/sessions", json={"env": "webshop", "kwargs": {"catalog_path": "/etc/passwd"}})
    b = client.post("/sessions", json={"env": "webshop", "kwargs": {"catalog_path": "/nope/nope.json"}})
    assert (a.status_code, detail(a)) == (b.status_code, detail(b))


def test_malformed_allowed_kwargs_name_the_field(client):
    r = client.post("/sessions", json={"env": "faulttree", "kwargs": {"expert": "fast"}})
    assert r.status_code == 422 and "'expert'" in detail(r)
    r = client.post("/sessions", json={"env": "faulttree", "kwargs": {"expert": {"confidence": "x"}}})
    assert r.status_code == 422 and "'expert.confidence'" in detail(r)
    r = client.post("/sessions", json={"env": "faulttree", "kwargs": {"expert": {"speed": 1}}})
    assert r.status_code == 422 and "'expert.speed'" in detail(r)
    r = client.post("/sessions", json={"env": "webshop", "kwargs": {"num_products": 5_000_000}})
    assert r.status_code == 422 and "num_products" in detail(r) and "--max-num-products" in detail(r)
    # a well-formed expert body works end to end (it used to fail at reset with AttributeError -> 500)
    r = client.post("/sessions", json={"env": "faulttree", "kwargs": {"expert": {"confidence": 0.9}, "max_turns": 10}})
    assert r.status_code == 201, r.text
    sid = r.json()["session_id"]
    assert client.post(f"/sessions/{sid}/reset", json={"seed": 1}).status_code == 200
    action = client.get(f"/sessions/{sid}/expert_action").json()["action"]
    assert client.post(f"/sessions/{sid}/step", json={"action": action}).status_code == 200
    client.delete(f"/sessions/{sid}")


def test_operator_allows_kwargs_of_extra_envs(server_factory):
    srv = server_factory("--client-kwargs", "corridor=length")
    with httpx.Client(base_url=srv.url) as c:
        r = c.post("/sessions", json={"env": "corridor", "kwargs": {"length": 3}})
        assert r.status_code == 201 and r.json()["kwargs"] == {"length": 3}
        r = c.post(
            "/sessions",
            content=b'{"env": "corridor", "kwargs": {"length": Infinity}}',
            headers={"content-type": "application/json"},
        )
        assert r.status_code == 422 and "'length'" in detail(r) and "finite" in detail(r)
        r = c.post("/sessions", json={"env": "corridor", "kwargs": {"max_steps": 3}})
        assert r.status_code == 422 and "'max_steps'" in detail(r) and "allowed: length" in detail(r)


def test_operator_kwargs_are_checked_and_converted():
    from envs.faulttree.expert import ExpertConfig
    from envs.server.catalog import EnvCatalog

    cat = EnvCatalog.build({}, {"faulttree": {"expert": {"confidence": 0.9}, "max_turns": 12}}, [])
    assert cat.defaults["faulttree"] == {"expert": ExpertConfig(confidence=0.9), "max_turns": 12}
    _, _, _, env = cat.make("faulttree", {}, trusted=True)
    env.reset(seed=0)
    assert env.unwrapped.expert_config.confidence == 0.9 and env.unwrapped.expert_action()
    env.close()


def test_operator_paths_fail_at_startup(tmp_path):
    cases = [
        ('webshop={"catalog_path": "/tmp"}', "is not a regular file"),
        ('webshop={"catalog_path": "/nonexistent.json"}', "does not exist"),
        ('faulttree={"dataset_path": "/etc/passwd"}', "is not a directory"),
        ('faulttree={"dataset_path": "/tmp"}', "holds no trees.jsonl"),
        ('faulttree={"expert": "fast"}', "'expert'"),
    ]
    for kwargs, why in cases:
        p = subprocess.run(
            [sys.executable, "-m", "envs.server", "--port", "1", "--env-kwargs", kwargs],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert p.returncode == 2 and why in p.stderr, (kwargs, p.returncode, p.stderr[-500:])


# -- 3. no 500 for client mistakes ---------------------------------------------------------------
def test_bad_request_set_never_answers_5xx(server):
    rows = badset.run(server.url)
    table = "\n".join(f"{code}  {name}  {err}" for name, code, err in rows)
    print(table)
    assert all(400 <= code < 500 for _, code, _ in rows), table
    assert all(code == 422 for _, code, _ in rows), table


def test_reset_errors_name_the_field(client):
    for env, key in (("webshop", "goal_index"), ("faulttree", "entry_index")):
        sid = client.post("/sessions", json={"env": env}).json()["session_id"]
        r = client.post(f"/sessions/{sid}/reset", json={"seed": -1})
        assert r.status_code == 422 and "body.seed" in detail(r) and "greater than or equal to 0" in detail(r)
        r = client.post(
            f"/sessions/{sid}/reset",
            content=b'{"options": {"%s": Infinity}}' % key.encode(),
            headers={"content-type": "application/json"},
        )
        assert r.status_code == 422 and key in detail(r), r.text
        r = client.post(f"/sessions/{sid}/reset", json={"options": {key: 10**30}})
        assert r.status_code == 422 and key in detail(r), r.text
        r = client.post(f"/sessions/{sid}/reset", json={"options": {key: 1}})
        assert r.status_code == 200 and r.json()["info"].get(key, 1) == 1
        client.delete(f"/sessions/{sid}")


# -- 7. invalid UTF-8 ------------------------------------------------------------------------------
def test_invalid_utf8_is_422_with_the_byte_offset(client):
    r = client.post("/sessions", content=b'{"env": "web\xffshop"}', headers={"content-type": "application/json"})
    assert r.status_code == 422 and "not valid UTF-8 (at byte 12" in detail(r)


# -- 4. stalled bodies, connection cap ---------------------------------------------------------------
def _raw(port: int, data: bytes) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(data)
    return s


def _read_until_closed(s: socket.socket, limit_s: float) -> tuple[bytes, float]:
    t0, got = time.monotonic(), b""
    s.settimeout(limit_s)
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return got, time.monotonic() - t0
        got += chunk


def test_stalled_body_is_dropped_within_the_timeout(server_factory):
    srv = server_factory("--read-timeout", "1", "--keep-alive", "2")
    head = b"POST /sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    socks = [_raw(srv.port, head + b'{"env": "w') for _ in range(20)]
    t0 = time.monotonic()
    for s in socks:
        got, _ = _read_until_closed(s, 10)
        assert got.startswith(b"HTTP/1.1 408") and b"did not arrive within 1 s" in got, got[:300]
        s.close()
    assert time.monotonic() - t0 < 5  # all 20 dropped after ~1 s, not held
    s = _raw(srv.port, head.replace(b"POST /sessions", b"GET /sessions") + b"{")  # a GET with a body too
    got, took = _read_until_closed(s, 10)
    assert got.startswith(b"HTTP/1.1 408") and took < 4, got[:300]
    s.close()
    # a slow but steady body that finishes in time is fine
    body = b'{"env": "corridor"}'
    s = _raw(srv.port, head.replace(b"100", str(len(body)).encode()) + body[:8])
    time.sleep(0.3)
    s.sendall(body[8:])
    got, _ = _read_until_closed(s, 10)  # keep-alive expiry closes it after the answer
    assert got.startswith(b"HTTP/1.1 201"), got[:300]
    s.close()
    assert httpx.get(f"{srv.url}/health").status_code == 200


def test_silent_and_half_header_connections_are_dropped(server_factory):
    srv = server_factory("--read-timeout", "1", "--keep-alive", "30")
    silent = [_raw(srv.port, b"") for _ in range(10)]
    half = [_raw(srv.port, b"POST /sessions HTTP/1.1\r\nHost: x\r\nContent-Le") for _ in range(10)]
    t0 = time.monotonic()
    for s in silent + half:
        got, _ = _read_until_closed(s, 10)
        assert got == b""
        s.close()
    assert time.monotonic() - t0 < 5
    # keep-alive between requests still lasts --keep-alive, not --read-timeout
    with httpx.Client(base_url=srv.url) as c:
        assert c.get("/health").status_code == 200
        time.sleep(1.5)
        assert c.get("/health").status_code == 200


def test_connection_cap(server_factory):
    srv = server_factory("--max-connections", "4", "--read-timeout", "3")
    head = b"POST /sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    held = [_raw(srv.port, head + b"{") for _ in range(4)]
    time.sleep(0.3)
    r = httpx.get(f"{srv.url}/health", timeout=5)
    assert r.status_code == 503
    for s in held:
        s.close()
    time.sleep(0.3)
    assert httpx.get(f"{srv.url}/health", timeout=5).status_code == 200


# -- 5. token strength (issue 43: checked wherever a token is given, not only its length off loopback) -------
@pytest.mark.parametrize("token", [None, "", " ", "   \t  ", "short", "has white space in it ok", " " * 40])
def test_weak_tokens_are_refused_off_loopback(token):
    with pytest.raises(ValueError, match="requires a bearer token|bearer token is too weak") as e:
        ServerConfig(host="0.0.0.0", token=token)
    assert "secrets.token_urlsafe(24)" in str(e.value)


def test_strong_token_and_cli_message():
    good = "7f3a9c1e5b2d8046e1c7a9f3b5d20864"
    assert ServerConfig(host="0.0.0.0", token=good).token == good
    assert ServerConfig(host="127.0.0.1").token is None  # loopback without a token: the operator's choice
    with pytest.raises(ValueError, match="too weak"):
        ServerConfig(host="127.0.0.1", token="t")  # but a token given is a token checked, on loopback too
    p = subprocess.run(
        [sys.executable, "-m", "envs.server", "--host", "0.0.0.0", "--token", " "],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 2 and "secrets.token_urlsafe(24)" in p.stderr and "at least 16" in p.stderr


# -- 2. bounded catalogs -----------------------------------------------------------------------------
class _FakeCatalog:
    def __init__(self, n: int) -> None:
        self.codes = {"x": np.zeros(n, dtype=np.uint8)}
        self.n = n

    def __len__(self) -> int:
        return self.n


class _FakeIndex:
    pass


def _build(spec: CatalogSpec) -> Shop:
    return Shop(_FakeCatalog(spec.num_products), _FakeIndex())  # type: ignore[arg-type]


def test_catalog_cache_lru_by_bytes():
    one = estimate_bytes(CatalogSpec(num_products=1000))
    c = ShopCache(budget_bytes=int(3.5 * one))
    specs = [CatalogSpec(num_products=1000, catalog_seed=i) for i in range(10)]
    in_use = c.get(specs[0], _build)  # a session holds this one
    for s in specs[1:]:
        c.get(s, _build)
        assert c.live_bytes() <= c.budget_bytes
    assert len(c.held()) <= 3 and c.evicted >= 6
    assert specs[0] in c.in_use()  # evicted from the LRU but alive: counted, and reused rather than rebuilt
    built = c.built
    assert c.get(specs[0], _build).catalog is in_use.catalog and c.built == built
    del in_use
    assert c.get(specs[9], _build) is not None and c.built == built  # the newest is still held
    # every catalog in use and the budget full: a new one is refused instead of growing the process
    holders = [c.get(CatalogSpec(num_products=1000, catalog_seed=100 + i), _build) for i in range(3)]
    with pytest.raises(CatalogBudgetExceeded, match="close sessions"):
        c.get(CatalogSpec(num_products=1000, catalog_seed=999), _build)
    del holders
    assert c.get(CatalogSpec(num_products=1000, catalog_seed=999), _build) is not None


def test_distinct_catalog_seeds_do_not_grow_the_server(server_factory):
    srv = server_factory("--catalog-budget-mb", "40", "--max-num-products", "2000")
    rss = []
    with httpx.Client(base_url=srv.url, timeout=120) as c:
        for seed in range(40):
            r = c.post(
                "/sessions", json={"env": "webshop", "kwargs": {"catalog_seed": 1000 + seed, "num_products": 300}}
            )
            assert r.status_code == 201, r.text
            sid = r.json()["session_id"]
            assert c.post(f"/sessions/{sid}/reset", json={"seed": seed}).status_code == 200
            assert c.post(f"/sessions/{sid}/step", json={"action": "search[red shoes]"}).status_code == 200
            assert c.delete(f"/sessions/{sid}").status_code == 200
            rss.append(srv.rss_mb())
        h = c.get("/health").json()
    print(f"server RSS after 1/10/40 catalogs: {rss[0]:.0f} / {rss[9]:.0f} / {rss[-1]:.0f} MB; health {h}")
    assert h["catalog_mb"] <= 40 and h["catalogs"] < 40  # LRU-evicted within the budget
    # was +6 MB per new catalog for good (106 -> 260 MB over 40, ~120 MB over the last 20); now flat once the
    # budget is full, give or take the allocator's fragmentation (seen up to 20 MB over the last 20 catalogs)
    assert rss[-1] - rss[19] < 40 and rss[-1] - rss[0] < 60, [round(x) for x in rss]


def test_disk_cache_is_bounded_and_keeps_catalogs_in_use(tmp_path, monkeypatch):
    """A client choosing catalog_seed cannot fill the disk: built catalogs beyond the budget are deleted, LRU first."""
    from envs.webshop.paths import cache_root
    from envs.webshop.resources import _build as build_real

    monkeypatch.setenv("AGENTSIM_CACHE", str(tmp_path))
    c = ShopCache(budget_bytes=1 << 30, disk_budget_bytes=1)  # a 1-byte disk budget: keep only what is in use
    in_use = c.get(CatalogSpec(num_products=50, catalog_seed=0), build_real)
    for seed in range(1, 5):
        c.get(CatalogSpec(num_products=50, catalog_seed=seed), build_real)
        c.clear()  # nobody holds the others
    left = {d.name for d in cache_root().iterdir()}
    assert in_use.catalog.hash in left  # in use: never deleted
    assert len(left) <= 2  # the catalog in use and at most the newest one
    assert in_use.index.search("shirt", 5) is not None  # and it still works
