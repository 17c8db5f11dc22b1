"""The web page: the same env behind HTML, played over HTTP and in real headless Chromium."""

from __future__ import annotations

import re
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from envs.webshop.env import WebShopEnv
from envs.webshop.web import create_app

from .conftest import SMALL

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def expert_plan(goal_index: int) -> tuple[list[str], float]:
    """The expert's actions for a test-split goal, and the reward they earn in the env."""
    env = WebShopEnv(num_products=SMALL, split="test")
    env.reset(options={"goal_index": goal_index})
    actions = []
    while True:
        a = env.expert_action()
        actions.append(a)
        _, r, term, trunc, _ = env.step(a)
        if term or trunc:
            return actions, r


def test_http_episode_matches_env():
    client = TestClient(create_app(num_products=SMALL))
    home = client.get("/?split=test")
    assert home.status_code == 200 and "Pick a goal" in home.text
    r = client.post("/start", data={"split": "test", "goal_index": "4"}, follow_redirects=False)
    assert r.status_code == 303
    page_url = r.headers["location"]
    actions, reward = expert_plan(4)
    for a in actions:
        form = {"action": "search[...]", "query": a[len("search[") : -1]} if a.startswith("search[") else {"action": a}
        r = client.post(page_url + "/act", data=form)
        assert r.status_code == 200 and "id='error'" not in r.text
    assert re.search(r'<span id="reward">([\d.]+)</span>', r.text).group(1) == f"{reward:.4f}"
    r = client.post(page_url + "/act", data={"action": "click[nothing]"})
    assert "id='error'" in r.text and "Invalid action" in r.text
    assert client.get("/s/nope").status_code == 404


@pytest.fixture(scope="module")
def server_url():
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(create_app(num_products=SMALL), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not server.started:
        if time.time() > deadline or not thread.is_alive():
            pytest.fail("web server did not start")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.mark.skipif(
    not CHROMIUM.exists() and shutil.which("chromium") is None,
    reason="Debian chromium is not installed (apt-get install -y chromium)",
)
def test_browser_episode_by_clicking(server_url, tmp_path):
    playwright = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
    goal_index = 7
    actions, reward = expert_plan(goal_index)
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM if CHROMIUM.exists() else shutil.which("chromium")),
            args=CHROMIUM_ARGS,
            headless=True,
        )
        try:
            page = browser.new_page()
            page.goto(f"{server_url}/?split=test&start={goal_index}")
            page.click(f"#goal-{goal_index}")
            page.wait_for_selector("#search-input")
            instruction = page.inner_text("#instruction")
            assert WebShopEnv(num_products=SMALL, split="test").goals[goal_index].instruction in instruction
            for a in actions:
                if a.startswith("search["):
                    page.fill("#search-input", a[len("search[") : -1])
                    page.click("button[value='search[...]']")
                else:
                    label = a[len("click[") : -1]
                    page.click(f'button[value="click[{label}]"]')
                page.wait_for_load_state("load")
                assert page.query_selector("#error") is None, page.inner_text("#error")
            shown = page.inner_text("#reward")
            assert float(shown) == pytest.approx(reward, abs=1e-4)
            assert "attributes" in page.inner_text("#breakdown")
            page.screenshot(path=str(tmp_path / "episode.png"))
        finally:
            browser.close()
