"""Turn a shop state into what an agent or a person sees: `text`, `text_rich` or `html`.

`text` follows WebShop's simple mode (visible strings joined by " [SEP] "); `text_rich` marks
buttons as `[button] ... [button_]` and chosen options as `[clicked button] ... [clicked button_]`;
`html` is a page whose buttons carry the exact action string, so the web view posts them back.
"""

from __future__ import annotations

import html as _html
import re
from dataclasses import dataclass
from typing import Literal

from .catalog import Catalog
from .reward import RewardBreakdown
from .shop import BACK_TO_SEARCH, BUY_NOW, DETAILS, NEXT, PREV, Page, ShopState

ObservationMode = Literal["text", "text_rich", "html"]
MODES: tuple[str, ...] = ("text", "text_rich", "html")


@dataclass(frozen=True)
class View:
    state: ShopState
    catalog: Catalog
    instruction: str
    breakdown: RewardBreakdown | None = None


# Each page is a list of parts: ("text", s) | ("button", label) | ("chosen", label) | ("title", s)
Part = tuple[str, str]


def _detail_lines(view: View) -> list[str]:
    p = view.catalog.product(view.state.open_item)
    if view.state.detail == "description":
        return [p.description]
    if view.state.detail == "features":
        return list(p.bullets)
    if not p.reviews:
        return ["No reviews yet."]
    return [f"{r.title} ({r.score}/5): {r.body}" for r in p.reviews]


def parts(view: View) -> list[Part]:
    s, cat = view.state, view.catalog
    head: list[Part] = [("text", "Instruction:"), ("text", view.instruction)]
    if s.page is Page.SEARCH:
        return [("text", "WebShop"), *head, ("button", "Search")]
    if s.page is Page.RESULTS:
        out = [*head, ("button", "Back to Search"), ("text", f"Page {s.page_num} (Total results: {len(s.results)})")]
        if s.page_num > 1:
            out.append(("button", "< Prev"))
        if s.page_num < s.n_pages:
            out.append(("button", "Next >"))
        if not s.results:
            out.append(("text", f"No products match '{s.query}'."))
        for i in s.page_results():
            p = cat.product(i)
            out += [("button", p.asin), ("title", p.name), ("text", p.price_tag)]
        return out
    if s.page is Page.ITEM:
        p = cat.product(s.open_item)
        chosen = s.chosen_dict()
        out = [*head, ("button", "Back to Search"), ("button", "< Prev")]
        for name, values in p.options.items():
            out.append(("text", name))
            out += [("chosen" if chosen.get(name) == v else "button", v) for v in values]
        rating = "N.A." if p.rating is None else f"{p.rating:.1f}"
        out += [("title", p.name), ("text", f"Price: {p.price_tag}"), ("text", f"Rating: {rating}")]
        out += [("button", d.capitalize()) for d in DETAILS] + [("button", "Buy Now")]
        return out
    if s.page is Page.DETAIL:
        return [
            *head,
            ("button", "Back to Search"),
            ("button", "< Prev"),
            *[("text", line) for line in _detail_lines(view)],
        ]
    p = cat.product(s.open_item)
    b = view.breakdown
    out = [
        ("text", "Thank you for shopping with us!"),
        ("text", "Purchased"),
        ("title", p.name),
        ("text", "Options"),
        ("text", ", ".join(f"{k}: {v}" for k, v in s.chosen) or "none"),
    ]
    if b is not None:
        out += [("text", "Your score (min 0.0, max 1.0)"), ("text", f"{b.reward:.4f}")]
    return out


def render_text(view: View) -> str:
    return " [SEP] ".join(label for _, label in parts(view))


def render_text_rich(view: View) -> str:
    lines = []
    for kind, label in parts(view):
        if kind == "button":
            lines.append(f"[button] {label} [button_]")
        elif kind == "chosen":
            lines.append(f"[clicked button] {label} [clicked button_]")
        else:
            lines.append(label)
    return "\n".join(lines)


def _action_for(label: str) -> str:
    return "search[...]" if label == "Search" else f"click[{label.lower()}]"


def render_html(view: View, *, form_action: str = "", include_instruction: bool = True) -> str:
    """A self-contained page; each button submits its exact env action as `action`."""
    e = _html.escape
    body: list[str] = []
    for kind, label in parts(view):
        if not include_instruction and kind == "text" and label in ("Instruction:", view.instruction):
            continue  # the web view shows the instruction in its own banner
        if kind in ("button", "chosen"):
            cls = "btn chosen" if kind == "chosen" else "btn"
            if label == "Search":
                body.append(
                    '<input type="text" name="query" id="search-input" placeholder="Search products" '
                    'maxlength="500" autofocus>'
                )
            body.append(
                f'<button type="submit" class="{cls}" name="action" value="{e(_action_for(label))}">{e(label)}</button>'
            )
        elif kind == "title":
            body.append(f'<h3 class="title">{e(label)}</h3>')
        else:
            body.append(f"<p>{e(label)}</p>")
    if view.breakdown is not None:
        body.append(breakdown_html(view.breakdown))
    return (
        f'<form method="post" action="{e(form_action)}" class="shop-page page-{view.state.page.value}">'
        + "\n".join(body)
        + "</form>"
    )


def breakdown_html(b: RewardBreakdown) -> str:
    e = _html.escape
    rows = [
        ("reward", f'<span id="reward">{b.reward:.4f}</span>'),
        (
            "type factor",
            f"{b.r_type} (query match {b.query_match}, category match {b.category_match}, "
            f"title noun overlap {b.title_score:.2f})",
        ),
        (
            "attributes",
            f"{b.num_attr_matches}/{b.n_attr}: "
            + ", ".join(f"{e(k)} {'✔' if v else '✘'}" for k, v in b.attribute_hits.items()),
        ),
        (
            "options",
            f"{b.num_option_matches}/{b.n_opt}: "
            + (", ".join(f"{e(k)} {'✔' if v else '✘'}" for k, v in b.option_hits.items()) or "none asked"),
        ),
        ("price", f"${b.price:.2f} {'≤' if b.r_price else '>'} ${b.price_upper:.2f}"),
    ]
    cells = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows)
    return f'<table class="breakdown" id="breakdown">{cells}</table>'


_RICH_BUTTON = re.compile(r"\[(clicked )?button\]\s*(.*?)\s*\[(?:clicked )?button_\]")


def compact_text_rich(obs: str) -> str:
    """A `text_rich` page in the `text` layout (parts joined by [SEP]), keeping what `text` drops: which
    buttons are clicked (`teal (clicked)`). The chosen options are the state an item page's actions depend on;
    the button markup around every label would cost ~8 tokens a button. Any other text passes unchanged."""
    if "button_]" not in obs:
        return obs
    obs = _RICH_BUTTON.sub(lambda m: f"{m.group(2)} (clicked)" if m.group(1) else m.group(2), obs)
    return " [SEP] ".join(line.strip() for line in obs.splitlines() if line.strip())


def render(view: View, mode: ObservationMode) -> str:
    if mode == "text":
        return render_text(view)
    if mode == "text_rich":
        return render_text_rich(view)
    return render_html(view)


__all__ = [
    "MODES",
    "ObservationMode",
    "View",
    "render",
    "render_html",
    "breakdown_html",
    "parts",
    "compact_text_rich",
    "BACK_TO_SEARCH",
    "BUY_NOW",
    "NEXT",
    "PREV",
]
