"""The run list and one run's episode table (filters, paging), both answered from the index."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents.ui.html import fmt, h, page, pct, table, url
from agents.ui.runs import SUMMARY, TRAJECTORIES, Indexing, Run, RunsRoot

PAGE_SIZE = 50
SORTS = {"file": "row", "reward": "reward DESC, row", "steps": "steps DESC, row", "seed": "seed, row"}


def run_totals(root: RunsRoot, run: Run) -> dict[str, Any]:
    """Episodes, success rate, mean score and steps of a run, from its index."""
    if run.file(TRAJECTORIES) is None:
        return {"episodes": 0}
    return root.index(run).totals()


def run_kind(run: Run, totals: dict[str, Any]) -> str:
    if run.is_society:
        return "society"
    if totals.get("env") == "coding":
        return "coding"
    return "prm" if totals.get("with_prm") else "episodes"


def runs_page(root: RunsRoot) -> str:
    runs = root.runs()
    rows = []
    for run in runs:
        try:
            t = run_totals(root, run)
        except Indexing as e:  # a big store's first visit: the list does not wait for it
            t = {"episodes": 0, "indexing": f"indexing {100 * e.done / max(e.total, 1):.0f}%"}
        summary = run.json_file(SUMMARY) or {}
        kind = run_kind(run, t)
        env = t.get("env") or summary.get("env") or (summary.get("config") or {}).get("scenario", "")
        brain = t.get("brain") or summary.get("brain") or ""
        links = [f'<a class="run-link" href="{url("/run", run=run.name)}">{h(run.name)}</a>']
        if run.is_society:
            links.append(f'<a href="{url("/society", run=run.name)}">society</a>')
        links.append(f'<a href="{url("/live", run=run.name)}">live</a>')
        rows.append(
            [
                " · ".join(links),
                h(kind),
                h(env),
                h(brain),
                h(t["indexing"]) if "indexing" in t else fmt(t["episodes"]),
                pct(t.get("success_rate")),
                fmt(t.get("mean_score")) if t.get("mean_score") is not None else "",
                fmt(t.get("mean_steps")) if t.get("mean_steps") is not None else "",
            ]
        )
    if not rows:
        body = f"<p>No runs under {h(root.root.name)}/ yet: a run is a folder holding {TRAJECTORIES} or {SUMMARY}.</p>"
    else:
        body = table(
            ["run", "kind", "env", "brain", "episodes", "success", "mean score", "mean steps"], rows, cls="runs"
        )

        def options(selected: int) -> str:
            return "".join(
                f'<option value="{h(r.name)}"{" selected" if n == selected else ""}>{h(r.name)}</option>'
                for n, r in enumerate(runs)
            )

        body += (
            "<h2>Compare two runs</h2><form action='/compare' class='compare-form'>"
            f"<select name='a' id='cmp-a'>{options(0)}</select> vs "
            f"<select name='b' id='cmp-b'>{options(min(1, len(runs) - 1))}</select> "
            "<button type='submit'>compare</button></form>"
        )
    return page("Runs", body)


@dataclass
class EpisodeFilter:
    """What the episode table shows: outcome, text, seed and step bounds, sort order, page."""

    outcome: str = "all"  # all | solved | failed | errors | truncated
    q: str = ""
    seed: int | None = None
    min_steps: int | None = None
    max_steps: int | None = None
    sort: str = "file"
    page: int = 1

    def where(self) -> tuple[str, tuple[Any, ...]]:
        conds: list[str] = []
        params: list[Any] = []
        conds += {
            "solved": ["success = 1"],
            "failed": ["success = 0"],
            "errors": ["invalid + parse_failures > 0"],
            "truncated": ["truncated = 1"],
        }.get(self.outcome, [])
        if self.q:
            conds.append("(instruction LIKE ? OR episode_id LIKE ? OR agent LIKE ?)")
            params += [f"%{self.q}%"] * 3
        if self.seed is not None:
            conds.append("seed = ?")
            params.append(self.seed)
        if self.min_steps is not None:
            conds.append("steps >= ?")
            params.append(self.min_steps)
        if self.max_steps is not None:
            conds.append("steps <= ?")
            params.append(self.max_steps)
        return (" WHERE " + " AND ".join(conds) if conds else ""), tuple(params)


def check_filter(f: EpisodeFilter) -> None:
    if f.outcome not in ("all", "solved", "failed", "errors", "truncated"):
        raise ValueError(f"outcome={f.outcome!r} is not one of all, solved, failed, errors, truncated")
    if f.sort not in SORTS:
        raise ValueError(f"sort={f.sort!r} is not one of {', '.join(SORTS)}")
    if f.page < 1:
        raise ValueError(f"page={f.page} must be 1 or more")
    if len(f.q) > 200:
        raise ValueError("q (the text filter) is at most 200 characters")


def run_page(root: RunsRoot, run: Run, f: EpisodeFilter) -> str:
    check_filter(f)
    summary = run.json_file(SUMMARY) or {}
    head = []
    if run.is_society:
        head.append(
            f'<p><a id="society-link" href="{url("/society", run=run.name)}">society view</a>: network, rounds, metrics</p>'
        )
    if run.file(TRAJECTORIES) is None:
        head.append(
            f"<p>No episodes recorded yet ({TRAJECTORIES} is not there). "
            f"<a href='{url('/live', run=run.name)}'>Follow it live</a>.</p>"
        )
        return page(run.name, "".join(head), [(run.name, url("/run", run=run.name))])
    idx = root.index(run)
    t = run_totals(root, run)
    where, params = f.where()
    n = t["episodes"] if not where else idx.query(f"SELECT COUNT(*) AS n FROM episodes{where}", params)[0]["n"]
    rows = idx.query(
        f"SELECT row, episode_id, seed, success, reward, steps, invalid, parse_failures, tokens_in, tokens_out, "
        f"wall_s, has_prm, instruction, agent FROM episodes{where} ORDER BY {SORTS[f.sort]} LIMIT ? OFFSET ?",
        params + (PAGE_SIZE, (f.page - 1) * PAGE_SIZE),
    )
    stats = (
        f"<p class='stats' id='run-stats'><b>{fmt(t['episodes'])}</b> episodes · success "
        f"<b>{pct(t['success_rate'])}</b> · mean score <b>{fmt(t['mean_score'])}</b> · mean steps "
        f"<b>{fmt(t['mean_steps'])}</b> · tokens {fmt(t['tokens_in'])} in / {fmt(t['tokens_out'])} out"
        f" · env {h(t['env'])} · brain {h(t['brain'])} {h(t['model'])}"
        f" · <a href='{url('/live', run=run.name)}'>follow live</a></p>"
    )
    if summary.get("config"):
        stats += f"<details><summary>config</summary><pre>{h(_config_lines(summary['config']))}</pre></details>"
    opts = "".join(
        f'<option value="{o}"{" selected" if o == f.outcome else ""}>{o}</option>'
        for o in ("all", "solved", "failed", "errors", "truncated")
    )
    sorts = "".join(f'<option value="{o}"{" selected" if o == f.sort else ""}>{o}</option>' for o in SORTS)
    form = (
        f"<form class='filters' id='filters'><input type='hidden' name='run' value='{h(run.name)}'>"
        f"<label>outcome <select name='outcome'>{opts}</select></label> "
        f"<label>text <input name='q' value='{h(f.q)}' size='16'></label> "
        f"<label>seed <input name='seed' value='{h(f.seed)}' size='6'></label> "
        f"<label>steps ≥ <input name='min_steps' value='{h(f.min_steps)}' size='4'></label> "
        f"<label>≤ <input name='max_steps' value='{h(f.max_steps)}' size='4'></label> "
        f"<label>sort <select name='sort'>{sorts}</select></label> <button type='submit'>filter</button></form>"
    )
    body_rows = []
    for r in rows:
        ep = url("/episode", run=run.name, ep=r["episode_id"])
        body_rows.append(
            [
                f'<a class="ep-link" href="{ep}">{h(r["episode_id"][:40])}</a>',
                fmt(r["seed"]),
                f'<span class="{"ok" if r["success"] else "bad"}">{"solved" if r["success"] else "failed"}</span>',
                fmt(100 * r["reward"]),
                fmt(r["steps"]),
                fmt(r["invalid"] + r["parse_failures"]),
                f"{fmt(r['tokens_in'])} / {fmt(r['tokens_out'])}",
                f"{r['wall_s']:.2f} s",
                "PRM" if r["has_prm"] else "",
                h((r["agent"] + ": " if r["agent"] else "") + (r["instruction"] or "")[:120]),
            ]
        )
    pages = max(1, -(-n // PAGE_SIZE))
    nav = []
    args = dict(
        run=run.name, outcome=f.outcome, q=f.q, seed=f.seed, min_steps=f.min_steps, max_steps=f.max_steps, sort=f.sort
    )
    if f.page > 1:
        nav.append(f'<a id="prev-page" href="{url("/run", **args, page=f.page - 1)}">← previous</a>')
    nav.append(f"page {f.page} of {pages} ({fmt(n)} matching)")
    if f.page < pages:
        nav.append(f'<a id="next-page" href="{url("/run", **args, page=f.page + 1)}">next →</a>')
    body = (
        "".join(head)
        + stats
        + form
        + table(
            ["episode", "seed", "outcome", "score", "steps", "errors", "tokens in / out", "wall", "", "instruction"],
            body_rows,
            cls="episodes",
        )
        + f"<p class='pager'>{' · '.join(nav)}</p>"
    )
    return page(run.name, body, [(run.name, url("/run", run=run.name))])


def _config_lines(cfg: Any, prefix: str = "") -> str:
    """A nested config as `a.b = value` lines (what a user would type on the command line)."""
    if isinstance(cfg, dict):
        return "\n".join(_config_lines(v, f"{prefix}{k}.") for k, v in cfg.items() if v not in ({}, None))
    return f"{prefix[:-1]} = {cfg}"
