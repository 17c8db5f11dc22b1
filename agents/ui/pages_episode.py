"""One episode, step by step: what the agent saw, thought, did, and what came back; the PRM's scores; coding trials."""

from __future__ import annotations

import difflib
import json
from typing import Any

from pydantic import ValidationError

from agents.trajectories.schema import EpisodeRecord, StepRecord
from agents.ui.charts import line_chart
from agents.ui.html import fmt, h, page, pre, table, url
from agents.ui.runs import NotFound, Run, RunsRoot

MAX_TEXT = 20_000  # characters of one observation / prompt shown (the rest is cut, and says so)


def load_episode(root: RunsRoot, run: Run, episode_id: str | None) -> tuple[EpisodeRecord, int]:
    """The episode with that id and its row number, or NotFound saying what exists."""
    if not episode_id:
        raise NotFound("no episode named: pass ?ep=<episode id>, as listed on the run's page")
    if len(episode_id) > 300:
        raise NotFound("episode id too long (at most 300 characters)")
    idx = root.index(run)
    rows = idx.query(
        "SELECT row, offset, length FROM episodes WHERE episode_id = ? ORDER BY row DESC LIMIT 1", (episode_id,)
    )
    if not rows:
        raise NotFound(f"run {run.name!r} has no episode {episode_id!r}")
    r = rows[0]
    try:
        return EpisodeRecord.model_validate(idx.read_line(r["offset"], r["length"])), r["row"]
    except (ValueError, ValidationError) as e:
        raise NotFound(f"episode {episode_id!r} of run {run.name!r} could not be read: {str(e)[:300]}") from e


def cut(text: str | None, limit: int = MAX_TEXT) -> str:
    if text is None:
        return ""
    return text if len(text) <= limit else text[:limit] + f"\n… ({len(text) - limit:,} more characters not shown)"


def step_section(s: StepRecord, n: int, total: int) -> str:
    err = s.parse_error or s.env_error
    flags = " ".join(x for x in ("terminated" if s.terminated else "", "truncated" if s.truncated else "") if x)
    facts = [
        ("reward", fmt(s.reward)),
        ("tokens in / out", f"{s.tokens_in:,} / {s.tokens_out:,}"),
        ("latency", f"{s.latency_s:.3f} s"),
    ]
    if s.output_logprobs:
        facts.append(("output log-likelihood", f"{sum(s.output_logprobs):.3f} over {len(s.output_logprobs)} tokens"))
    if s.prm_score is not None:
        facts.append(("PRM promise", f"{s.prm_score:.4f}"))
    if s.prm_progress is not None:
        facts.append(("PRM progress", f"{s.prm_progress:+.4f}"))
    if flags:
        facts.append(("ends", h(flags)))
    parts = [
        f"<h3>step {n + 1} of {total}</h3>",
        "<dl class='facts'>"
        + "".join(f"<dt>{h(k)}</dt><dd class='fact-{h(k.split()[0])}'>{v}</dd>" for k, v in facts)
        + "</dl>",
    ]
    if s.thought:
        parts.append(f"<h4>thought</h4>{pre(cut(s.thought), 'thought')}")
    parts.append(
        f"<h4>action</h4>{pre(s.action if s.action is not None else '(no action: the output did not parse)', 'action')}"
    )
    if err:
        parts.append(f"<h4>error</h4>{pre(cut(err), 'error')}")
    parts.append(f"<h4>observation</h4>{pre(cut(s.observation), 'observation')}")
    if s.candidates:
        ranked = sorted(s.candidates, key=lambda c: c.score, reverse=True)
        rows = [
            [
                str(k + 1),
                h(c.text) + (" <b>(chosen)</b>" if s.action is not None and c.text.strip() == s.action.strip() else ""),
                f"{c.logprob:.4f}",
                str(c.n_tokens),
                f"{c.score:.4f}",
            ]
            for k, c in enumerate(ranked)
        ]
        parts.append(
            "<h4>ranked candidates</h4>"
            + table(["rank", "candidate", "log-likelihood", "tokens", "score"], rows, cls="candidates")
        )
    if s.memory_context:
        parts.append(f"<h4>memory context</h4>{pre(cut(s.memory_context), 'memory')}")
    if s.raw_output and s.raw_output != s.action:
        parts.append(f"<details><summary>raw model output</summary>{pre(cut(s.raw_output))}</details>")
    if s.messages:
        prompt = "\n\n".join(f"[{m.get('role', '?')}]\n{m.get('content', '')}" for m in s.messages)
        parts.append(f"<details><summary>prompt ({len(s.messages)} messages)</summary>{pre(cut(prompt))}</details>")
    if s.info:
        info = {k: v for k, v in s.info.items() if k not in ("tools",)}
        parts.append(
            f"<details><summary>env info</summary>{pre(cut(json.dumps(info, indent=1, default=str)))}</details>"
        )
    hidden = "" if n == 0 else " hidden"
    return f"<section class='step' data-step='{n}' id='step-{n}'{hidden}>{''.join(parts)}</section>"


def prm_chart(ep: EpisodeRecord) -> str:
    if not any(s.prm_score is not None for s in ep.steps):
        return ""
    xs = [s + 1 for s in range(len(ep.steps))]
    chart = line_chart(
        xs,
        {"promise": [s.prm_score for s in ep.steps], "progress": [s.prm_progress for s in ep.steps]},
        title="PRM promise and progress per step (click a point to open its step)",
        chart_id="prm-chart",
        point_links="step",
    )
    return f"<section class='prm'><h2>Process reward</h2>{chart}</section>"


def coding_sections(ep: EpisodeRecord) -> str:
    """A coding trial: the commands with their outputs, the files changed (the workspace from reset to submit,
    and each edit), and the hidden tests' verdict."""
    cmds, edits = [], []
    for s in ep.steps:
        if s.action is None:
            continue
        change = edit_diff(s.action)
        if change is None:
            cmds.append(
                [
                    str(s.index + 1),
                    pre(s.action, "cmd"),
                    f"<details><summary>{h(_first_line(s.observation))}</summary>{pre(cut(s.observation, 5000))}</details>",
                ]
            )
            continue
        path, lines = change
        status = f" <span class='bad'>(refused: {h(s.env_error[:200])})</span>" if s.env_error else ""
        body = "".join(f"<span class='{_DIFF_CLASS.get(x[:1], '')}'>{h(x)}</span>\n" for x in lines[:400])
        edits.append(f"<h4>step {s.index + 1}: {h(path)}{status}</h4><pre class='diff'>{body}</pre>")
    grade = next((s.info.get("grade") for s in reversed(ep.steps) if isinstance(s.info.get("grade"), dict)), None)
    parts = [f"<section class='coding'><h2>Task</h2>{pre(cut(ep.instruction or ep.initial_observation), 'task')}"]
    parts.append(
        "<h2>Commands</h2>" + (table(["step", "command", "output"], cmds, cls="commands") if cmds else "<p>none</p>")
    )
    parts.append("<h2>Files changed</h2>" + workspace_changes(ep))
    parts.append(
        "<h3>Edits, step by step</h3><div id='edits'><p class='muted'>each create / str_replace the agent sent, "
        "as a diff, in order:</p>" + ("".join(edits) if edits else "<p>none</p>") + "</div>"
    )
    if grade:
        tests = [
            [
                h(t.get("name")),
                f"<span class='{'ok' if t.get('outcome') == 'passed' else 'bad'}'>{h(t.get('outcome'))}</span>",
            ]
            for t in grade.get("tests", [])
        ]
        parts.append(
            f"<h2>Verifier</h2><p id='verifier'>reward <b>{fmt(grade.get('reward'))}</b> · "
            f"{fmt(grade.get('passed'))}/{fmt(grade.get('total'))} hidden tests passed · service started: "
            f"{fmt(grade.get('service_started'))}</p>"
            + table(["test", "outcome"], tests, cls="tests")
            + pre(cut(grade.get("log", ""), 5000))
        )
    else:
        parts.append("<h2>Verifier</h2><p>not graded (the episode ended before submit[])</p>")
    return "".join(parts) + "</section>"


_DIFF_CLASS = {"+": "add", "-": "del", "@": "hunk"}
MAX_DIFF_LINES = 2000  # lines of one file's diff drawn (the env already bounds the text)


def workspace_changes(ep: EpisodeRecord) -> str:
    """The workspace from reset to submit as the env recorded it (`info["workspace_diff"]`, envs/coding/workspace_diff.py)."""
    from pydantic import ValidationError

    from envs.coding.workspace_diff import WorkspaceDiff  # the env's own model (imported on use)

    raw = next((s.info.get("workspace_diff") for s in reversed(ep.steps) if "workspace_diff" in s.info), None)
    if raw is None:
        return (
            "<p class='muted' id='workspace-diff'>no workspace diff in this trajectory: the coding env records one "
            "at submit[] (an episode that ended before submitting, or one recorded before the env kept it)</p>"
        )
    try:
        wd = WorkspaceDiff.model_validate(raw)
    except ValidationError:
        return "<p class='bad' id='workspace-diff'>the recorded workspace diff is damaged (not the env's format)</p>"
    head = f"{wd.changed} file{'' if wd.changed == 1 else 's'} changed from reset to submit[]"
    if wd.note:
        head += f" · {h(wd.note)}"
    elif wd.truncated:
        head += " · some diffs were cut (see each file)"
    blocks = []
    for f in wd.files:
        tags = [f.status] + (["binary"] if f.binary else []) + ([f.note] if f.note else [])
        lines = (f.diff or "").splitlines()
        body = "".join(
            f"<span class='{_DIFF_CLASS.get(x[:1], '') if not x.startswith(('---', '+++')) else 'hunk'}'>{h(x)}</span>\n"
            for x in lines[:MAX_DIFF_LINES]
        )
        blocks.append(
            f"<div class='file-change' data-path='{h(f.path)}' data-status='{h(f.status)}'><h4>{h(f.path)} "
            f"<span class='muted'>({h(' · '.join(tags))})</span></h4>"
            + (f"<pre class='diff'>{body}</pre>" if body else "")
            + "</div>"
        )
    return f"<div id='workspace-diff'><p class='stats'>{head}</p>{''.join(blocks)}</div>"


def edit_diff(action: str) -> tuple[str, list[str]] | None:
    """A create / str_replace action as (path, unified diff lines); None for any other action (or one that does
    not parse: it is listed with the commands, with the env's answer)."""
    from envs.coding.tools import ActionError, parse_action  # the coding env's own parser (imported on use)

    try:
        call = parse_action(action)
    except ActionError:
        return None
    if call.tool == "create":
        new = str(call.args["content"]).splitlines()
        return str(call.args["path"]), [
            f"@@ new file, {len(new)} line{'' if len(new) == 1 else 's'} @@",
            *(f"+{x}" for x in new),
        ]
    if call.tool == "str_replace":
        old, new = str(call.args["old"]).splitlines(), str(call.args["new"]).splitlines()
        diff = difflib.unified_diff(old, new, lineterm="", n=2)
        return str(call.args["path"]), [x for x in diff if not x.startswith(("---", "+++"))]
    return None


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "(no output)"
    return line[:100]


def episode_page(root: RunsRoot, run: Run, episode_id: str | None, step: int | None = None) -> str:
    ep, row = load_episode(root, run, episode_id)
    o, st = ep.outcome, ep.stats
    head = (
        f"<p class='stats' id='ep-stats'><span class='{'ok' if o.success else 'bad'}' id='ep-outcome'>"
        f"{'solved' if o.success else 'failed'}</span> · reward <b>{fmt(o.reward)}</b> (total {fmt(o.total_reward)}) · "
        f"{st.steps} steps ({st.invalid_actions} invalid, {st.parse_failures} unparsed) · tokens {st.tokens_in:,} in / "
        f"{st.tokens_out:,} out · brain {st.brain_time_s:.2f} s of {st.wall_time_s:.2f} s · seed {ep.seed} · "
        f"{h(ep.env)} / {h(ep.brain)} {h(ep.model)}"
        + (f" · ended: {h(o.truncation_reason)}" if o.truncation_reason else "")
        + "</p>"
    )
    nav = []
    idx = root.index(run)
    for label, op, order in (("← previous episode", "<", "DESC"), ("next episode →", ">", "ASC")):
        r = idx.query(f"SELECT episode_id FROM episodes WHERE row {op} ? ORDER BY row {order} LIMIT 1", (row,))
        if r:
            nav.append(f'<a class="ep-nav" href="{url("/episode", run=run.name, ep=r[0]["episode_id"])}">{label}</a>')
    head += f"<p>{' · '.join(nav)}</p>"
    if ep.instruction and ep.env != "coding":  # a coding trial shows it as its task
        head += f"<h2>Instruction</h2>{pre(cut(ep.instruction, 4000), 'instruction')}"
    if ep.initial_observation:
        head += f"<details><summary>first observation</summary>{pre(cut(ep.initial_observation))}</details>"
    total = len(ep.steps)
    first = 0 if step is None else step - 1
    if step is not None and not 1 <= step <= max(1, total):
        raise NotFound(f"episode {ep.episode_id!r} has steps 1..{total}; there is no step {step}")
    outline = "".join(
        f"<li><a href='#step-{n}' class='step-jump{' bad' if (s.parse_error or s.env_error) else ''}' data-step='{n}'>"
        f"{h((s.action or '(unparsed)')[:60])}</a></li>"
        for n, s in enumerate(ep.steps)
    )
    steps = "".join(step_section(s, n, total) for n, s in enumerate(ep.steps))
    player = (
        f"<div class='player' id='player' data-steps='{total}' data-initial='{first}'>"
        "<button id='step-prev' type='button'>◀ prev</button> "
        f"<input type='range' id='step-slider' min='1' max='{max(1, total)}' value='{first + 1}'> "
        "<button id='step-next' type='button'>next ▶</button> "
        f"<span id='step-label'>step {first + 1} of {total}</span> <span class='muted'>(← → keys)</span></div>"
    )
    body = head + prm_chart(ep)
    if ep.env == "coding":
        body += coding_sections(ep)
    body += "<h2>Steps</h2>" + (
        player + f"<div class='steps'><ol class='outline'>{outline}</ol><div class='step-view'>{steps}</div></div>"
        if total
        else "<p>no steps recorded</p>"
    )
    if ep.meta:
        body += (
            f"<details><summary>meta</summary>{pre(json.dumps(ep.meta, indent=1, default=str)[:MAX_TEXT])}</details>"
        )
    return page(
        f"episode {ep.episode_id}",
        body,
        [(run.name, url("/run", run=run.name)), (ep.episode_id, url("/episode", run=run.name, ep=ep.episode_id))],
    )


def episode_json(ep: EpisodeRecord) -> dict[str, Any]:
    return ep.model_dump(
        mode="json", exclude={"steps": {"__all__": {"messages", "prompt_token_ids", "output_token_ids"}}}
    )
