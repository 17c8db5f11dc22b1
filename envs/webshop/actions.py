"""Parse and vet action strings before they reach the state machine.

Every rejection returns a reason in words; nothing here raises on user input.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from envs.contract import action_problem, excerpt

MAX_QUERY_CHARS = 500
_FORM = re.compile(r"^(search|click)\s*\[(.*)\]$", re.IGNORECASE | re.DOTALL)
# Unicode categories that have no business in an action: controls, format chars (zero-width,
# bidi overrides), surrogates, private use, unassigned.
_BAD_CATEGORIES = {
    "Cc": "a control character",
    "Cf": "an invisible formatting character",
    "Cs": "a lone surrogate",
    "Co": "a private-use character",
    "Cn": "an unassigned code point",
}


@dataclass(frozen=True)
class Parsed:
    kind: Literal["search", "click"]
    arg: str  # search text as typed (normalised), or the click target lower-cased


@dataclass(frozen=True)
class Rejected:
    problem: str


def _bad_char(text: str) -> str | None:
    for ch in text:
        cat = unicodedata.category(ch)
        if cat in _BAD_CATEGORIES and ch != "\t":
            return f"it contains {_BAD_CATEGORIES[cat]} (U+{ord(ch):04X})"
    return None


def parse_action(action: object) -> Parsed | Rejected:
    problem = action_problem(action)  # the contract's type and length cap, before any parsing
    if problem is not None:
        return Rejected(problem)
    assert isinstance(action, str)
    text = action.strip()
    bad = _bad_char(text)
    if bad:
        return Rejected(f"the action cannot be read: {bad}")
    text = unicodedata.normalize("NFKC", text)  # full-width brackets and letters become ASCII
    m = _FORM.match(text)
    if not m:
        return Rejected(f"{excerpt(text)} is not of the form search[...] or click[...]")
    kind, arg = m.group(1).lower(), " ".join(m.group(2).split())
    if kind == "search":
        if len(arg) > MAX_QUERY_CHARS:
            return Rejected(f"the search text is {len(arg)} characters long; at most {MAX_QUERY_CHARS} are allowed")
        if not re.search(r"[A-Za-z0-9]", arg):
            return Rejected("the search text has no letters or digits to search for")
        return Parsed("search", arg)
    if not arg:
        return Rejected("click[] names nothing to click")
    return Parsed("click", arg.lower())
