"""Two runs side by side on the same seeds: who solved what, and the step where their actions first differ."""

from __future__ import annotations

from agents.ui.html import fmt, h, page, table, url
from agents.ui.index import EpisodeIndex
from agents.ui.pages_episode import load_episode
from agents.ui.runs import NotFound, Run, RunsRoot

PAGE_SIZE = 50
WHICH = {
    "all": "",
    "only_a": " AND a.success = 1 AND b.success = 0",
    "only_b": " AND a.success = 0 AND b.success = 1",
    "both": " AND a.success = 1 AND b.success = 1",
    "neither": " AND a.success = 0 AND b.success = 0",
}
# each seed's last episode in both runs (a resumed run may hold a seed twice; the index flags the last)
JOINED = "FROM main.episodes a JOIN b.episodes b ON b.seed = a.seed AND b.latest = 1 WHERE a.latest = 1 AND a.seed IS NOT NULL"


def first_difference(actions_a: list[str | None], actions_b: list[str | None]) -> int | None:
    """The first step (0-based) where the two action sequences differ, or None when they are the same."""
    for n, (x, y) in enumerate(zip(actions_a, actions_b)):
        if (x or "").strip() != (y or "").strip():
            return n
    return None if len(actions_a) == len(actions_b) else min(len(actions_a), len(actions_b))


def compare_page(root: RunsRoot, a: Run, b: Run, which: str, page_no: int, seed: int | None) -> str:
    if which not in WHICH:
        raise ValueError(f"which={which!r} is not one of {', '.join(WHICH)}")
    if page_no < 1:
        raise ValueError(f"page={page_no} must be 1 or more")
    ia, ib = root.index(a), root.index(b)
    crumbs = [(f"{a.name} vs {b.name}", url("/compare", a=a.name, b=b.name))]
    if seed is not None:
        return page(f"seed {seed}: {a.name} vs {b.name}", seed_detail(root, a, b, seed), crumbs)
    counts = ia.query_with(
        ib,
        f"SELECT COUNT(*) AS shared, SUM(a.success AND b.success) AS both, SUM(a.success AND NOT b.success) AS only_a, "
        f"SUM(b.success AND NOT a.success) AS only_b, SUM(NOT a.success AND NOT b.success) AS neither, "
        f"AVG(a.success) AS sa, AVG(b.success) AS sb, AVG(a.reward) AS ra, AVG(b.reward) AS rb {JOINED}",
    )[0]
    if not counts["shared"]:
        body = (
            f"<p class='error'>{h(a.name)} and {h(b.name)} share no seeds: nothing to compare episode by episode.</p>"
        )
        return page(f"{a.name} vs {b.name}", body, crumbs)
    total = ia.query_with(ib, f"SELECT COUNT(*) AS n {JOINED}{WHICH[which]}")[0]["n"]
    rows = ia.query_with(
        ib,
        f"SELECT a.seed AS seed, a.episode_id AS ea, b.episode_id AS eb, a.success AS sa, b.success AS sb, "
        f"a.reward AS ra, b.reward AS rb, a.steps AS na, b.steps AS nb, a.offset AS oa, a.length AS la_, "
        f"b.offset AS ob, b.length AS lb_ {JOINED}{WHICH[which]} "
        f"ORDER BY a.seed LIMIT ? OFFSET ?",
        (PAGE_SIZE, (page_no - 1) * PAGE_SIZE),
    )
    out = []
    for r in rows:
        diff = first_difference(actions(ia, r["oa"], r["la_"]), actions(ib, r["ob"], r["lb_"]))
        out.append(
            [
                f'<a class="seed-link" href="{url("/compare", a=a.name, b=b.name, seed=r["seed"])}">{r["seed"]}</a>',
                _outcome(r["sa"], r["ra"], r["na"], url("/episode", run=a.name, ep=r["ea"])),
                _outcome(r["sb"], r["rb"], r["nb"], url("/episode", run=b.name, ep=r["eb"])),
                "same actions" if diff is None else f"step {diff + 1}",
            ]
        )
    c = counts
    summary = (
        f"<p class='stats' id='compare-stats'>{fmt(c['shared'])} shared seeds · both solved <b>{fmt(c['both'])}</b> · "
        f"only {h(a.name)} <b id='only-a'>{fmt(c['only_a'])}</b> · only {h(b.name)} <b id='only-b'>{fmt(c['only_b'])}</b> · "
        f"neither <b>{fmt(c['neither'])}</b> · success {100 * c['sa']:.1f}% vs {100 * c['sb']:.1f}% · "
        f"mean score {100 * c['ra']:.1f} vs {100 * c['rb']:.1f}</p>"
    )
    labels = {"all": "all", "only_a": f"only {a.name} solved", "only_b": f"only {b.name} solved"}
    labels |= {"both": "both solved", "neither": "neither solved"}
    tabs = " · ".join(
        f"<b>{h(labels[k])}</b>"
        if k == which
        else f'<a href="{url("/compare", a=a.name, b=b.name, which=k)}">{h(labels[k])}</a>'
        for k in WHICH
    )
    pages = max(1, -(-total // PAGE_SIZE))
    pager = f"page {page_no} of {pages}"
    if page_no < pages:
        pager += f' · <a href="{url("/compare", a=a.name, b=b.name, which=which, page=page_no + 1)}">next →</a>'
    body = (
        summary
        + f"<p class='tabs'>{tabs}</p>"
        + table(["seed", h(a.name), h(b.name), "actions first differ"], out, cls="compare")
        + f"<p class='pager'>{pager}</p>"
    )
    return page(f"{a.name} vs {b.name}", body, crumbs)


def _outcome(success: int, reward: float, steps: int, href: str) -> str:
    word = "solved" if success else "failed"
    return f'<a href="{href}" class="{"ok" if success else "bad"}">{word}</a> ({100 * reward:.0f}, {steps} steps)'


def actions(idx: EpisodeIndex, offset: int, length: int) -> list[str | None]:
    """The actions of the episode at that byte range (no full validation: a table cell needs only these)."""
    try:
        steps = idx.read_line(offset, length).get("steps")
    except ValueError:
        return []
    return [s.get("action") if isinstance(s, dict) else None for s in steps] if isinstance(steps, list) else []


def seed_detail(root: RunsRoot, a: Run, b: Run, seed: int) -> str:
    """Both runs' actions on one seed, side by side, from the first difference on highlighted."""
    eps = []
    for run in (a, b):
        r = root.index(run).query("SELECT episode_id FROM episodes WHERE seed = ? ORDER BY row DESC LIMIT 1", (seed,))
        if not r:
            raise NotFound(f"run {run.name!r} has no episode with seed {seed}")
        eps.append(load_episode(root, run, r[0]["episode_id"])[0])
    ea, eb = eps
    diff = first_difference([s.action for s in ea.steps], [s.action for s in eb.steps])
    rows = []
    for n in range(max(len(ea.steps), len(eb.steps))):
        cells = [str(n + 1)]
        for run, ep in ((a, ea), (b, eb)):
            if n < len(ep.steps):
                s = ep.steps[n]
                link = url("/episode", run=run.name, ep=ep.episode_id, step=n + 1)
                cells.append(
                    f'<a href="{link}">{h(s.action or "(unparsed)")}</a> <span class="muted">r={s.reward:g}</span>'
                )
            else:
                cells.append("")
        rows.append(cells)
    attrs = [
        "class='first-diff'"
        if diff is not None and n == diff
        else ("class='after-diff'" if diff is not None and n > diff else "")
        for n in range(len(rows))
    ]
    verdict = "the two runs took the same actions" if diff is None else f"actions first differ at step {diff + 1}"
    head = (
        f"<p class='stats' id='seed-verdict'>{verdict} · {h(a.name)}: "
        f"{'solved' if ea.outcome.success else 'failed'} ({100 * ea.outcome.reward:.0f}) · {h(b.name)}: "
        f"{'solved' if eb.outcome.success else 'failed'} ({100 * eb.outcome.reward:.0f})</p>"
    )
    if ea.instruction:
        head += f"<p class='muted'>{h(ea.instruction[:300])}</p>"
    return head + table(["step", h(a.name), h(b.name)], rows, cls="side-by-side", row_attrs=attrs)
