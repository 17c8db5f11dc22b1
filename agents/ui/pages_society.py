"""A society run: its network coloured per round (a round slider), its metric curves, one agent's timeline
with its interview answers.

The graph is rebuilt from the run's config and seed (`societies.graphs.build_graph`, as the run did).
An agent's colour at round r is the scenario's state of it after round r (`events.sqlite`'s
`states` table: an opinion, adopted or not, a cooperation rate), on a blue-to-red scale. A run
written before states were logged is coloured by each agent's latest move up to r instead (a value
on a scale when the move carries one, else the move's name), grey before its first move.
Interview answers come from the run's `interviews.jsonl` (`societies.interviews`).
"""

from __future__ import annotations

import math
import sqlite3
import threading
from dataclasses import dataclass
from typing import Any

from agents.ui.charts import PALETTE, line_chart
from agents.ui.html import fmt, h, page, pre, table, url
from agents.ui.runs import EVENTS, INTERVIEWS, METRICS, REPORT, SUMMARY, TRAJECTORIES, NotFound, Run, RunsRoot

MAX_NODES = 300  # agents drawn (the first ones); the metrics cover everyone
MAX_EDGES = 3000
MAX_GRAPH_AGENTS = 200_000  # above this the graph is not rebuilt (seconds and hundreds of MB for a picture)
MAX_TIMELINE = 2000  # events listed on an agent's timeline
MAX_ANSWERS = 500  # interview answers listed on an agent's timeline
NO_MOVE = "#d1d5db"
# the scenarios that build a graph, and its default kind (societies.config.build)
DEFAULT_GRAPH = {"opinion": "complete", "diffusion": "erdos_renyi", "feed": "erdos_renyi"}
SIZE = 560


@dataclass
class Network:
    """What the page draws: node positions, edges among the drawn nodes, the colour scale."""

    n_agents: int
    nodes: list[tuple[float, float]]
    edges: list[tuple[int, int]]
    value_range: tuple[float, float] | None
    actions: list[str]
    rounds: list[int]
    note: str
    state_name: str | None = None  # what the colour shows when the run logged the scenario's state per round


_cache: dict[str, Network] = {}
_lock = threading.Lock()


def _events(run: Run) -> sqlite3.Connection:
    p = run.file(EVENTS)
    if p is None:
        raise NotFound(f"run {run.name!r} has no {EVENTS} (societies.run writes it with event_log=sqlite)")
    return sqlite3.connect(f"{p.resolve().as_uri()}?mode=ro", uri=True)  # read-only, whatever the path holds


def _config(run: Run) -> dict[str, Any]:
    cfg = (run.json_file(SUMMARY) or {}).get("config")
    return cfg if isinstance(cfg, dict) else {}


def network(run: Run) -> Network:
    """The drawn part of the society's network (cached per run folder and events file size)."""
    p = run.file(EVENTS)
    key = f"{run.path}:{p.stat().st_size if p else 0}"
    with _lock:
        if key in _cache:
            return _cache[key]
    cfg = _config(run)
    with _events(run) as db:
        n_db = db.execute("SELECT MAX(agent) FROM events").fetchone()[0]
        n = int(cfg.get("agents") or (n_db + 1 if n_db is not None else 0))
        state_name = _state_name(db)
        table = "states" if state_name is not None else "events"
        lo, hi = db.execute(f"SELECT MIN(value), MAX(value) FROM {table} WHERE value IS NOT NULL").fetchone()
        actions = [] if state_name is not None else _move_names(db)
        rounds = [r[0] for r in db.execute("SELECT DISTINCT round FROM metrics ORDER BY round")]
    shown = min(n, MAX_NODES)
    edges, note = _edges(cfg, n, shown)
    nodes = _layout(shown, edges)
    if shown < n:
        note += f" Showing agents 0..{shown - 1} of {n:,}."
    vrange = (lo, hi) if lo is not None else None
    net = Network(n, nodes, edges[:MAX_EDGES], vrange, actions, rounds, note, state_name)
    with _lock:
        if len(_cache) > 32:  # a society still running changes its key every round
            _cache.clear()
        _cache[key] = net
    return net


def _state_name(db: sqlite3.Connection) -> str | None:
    """What the run's `states` rows mean, or None for a run that logged no states (colour by moves then)."""
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "states" not in tables or db.execute("SELECT 1 FROM states LIMIT 1").fetchone() is None:
        return None
    row = db.execute("SELECT value FROM meta WHERE key = 'state'").fetchone() if "meta" in tables else None
    return str(row[0]) if row and row[0] else "state"


def _move_names(db: sqlite3.Connection) -> list[str]:
    return [r[0] for r in db.execute("SELECT DISTINCT action FROM events WHERE value IS NULL ORDER BY action")]


def _edges(cfg: dict[str, Any], n: int, shown: int) -> tuple[list[tuple[int, int]], str]:
    """Edges among agents 0..shown-1 of the run's graph, rebuilt from its config and seed."""
    scenario = cfg.get("scenario", "")
    spec = dict(cfg.get("graph") or {})
    kind = spec.get("kind", "auto")
    if kind == "auto":
        kind = DEFAULT_GRAPH.get(scenario)
    if kind is None:
        return [], f"{scenario} has no social graph: agents are placed on a circle."
    if kind == "complete":
        return [], "complete mixing (everyone meets everyone): edges not drawn."
    if n > MAX_GRAPH_AGENTS:
        return [], f"a {kind} graph of {n:,} agents is too big to rebuild for a picture: edges not drawn."
    if kind == "edge_list":
        return [], "the graph came from an edge-list file outside the run folder: edges not drawn."
    try:
        from societies.graphs import GraphSpec, build_graph

        g = build_graph(GraphSpec(**spec), n, int(cfg.get("seed", 0)), default=kind)
    except Exception as e:  # an old or foreign config: still show the nodes
        return [], f"the graph could not be rebuilt from the config ({type(e).__name__}): edges not drawn."
    edges = []
    for i in range(shown):
        for j in g.indices[g.indptr[i] : g.indptr[i + 1]].tolist():
            if i < j < shown:
                edges.append((i, j))
    return edges, f"{kind} graph rebuilt from the run's config (seed {cfg.get('seed', 0)})."


def _layout(n: int, edges: list[tuple[int, int]]) -> list[tuple[float, float]]:
    """Node positions in [0, 1]^2: a spring layout when there are edges, else a circle."""
    if edges:
        import networkx as nx

        g = nx.Graph()
        g.add_nodes_from(range(n))
        g.add_edges_from(edges)
        pos = nx.spring_layout(g, seed=0, iterations=60)
        xs = [p[0] for p in pos.values()]
        ys = [p[1] for p in pos.values()]
        x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
        return [((pos[i][0] - x0) / ((x1 - x0) or 1), (pos[i][1] - y0) / ((y1 - y0) or 1)) for i in range(n)]
    return [
        (0.5 + 0.5 * math.cos(2 * math.pi * i / max(n, 1)), 0.5 + 0.5 * math.sin(2 * math.pi * i / max(n, 1)))
        for i in range(n)
    ]


def rounds_played(run: Run) -> int | None:
    """The last round in the event log (it grows while a society runs), or None without one."""
    if run.file(EVENTS) is None:
        return None
    with _events(run) as db:
        return db.execute("SELECT MAX(round) FROM metrics").fetchone()[0]


def _value_color(v: float, lo: float, hi: float) -> str:
    t = 0.5 if hi <= lo else max(0.0, min(1.0, (v - lo) / (hi - lo)))
    r, g, b = int(37 + t * (220 - 37)), int(99 + t * (38 - 99)), int(235 + t * (38 - 235))  # blue -> red
    return f"#{r:02x}{g:02x}{b:02x}"


def states(run: Run, round_no: int) -> dict[str, Any]:
    """Each drawn agent's colour after `round_no`, and the metrics of that round (the slider's JSON)."""
    net = network(run)
    if net.rounds and not (min(net.rounds) <= round_no <= max(net.rounds)):
        raise NotFound(
            f"run {run.name!r} has rounds {min(net.rounds)}..{max(net.rounds)}; there is no round {round_no}"
        )
    shown = len(net.nodes)
    if net.state_name is not None:
        return _state_colors(run, net, round_no, shown)
    with _events(run) as db:
        rows = db.execute(
            "SELECT e.agent, e.action, e.value FROM events e JOIN (SELECT agent, MAX(rowid) AS m FROM events "
            "WHERE round < ? AND agent < ? GROUP BY agent) l ON e.rowid = l.m",
            (round_no, shown),
        ).fetchall()
        metrics = dict(db.execute("SELECT name, value FROM metrics WHERE round = ?", (round_no,)).fetchall())
    colors = [NO_MOVE] * shown
    labels = ["no move yet"] * shown
    for agent, action, value in rows:
        if value is not None and net.value_range is not None:
            colors[agent] = _value_color(value, *net.value_range)
            labels[agent] = f"{action} {value:.3g}"
        else:
            k = net.actions.index(action) if action in net.actions else 0
            colors[agent] = PALETTE[k % len(PALETTE)]
            labels[agent] = str(action)
    moved = sum(1 for c in colors if c != NO_MOVE)
    return {"round": round_no, "colors": colors, "labels": labels, "moved": moved, "metrics": metrics}


def _state_colors(run: Run, net: Network, round_no: int, shown: int) -> dict[str, Any]:
    """Colours by the scenario's state of each drawn agent after `round_no` (grey where none was logged)."""
    with _events(run) as db:
        rows = db.execute("SELECT agent, value FROM states WHERE round = ? AND agent < ?", (round_no, shown)).fetchall()
        metrics = dict(db.execute("SELECT name, value FROM metrics WHERE round = ?", (round_no,)).fetchall())
    colors = [NO_MOVE] * shown
    labels = ["no state logged"] * shown
    lo, hi = net.value_range or (0.0, 1.0)
    for agent, value in rows:
        if value is not None:
            colors[agent] = _value_color(value, lo, hi)
            labels[agent] = f"{net.state_name} = {value:.3g}"
    logged = sum(1 for c in colors if c != NO_MOVE)
    return {"round": round_no, "colors": colors, "labels": labels, "moved": logged, "metrics": metrics}


def network_svg(run: Run, net: Network, first: dict[str, Any]) -> str:
    parts = [
        f'<svg id="network" viewBox="-10 -10 {SIZE + 20} {SIZE + 20}" width="{SIZE}" height="{SIZE}" role="img" aria-label="society network">'
    ]
    for i, j in net.edges:
        (x1, y1), (x2, y2) = net.nodes[i], net.nodes[j]
        parts.append(
            f'<line x1="{x1 * SIZE:.1f}" y1="{y1 * SIZE:.1f}" x2="{x2 * SIZE:.1f}" y2="{y2 * SIZE:.1f}" class="edge"/>'
        )
    r = 7 if len(net.nodes) <= 60 else 4
    for i, (x, y) in enumerate(net.nodes):
        parts.append(
            f'<a href="{url("/society", run=run.name, agent=i)}"><circle id="node-{i}" class="node" cx="{x * SIZE:.1f}" '
            f'cy="{y * SIZE:.1f}" r="{r}" fill="{first["colors"][i]}"><title>agent_{i}: {h(first["labels"][i])}</title></circle></a>'
        )
    parts.append("</svg>")
    return "".join(parts)


def legend(net: Network) -> str:
    if net.state_name is not None:
        lo, hi = net.value_range or (0.0, 1.0)
        return (
            f"<p class='legend' id='legend'>colour: <b>{h(net.state_name)}</b> after the round · "
            f"<span class='swatch' style='background:{_value_color(lo, lo, hi)}'></span> {lo:.3g} … "
            f"<span class='swatch' style='background:{_value_color(hi, lo, hi)}'></span> {hi:.3g} · "
            f"<span class='swatch' style='background:{NO_MOVE}'></span> not logged</p>"
        )
    items = [f"<span class='swatch' style='background:{NO_MOVE}'></span> no move yet"]
    if net.value_range is not None:
        lo, hi = net.value_range
        items.append(
            f"<span class='swatch' style='background:{_value_color(lo, lo, hi)}'></span> {lo:.3g} … "
            f"<span class='swatch' style='background:{_value_color(hi, lo, hi)}'></span> {hi:.3g} (a move's value)"
        )
    items += [
        f"<span class='swatch' style='background:{PALETTE[k % len(PALETTE)]}'></span> {h(a)}"
        for k, a in enumerate(net.actions)
    ]
    return "<p class='legend'>" + " · ".join(items) + "</p>"


def metric_charts(run: Run) -> str:
    m = run.json_file(METRICS)
    if not m or not isinstance(m.get("series"), dict) or not isinstance(m.get("rounds"), list):
        return f"<p class='muted'>no {METRICS}</p>"
    rounds = [float(r) for r in m["rounds"]]
    charts = []
    for name, vals in list(m["series"].items())[:16]:
        if isinstance(vals, list):
            vals = [v if isinstance(v, (int, float)) else None for v in vals]
            charts.append(
                line_chart(rounds, {name: vals}, title=name, width=420, height=180, chart_id=f"metric-{name}")
            )
    return "<div class='charts'>" + "".join(charts) + "</div>"


def society_page(root: RunsRoot, run: Run, agent: int | None, round_no: int | None) -> str:
    crumbs = [(run.name, url("/run", run=run.name)), ("society", url("/society", run=run.name))]
    if not run.is_society:
        raise NotFound(
            f"run {run.name!r} is not a society: it has no {METRICS} or {EVENTS} (societies.run writes them)"
        )
    if agent is not None:
        return page(f"{run.name}: agent_{agent}", agent_timeline(root, run, agent), crumbs)
    summary = run.json_file(SUMMARY) or {}
    cfg = summary.get("config") or {}
    if run.file(EVENTS) is None:  # a Parquet event log (event_log=parquet, sharded runs): the curves only
        note = f"<p class='muted'>No {EVENTS} (the run kept its moves in Parquet): the network by round needs it.</p>"
        return page(f"{run.name}: society", note + "<h2>Metrics over rounds</h2>" + metric_charts(run), crumbs)
    net = network(run)
    if not net.rounds:
        raise NotFound(f"run {run.name!r} has no rounds in its event log yet")
    last = max(net.rounds)
    current = last if round_no is None else round_no
    first = states(run, current)
    colour_note = (
        f"the scenario's state of each agent after the round ({h(net.state_name)})"
        if net.state_name is not None
        else "each agent's latest move up to the round (this run logged no per-agent state)"
    )
    head = (
        f"<p class='stats'>{h(cfg.get('scenario', '?'))} · {fmt(net.n_agents)} agents · {len(net.rounds)} rounds"
        + (f" · brain {h(cfg.get('brain', {}).get('name'))}" if isinstance(cfg.get("brain"), dict) else "")
        + (f" · wall {fmt(summary.get('wall_s'))} s" if summary.get("wall_s") is not None else "")
        + f"</p><p class='muted'>{h(net.note)} Colour: {colour_note}. Click an agent for its timeline and interview answers.</p>"
    )
    count_note = "agents shown have a logged state" if net.state_name is not None else "agents shown have moved"
    slider = (
        f"<div class='rounds' id='rounds' data-run='{h(run.name)}'>round <input type='range' id='round-slider' "
        f"min='{min(net.rounds)}' max='{last}' value='{current}'> <b id='round-label'>{current}</b> of {last} · "
        f"<span id='round-moved'>{first['moved']}</span> {count_note}</div>"
    )
    mrows = "".join(
        f"<tr><td>{h(k)}</td><td class='metric-value' data-metric='{h(k)}'>{fmt(v)}</td></tr>"
        for k, v in first["metrics"].items()
    )
    body = (
        head
        + slider
        + legend(net)
        + "<div class='society'>"
        + network_svg(run, net, first)
        + f"<table class='round-metrics' id='round-metrics'><thead><tr><th>metric</th><th>this round</th></tr></thead><tbody>{mrows}</tbody></table></div>"
        + "<h2>Metrics over rounds</h2>"
        + metric_charts(run)
    )
    if summary.get("final_metrics"):
        body += (
            "<details><summary>final metrics</summary>"
            + pre("\n".join(f"{k} = {v}" for k, v in summary["final_metrics"].items()))
            + "</details>"
        )
    return page(f"{run.name}: society", body, crumbs)


def agent_timeline(root: RunsRoot, run: Run, agent: int) -> str:
    net = network(run)
    if not 0 <= agent < max(net.n_agents, 1):
        raise NotFound(f"run {run.name!r} has agents 0..{net.n_agents - 1}; there is no agent {agent}")
    with _events(run) as db:
        rows = db.execute(
            "SELECT round, action, value FROM events WHERE agent = ? ORDER BY rowid LIMIT ?", (agent, MAX_TIMELINE + 1)
        ).fetchall()
        state_rows = (
            db.execute(
                "SELECT round, value FROM states WHERE agent = ? AND value IS NOT NULL ORDER BY round LIMIT ?",
                (agent, MAX_TIMELINE),
            ).fetchall()
            if net.state_name is not None
            else []
        )
    more = len(rows) > MAX_TIMELINE
    body = f"<p class='stats' id='agent-stats'>agent_{agent}: {min(len(rows), MAX_TIMELINE)}{'+' if more else ''} moves</p>"
    ep_link = _trajectory_link(root, run, agent)
    if ep_link:
        body += f"<p>{ep_link}</p>"
    body += interview_section(run, agent)
    if state_rows:
        body += line_chart(
            [float(r) for r, _ in state_rows],
            {str(net.state_name): [v for _, v in state_rows]},
            title=f"agent_{agent}'s state after each round: {net.state_name}",
            chart_id="agent-state",
        )
    values = [(r[0], r[2]) for r in rows[:MAX_TIMELINE] if r[2] is not None]
    if values:
        body += line_chart(
            [float(r) for r, _ in values],
            {"value": [v for _, v in values]},
            title=f"agent_{agent}'s move values",
            chart_id="agent-values",
        )
    body += table(
        ["round", "move", "value"],
        [[str(r + 1), h(a), "" if v is None else f"{v:.4g}"] for r, a, v in rows[:MAX_TIMELINE]],
        cls="timeline",
    )
    report = run.json_file(REPORT)
    if report:
        said = _mentions(report, f"agent_{agent}")
        if said:
            body += "<h2>In the scenario's report</h2>" + pre("\n".join(said[:200]))
    return body


def interview_section(run: Run, agent: int) -> str:
    """The agent's interview answers in the run's `interviews.jsonl`: the round, the question, who answered."""
    p = run.file(INTERVIEWS)
    if p is None:
        return (
            "<h2>Interview answers</h2><p class='muted' id='interviews'>this run asked no interviews "
            "(societies.run asks them with interview.questions=[...])</p>"
        )
    from societies.interviews import read_interviews

    recs = list(read_interviews(p, agent=f"agent_{agent}", limit=MAX_ANSWERS + 1))
    if not recs:
        return f"<h2>Interview answers</h2><p class='muted' id='interviews'>agent_{agent} was not interviewed</p>"
    more = f" (the first {MAX_ANSWERS})" if len(recs) > MAX_ANSWERS else ""
    rows = [
        [
            str(r.round),
            h(r.question),
            f"<span class='answer'>{h(r.answer)}</span>",
            h(f"{r.seat} seat ({r.answered_by})"),
        ]
        for r in recs[:MAX_ANSWERS]
    ]
    return f"<h2>Interview answers{more}</h2>" + table(
        ["after round", "question", "answer", "answered by"], rows, cls="interviews"
    ).replace("<table", "<table id='interviews'", 1)


def _trajectory_link(root: RunsRoot, run: Run, agent: int) -> str:
    if run.file(TRAJECTORIES) is None:
        return ""
    rows = root.index(run).query("SELECT episode_id FROM episodes WHERE agent = ? LIMIT 1", (f"agent_{agent}",))
    if not rows:
        return "no trajectory recorded for this agent (trajectory_agents= sets how many are)"
    return f'<a id="agent-trajectory" href="{url("/episode", run=run.name, ep=rows[0]["episode_id"])}">its trajectory, step by step</a>'


def _mentions(report: Any, name: str, path: str = "") -> list[str]:
    """Lines of the report that mention the agent (the town's utterances, who heard from whom)."""
    out: list[str] = []
    if isinstance(report, dict):
        for k, v in report.items():
            out += _mentions(v, name, f"{path}{k}.")
    elif isinstance(report, list):
        for v in report:
            out += _mentions(v, name, path)
    elif isinstance(report, str) and name in report.split() or report == name:
        out.append(f"{path[:-1]}: {report}")
    return out
