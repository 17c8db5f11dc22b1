"""The UI in real headless Chromium: open a run, open an episode and step through it, the PRM chart, two runs
compared, a society's rounds scrubbed, and a live page following a store that grows while it is open.

Set AGENTSIM_UI_SCREENSHOTS=<folder> to keep a PNG of each page (docs/ui/ holds the committed ones).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.trajectories.store import TrajectoryStore

from .conftest import SOCIETY_QUESTIONS, agents_run, prm_episode

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
expect = pytest.importorskip("playwright.sync_api", reason="pip install playwright").expect
SHOTS = os.environ.get("AGENTSIM_UI_SCREENSHOTS")

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists() and shutil.which("chromium") is None,
    reason="Debian chromium is not installed (apt-get install -y chromium)",
)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=str(CHROMIUM if CHROMIUM.exists() else shutil.which("chromium")), args=CHROMIUM_ARGS
        )
        yield b
        b.close()


@pytest.fixture
def page(browser):
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    yield pg
    ctx.close()
    assert not errors, f"the page logged errors: {errors}"


def shot(page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"))


def test_open_a_run_then_an_episode_and_step_through_it(ui, page):
    page.goto(ui.url + "/")
    shot(page, "runs")
    page.click("a.run-link:text-is('expert')")
    page.wait_for_selector("table.episodes")
    assert "6</b> episodes" in page.inner_html("#run-stats")
    page.select_option("select[name=outcome]", "solved")
    page.click("#filters button")
    page.wait_for_load_state("load")
    assert "outcome=solved" in page.url and page.locator("a.ep-link").count() == 6
    shot(page, "run")
    page.click("a.ep-link:text-is('webshop-1')")
    page.wait_for_selector("#player")
    total = int(page.get_attribute("#player", "data-steps"))
    assert total >= 3
    assert page.is_visible("#step-0") and not page.is_visible("#step-1")
    first_action = page.inner_text("#step-0 pre.action")
    assert first_action.startswith("search[")
    page.click("#step-next")
    assert page.inner_text("#step-label") == f"step 2 of {total}"
    assert page.is_visible("#step-1") and not page.is_visible("#step-0")
    page.keyboard.press("ArrowRight")
    assert page.is_visible("#step-2") and "step=3" in page.url
    page.keyboard.press("ArrowLeft")
    assert page.is_visible("#step-1")
    page.click(f".outline a[data-step='{total - 1}']")  # the last step: the purchase
    assert page.is_visible(f"#step-{total - 1}")
    assert "click[buy now]" in page.inner_text(f"#step-{total - 1} pre.action").lower()
    shot(page, "episode")


def test_prm_chart_links_to_its_steps(ui, page):
    page.goto(ui.url + "/episode?run=prm&ep=toy-0")
    chart = page.locator("#prm-chart")
    assert chart.is_visible()
    points = page.locator("#prm-chart circle.pt[data-series='promise']")
    assert points.count() == 4
    assert "promise at 4: 0.8" in page.inner_html("#prm-chart")
    points.nth(2).click()  # step 3: the one the env rejected
    assert page.is_visible("#step-2") and page.inner_text("#step-label") == "step 3 of 4"
    assert "no such item" in page.inner_text("#step-2 pre.error")
    assert "0.3000" in page.inner_text("#step-2 .facts")
    cands = page.locator("#step-2 table.candidates tbody tr")
    assert cands.count() == 2 and "(chosen)" in cands.nth(0).inner_text() and "-0.5000" in cands.nth(0).inner_text()
    assert "remembered fact 2" in page.inner_text("#step-2 pre.memory")
    shot(page, "episode_prm")


def test_a_coding_trial_shows_commands_edits_and_the_verifier(ui, page):
    page.goto(ui.url + "/run?run=coding")
    page.click("a.ep-link")
    page.wait_for_selector("#verifier")
    assert "2/2 hidden tests passed" in page.inner_text("#verifier")
    assert page.locator("table.tests tbody tr").count() == 2
    commands = page.locator("table.commands tbody tr")
    assert commands.count() == 3 and "bash[ls]" in commands.nth(0).inner_text()
    commands.nth(0).locator("summary").click()
    assert "requirements.txt" in commands.nth(0).inner_text()
    diffs = page.locator("#edits pre.diff")
    assert diffs.count() == 2  # the str_replace (text form) and the create (JSON form)
    assert (
        diffs.nth(0).locator(".del").inner_text() == "-pass"
        and diffs.nth(0).locator(".add").inner_text() == "+return 204"
    )
    assert diffs.nth(1).locator(".add").inner_text() == "+done"
    assert "no workspace diff in this trajectory" in page.inner_text("#workspace-diff")  # this store predates it


@pytest.fixture(scope="module")
def scripted_coding_run(runs_dir: Path) -> str:
    """A real coding episode: `agents.run` of the scripted expert on a shipped task, in a bwrap sandbox."""
    from envs.coding.sandbox import unavailable_reason

    reason = unavailable_reason("bwrap")
    if reason is not None:
        pytest.skip(f"bwrap backend unavailable: {reason}")
    out = runs_dir / "coding-scripted"
    res = subprocess.run(  # its own process: the sync browser API holds this thread's event loop
        [sys.executable, "-m", "agents.run", "env=coding", "env.kwargs.task=example-kv-delete", "brain=scripted",
         "episodes=1", "progress=false", f"out={out}"],
        capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2], timeout=900,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    return out.name


def test_a_coding_trial_shows_the_files_its_workspace_changed(ui, page, runs_dir, scripted_coding_run):
    """The expert edits server.py with a script (no create / str_replace): the workspace diff still shows it."""
    page.goto(ui.url + f"/run?run={scripted_coding_run}")
    page.click("a.ep-link")
    page.wait_for_selector("#workspace-diff")
    assert "1 file changed from reset to submit[]" in page.inner_text("#workspace-diff p.stats")
    server = page.locator("#workspace-diff .file-change[data-path='server.py']")
    assert server.get_attribute("data-status") == "modified"
    added = server.locator("pre.diff .add").all_inner_texts()
    assert "+    def do_DELETE(self) -> None:" in added and not server.locator("pre.diff .del").count()
    (rec,) = TrajectoryStore(runs_dir / scripted_coding_run / "trajectories.jsonl")
    kept = rec.steps[-1].info["workspace_diff"]["files"][0]["diff"]
    assert [x for x in kept.splitlines() if x.startswith("+") and not x.startswith("+++")] == added
    assert "reward 1" in page.inner_text("#verifier")
    shot(page, "coding")


def test_compare_two_runs_on_the_same_seeds(ui, page, runs_dir):
    from agents.ui.pages_compare import first_difference

    page.goto(ui.url + "/")
    page.select_option("#cmp-a", "expert")
    page.select_option("#cmp-b", "noisy")
    page.click("form.compare-form button")
    page.wait_for_selector("#compare-stats")
    assert "6 shared seeds" in page.inner_text("#compare-stats")
    expert = {e.seed: e for e in TrajectoryStore(runs_dir / "expert" / "trajectories.jsonl")}
    noisy = {e.seed: e for e in TrajectoryStore(runs_dir / "noisy" / "trajectories.jsonl")}
    only_a = sum(expert[s].outcome.success and not noisy[s].outcome.success for s in expert)
    assert page.inner_text("#only-a") == str(only_a)
    differ = [
        s
        for s in expert
        if first_difference([x.action for x in expert[s].steps], [x.action for x in noisy[s].steps]) is not None
    ]
    assert differ, "the noisy run should leave the expert's path somewhere"
    shot(page, "compare")
    seed = differ[0]
    page.click(f"a.seed-link:text-is('{seed}')")
    page.wait_for_selector("#seed-verdict")
    n = first_difference([x.action for x in expert[seed].steps], [x.action for x in noisy[seed].steps])
    assert f"first differ at step {n + 1}" in page.inner_text("#seed-verdict")
    assert page.locator("tr.first-diff td").first.inner_text() == str(n + 1)
    shot(page, "compare_seed")


def test_scrub_a_societys_rounds(ui, page, runs_dir):
    """Nodes are coloured by the scenario's state (adopted or not) after the slider's round, as the run logged it."""
    page.goto(ui.url + "/society?run=society")
    page.wait_for_selector("#network")
    assert "adopted" in page.inner_text("#legend")
    slider = page.locator("#round-slider")
    last = int(slider.get_attribute("max"))
    adopted_colour = "#dc2626"  # the top of the blue-to-red scale: state 1, shared the post

    def adopted_shown() -> int:
        return page.eval_on_selector_all(
            "#network circle.node", f"ns => ns.filter(n => n.getAttribute('fill') === '{adopted_colour}').length"
        )

    def adopted_logged(round_no: int) -> int:
        with sqlite3.connect(runs_dir / "society" / "events.sqlite") as db:
            return db.execute("SELECT COUNT(*) FROM states WHERE round = ? AND value = 1", (round_no,)).fetchone()[0]

    at_last = adopted_shown()
    assert at_last == adopted_logged(last)
    shot(page, "society")
    slider.fill("1")  # round 1: only the seed and the first sharers have adopted
    expect(page.locator("#rounds")).to_have_attribute("data-shown", "1")
    assert page.inner_text("#round-label") == "1"
    assert adopted_shown() == adopted_logged(1) < at_last
    slider.fill(str(last))
    expect(page.locator("#rounds")).to_have_attribute("data-shown", str(last))
    assert adopted_shown() == at_last


def test_a_society_agents_timeline_shows_its_interview_answers(ui, page, runs_dir):
    """societies.run asked the recorded agents two questions every 4 rounds; agent_0's answers are listed."""
    from societies.interviews import read_interviews

    page.goto(ui.url + "/society?run=society")
    page.click("#node-0")  # an agent's timeline
    page.wait_for_selector("#agent-stats")
    assert "agent_0" in page.inner_text("#agent-stats")
    rows = page.locator("#interviews tbody tr")
    kept = list(read_interviews(runs_dir / "society" / "interviews.jsonl", agent="agent_0"))
    played = json.loads((runs_dir / "society" / "summary.json").read_text())["rounds_played"]
    asked_after = sorted(
        {*range(4, played + 1, 4), played}
    )  # every 4 rounds and after the last (a cascade may end early)
    assert [r.round for r in kept] == [r for r in asked_after for _ in SOCIETY_QUESTIONS]
    assert rows.count() == len(kept)
    for row, rec in zip(rows.all(), kept):
        cells = row.locator("td").all_inner_texts()
        assert cells[:3] == [str(rec.round), rec.question, rec.answer] and "rule seat" in cells[3]
    assert "Did you share the post?" in page.inner_text("#interviews") and "agent_0" not in kept[0].question
    assert page.locator("#agent-state").count() == 1  # its adopted-or-not per round
    shot(page, "society_agent")


def test_live_page_follows_a_growing_store(ui, page, runs_dir):
    out = runs_dir / "growing"
    out.mkdir()
    (out / "trajectories.jsonl").touch()  # a run that has just started
    page.goto(ui.url + "/live?run=growing")
    expect(page.locator("#live-episodes")).to_have_text("0")
    writer = threading.Thread(target=agents_run, args=(out, 4))  # a real agents.run appending while we watch
    writer.start()
    expect(page.locator("#live-episodes")).to_have_text("4", timeout=120_000)
    writer.join()
    assert page.locator("tr.live-row").count() == 4
    store = TrajectoryStore(out / "trajectories.jsonl")
    line = prm_episode(3).model_dump_json() + "\n"
    with open(store.path, "a") as f:  # a writer caught mid-line: the page waits for the whole episode
        f.write(line[:40])
        f.flush()
        indexed, size = store.path.stat().st_size - 40, store.path.stat().st_size
        expect(page.locator("#live-status")).to_contain_text(f"{indexed} of {size} bytes read")  # polled since
        assert page.inner_text("#live-episodes") == "4"
        f.write(line[40:])
    expect(page.locator("#live-episodes")).to_have_text("5")
    assert page.locator("tr.live-row").first.inner_text().startswith("5")
    eps = list(store)
    assert page.inner_text("#live-success") == f"{100 * sum(e.outcome.success for e in eps) / len(eps):.1f}%"
    shot(page, "live")
    page.click("tr.live-row a >> nth=0")
    page.wait_for_selector("#player")
    assert "toy-3" in page.title()
