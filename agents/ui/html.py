"""Server-rendered HTML: the page frame and small escaping helpers every page shares."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape
from typing import Any
from urllib.parse import urlencode


def h(x: Any) -> str:
    """Text made safe for HTML (None shows as an empty string)."""
    return "" if x is None else escape(str(x))


def url(path: str, **params: Any) -> str:
    """A link with query parameters (None values left out), escaped for an attribute."""
    q = urlencode({k: v for k, v in params.items() if v is not None and v != ""})
    return h(f"{path}?{q}" if q else path)


def fmt(x: Any, digits: int = 3) -> str:
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return f"{x:.{digits}g}"
    if isinstance(x, int):
        return f"{x:,}"
    return h(x)


def pct(x: float | None) -> str:
    return "" if x is None else f"{100 * x:.1f}%"


def table(
    headers: Sequence[str], rows: Iterable[Sequence[str]], *, cls: str = "", row_attrs: Sequence[str] = ()
) -> str:
    """A table whose cells are already HTML (escape them with `h`)."""
    head = "".join(f"<th>{h(x)}</th>" for x in headers)
    body = []
    for n, r in enumerate(rows):
        attrs = row_attrs[n] if n < len(row_attrs) else ""
        body.append(f"<tr {attrs}>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>")
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def pre(text: Any, cls: str = "") -> str:
    return f'<pre class="{cls}">{h(text)}</pre>'


def page(title: str, body: str, crumbs: Sequence[tuple[str, str]] = (), reload_s: int | None = None) -> str:
    """The frame of every page: the stylesheet, the script and a trail back to the run list."""
    trail = " / ".join(['<a href="/">runs</a>'] + [f'<a href="{href}">{h(text)}</a>' for text, href in crumbs])
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        + (f"<meta http-equiv='refresh' content='{reload_s}'>" if reload_s else "")
        + f"<title>{h(title)} · agentsim runs</title>"
        "<link rel='stylesheet' href='/static/ui.css'><script src='/static/ui.js' defer></script></head>"
        f"<body><header><nav class='crumbs'>{trail}</nav></header><main><h1>{h(title)}</h1>{body}</main></body></html>"
    )


def error_page(status: int, message: str) -> str:
    return page(f"{status}: {'not found' if status == 404 else 'bad request'}", f"<p class='error'>{h(message)}</p>")
