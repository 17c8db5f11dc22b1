"""The UI over a real socket: every page answers, bad names are 404s that say why, nothing outside the runs folder
is served, it is read-only, and off loopback it needs a token."""

from __future__ import annotations

import os
import time
from pathlib import Path

import httpx
import pytest

from agents.ui.__main__ import parse_args

from .conftest import Server, coding_episode, prm_episode, society_run, write_store


def test_every_page_of_every_run_kind_answers(ui):
    with httpx.Client(base_url=ui.url) as c:
        home = c.get("/")
        assert home.status_code == 200
        for name in ("expert", "noisy", "prm", "coding", "society"):
            assert f">{name}</a>" in home.text
        assert "default-src 'self'" in home.headers["content-security-policy"]
        run = c.get("/run", params={"run": "expert"})
        assert run.status_code == 200 and "6</b> episodes" in run.text and "webshop-5" in run.text
        solved = c.get("/run", params={"run": "noisy", "outcome": "solved"})
        failed = c.get("/run", params={"run": "noisy", "outcome": "failed"})
        n_solved, n_failed = solved.text.count('class="ep-link"'), failed.text.count('class="ep-link"')
        assert n_solved + n_failed == 6
        ep = c.get("/episode", params={"run": "expert", "ep": "webshop-0"})
        assert ep.status_code == 200 and "step 1 of" in ep.text and "search[" in ep.text
        coding = c.get("/episode", params={"run": "coding", "ep": "coding-0"})
        assert "test_api.py::test_delete" in coding.text and "2/2 hidden tests passed" in coding.text
        assert "bash[python -m pytest -q]" in coding.text and "return 204" in coding.text
        soc = c.get("/society", params={"run": "society"})
        assert soc.status_code == 200 and 'id="node-0"' in soc.text and "erdos_renyi" in soc.text
        st = c.get("/api/society/state", params={"run": "society", "round": 1}).json()
        assert len(st["colors"]) == 40 and st["round"] == 1
        agent = c.get("/society", params={"run": "society", "agent": 0})
        assert agent.status_code == 200 and "agent_0" in agent.text
        cmp = c.get("/compare", params={"a": "expert", "b": "noisy"}).text
        only_a = int(cmp.split("id='only-a'>")[1].split("<")[0])
        tab = c.get("/compare", params={"a": "expert", "b": "noisy", "which": "only_a"}).text
        assert tab.count('class="seed-link"') == only_a and "only expert solved" in tab
        rounds = c.get("/api/progress", params={"run": "society"}).json()["rounds"]
        assert rounds == int(soc.text.split("id='round-slider'")[1].split("max='")[1].split("'")[0])
        prog = c.get("/api/progress", params={"run": "prm", "after": 1}).json()
        assert prog["episodes"] == 3 and [r["row"] for r in prog["rows"]] == [2, 3]


@pytest.mark.parametrize(
    ("path", "params", "status", "says"),
    [
        ("/run", {"run": "nope"}, 404, "no run 'nope'"),
        ("/run", {}, 404, "pass ?run="),
        ("/run", {"run": "../"}, 404, "not a run name"),
        ("/run", {"run": "/etc"}, 404, "not a run name"),
        ("/run", {"run": "expert/../../.."}, 404, "not a run name"),
        ("/run", {"run": "expert\\..\\.."}, 404, "not a run name"),
        ("/run", {"run": "x" * 600}, 404, "too long"),
        ("/run", {"run": "expert", "seed": "abc"}, 400, "seed='abc' is not a whole number"),
        ("/run", {"run": "expert", "page": "x"}, 400, "bad query parameters: page"),
        ("/run", {"run": "expert", "outcome": "best"}, 400, "outcome='best' is not one of"),
        ("/run", {"run": "expert", "page": "0"}, 400, "page=0"),
        ("/episode", {"run": "expert", "ep": "webshop-99"}, 404, "has no episode 'webshop-99'"),
        ("/episode", {"run": "expert"}, 404, "pass ?ep="),
        ("/episode", {"run": "expert", "ep": "webshop-0", "step": "999"}, 404, "there is no step 999"),
        ("/compare", {"a": "expert", "b": "gone"}, 404, "no run 'gone'"),
        ("/compare", {"a": "expert", "b": "noisy", "which": "x"}, 400, "which='x'"),
        ("/society", {"run": "expert"}, 404, "is not a society"),
        ("/society", {"run": "society", "agent": "4000"}, 404, "there is no agent 4000"),
        ("/api/society/state", {"run": "society", "round": "999"}, 404, "there is no round 999"),
        ("/api/progress", {"run": "../x"}, 404, "not a run name"),
        ("/static/../../etc/passwd", {}, 404, "no page"),
        ("/static/trajectories.jsonl", {}, 404, "no asset"),
        ("/expert/trajectories.jsonl", {}, 404, "no page"),
    ],
)
def test_bad_names_are_answered_with_what_is_wrong(ui, path, params, status, says):
    r = httpx.get(ui.url + path, params=params)
    assert r.status_code == status, r.text
    assert says in r.text.replace("&#x27;", "'")
    assert str(ui.url) not in r.text and "Traceback" not in r.text


def test_read_only(ui):
    for method in ("POST", "PUT", "DELETE"):
        r = httpx.request(method, ui.url + "/run", params={"run": "expert"})
        assert r.status_code == 405 and "read-only" in r.text


def test_a_symlink_out_of_the_runs_folder_is_refused(tmp_path: Path):
    root = tmp_path / "runs"
    outside = write_store(tmp_path / "secret", [prm_episode(0)])
    write_store(root / "ok", [prm_episode(1)])
    os.symlink(outside, root / "link")  # a run folder that is a link out
    (root / "file-link").mkdir()
    os.symlink(outside / "trajectories.jsonl", root / "file-link" / "trajectories.jsonl")  # a store that is a link out
    with Server(root) as s, httpx.Client(base_url=s.url) as c:
        assert c.get("/run", params={"run": "ok"}).status_code == 200
        r = c.get("/run", params={"run": "link"})
        assert r.status_code == 404 and "outside the runs folder" in r.text
        r = c.get("/episode", params={"run": "file-link", "ep": "toy-0"})
        assert r.status_code == 404 and "has no trajectories.jsonl" in r.text and "goal 0" not in r.text
        assert ">link<" not in c.get("/").text


def test_off_loopback_needs_a_token_and_the_browser_keeps_it(tmp_path: Path, capsys):
    root = write_store(tmp_path / "runs" / "r", [prm_episode(0)]).parent
    with pytest.raises(SystemExit):
        parse_args([str(root), "--host", "0.0.0.0"])
    assert "requires a token" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse_args([str(root), "--host", "0.0.0.0", "--token", "short"])
    with pytest.raises(SystemExit):  # long but weak: the env server's strength rules apply
        parse_args([str(root), "--host", "0.0.0.0", "--token", "t" * 32])
    strong = "Zq7-mR2v_Lp9xK4wNc8bYt3h"
    assert parse_args([str(root), "--host", "0.0.0.0", "--token", strong]).token == strong
    with pytest.raises(SystemExit):
        parse_args([str(tmp_path / "missing")])
    token = "s3cret-token-of-enough-length-0123"
    with Server(root, token=token) as s, httpx.Client(base_url=s.url) as c:
        r = c.get("/")
        assert r.status_code == 401 and "missing bearer token" in r.text
        assert c.get("/", params={"token": "wrong"}).status_code == 401
        assert c.get("/", headers={"authorization": f"Bearer {token}"}).status_code == 200
        r = c.get("/", params={"token": token})
        assert r.status_code == 200 and "agentsim_ui_token" in r.headers["set-cookie"]
        assert "HttpOnly" in r.headers["set-cookie"]
        assert c.get("/run", params={"run": "r"}).status_code == 200  # the cookie carries it now
        assert c.get("/health").status_code == 200


def test_a_society_with_a_parquet_event_log_shows_its_curves(tmp_path: Path):
    root = tmp_path / "runs"
    society_run(root / "pq", scenario="opinion", agents=20, rounds=5, event_log="parquet")
    with Server(root) as s, httpx.Client(base_url=s.url) as c:
        r = c.get("/society", params={"run": "pq"})
        assert r.status_code == 200 and "Parquet" in r.text and 'id="metric-polarization"' in r.text
        assert c.get("/api/society/state", params={"run": "pq", "round": 1}).status_code == 404


def test_a_society_without_logged_states_is_coloured_by_moves_and_says_it_asked_no_interviews(tmp_path: Path):
    """A run that logged no per-agent state (state_agents=0, or written before states were logged)."""
    root = tmp_path / "runs"
    society_run(root / "moves", scenario="cooperation", agents=6, rounds=4, state_agents=0)
    with Server(root) as s, httpx.Client(base_url=s.url) as c:
        page = c.get("/society", params={"run": "moves"}).text
        assert "latest move up to the round" in page and "logged no per-agent state" in page
        st = c.get("/api/society/state", params={"run": "moves", "round": 2}).json()
        assert set(st["labels"]) <= {"cooperate", "defect", "no move yet"} and st["moved"] == 6
        agent = c.get("/society", params={"run": "moves", "agent": 1}).text
        assert "this run asked no interviews" in agent and "interview.questions" in agent


def test_one_command_serves_a_runs_folder(runs_dir: Path):
    """`python -m agents.ui runs/` as a user starts it: a real process on a loopback port."""
    import subprocess
    import sys
    import time

    from .conftest import free_port

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "agents.ui", str(runs_dir), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        r = None
        while r is None and proc.poll() is None:  # until it answers or exits (pytest-timeout bounds the wait)
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/run", params={"run": "expert"})
            except httpx.ConnectError:
                time.sleep(0.2)
        assert r is not None, "python -m agents.ui exited before it answered"
        assert r.status_code == 200 and "webshop-0" in r.text
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=20)
    assert f"http://127.0.0.1:{port}/" in out and "read-only" in out


def test_damaged_files_are_answered_not_crashed_on(tmp_path: Path):
    root = tmp_path / "runs"
    write_store(root / "r", [prm_episode(0)])
    (root / "r" / "trajectories.index.sqlite").write_bytes(b"not a database at all" * 100)  # a damaged index
    bad_diff = coding_episode(0)
    bad_diff.steps[-1].info["workspace_diff"] = {"changed": "many", "files": "server.py"}  # not the env's format
    write_store(root / "code", [bad_diff])
    (root / "soc").mkdir()
    (root / "soc" / "metrics.json").write_text("{broken")
    (root / "soc" / "events.sqlite").write_bytes(b"garbage" * 1000)
    with Server(root) as s, httpx.Client(base_url=s.url) as c:
        r = c.get("/run", params={"run": "r"})
        assert r.status_code == 200 and "1</b> episodes" in r.text  # the index was rebuilt
        r = c.get("/society", params={"run": "soc"})
        assert r.status_code == 422 and "could not be read" in r.text and str(root) not in r.text
        assert c.get("/").status_code == 200
        r = c.get("/episode", params={"run": "code", "ep": "coding-0"})
        assert r.status_code == 200 and "the recorded workspace diff is damaged" in r.text


def test_a_big_store_is_indexed_in_the_background_while_pages_say_so(tmp_path: Path, monkeypatch):
    monkeypatch.setattr("agents.ui.runs.BACKGROUND_BYTES", 1)  # every store counts as big here
    root = tmp_path / "runs"
    write_store(root / "big", [prm_episode(s) for s in range(50)])
    with Server(root) as s, httpx.Client(base_url=s.url) as c:
        first = c.get("/run", params={"run": "big"})  # starts the index in a thread, answers at once
        text = first.text.replace("&#x27;", "'")
        assert first.status_code == 202 and "indexing run 'big'" in text and "http-equiv='refresh'" in text
        for _ in range(600):
            r = c.get("/api/progress", params={"run": "big"})
            if r.status_code == 200:
                break
            assert r.status_code == 202 and r.json()["indexing"]["run"] == "big"
            time.sleep(0.05)
        assert r.status_code == 200 and r.json()["episodes"] == 50
        assert "50</b> episodes" in c.get("/run", params={"run": "big"}).text
