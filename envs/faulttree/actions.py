"""Agent actions: `check[<node>]`, `ask[<question>]`, `diagnose[<cause>; <cause>]`.

Nodes can be named by id (`B12`), label (`Clogged fuel filter`), alias (`fuel pump`) or a close
fuzzy match; free text like "check the fuel pump" or "I think it's the clogged fuel filter" is
mapped when unambiguous. Anything else raises `ActionError` whose message says what is accepted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rapidfuzz import fuzz, process

from envs.contract import action_problem, excerpt
from envs.faulttree.model import FaultTree

TEMPLATES = ["check[...]", "ask[...]", "diagnose[...]"]
FORMS = "check[<node name or id>], ask[<question>], diagnose[<root cause>; <another root cause>]"

_BRACKET = re.compile(r"^\s*(check|ask|diagnose)\s*\[(.*)\]\s*\.?\s*$", re.I | re.S)
_FREE_CHECK = re.compile(
    r"^\s*(?:please\s+|can you\s+|could you\s+)?(?:check|inspect|test|measure|look at|examine)\s+(?:the\s+)?(.+?)[\s.?!]*$",
    re.I,
)
_FREE_DIAG = re.compile(
    r"^\s*(?:diagnos(?:e|is)\s*:?|(?:the\s+)?(?:root\s+)?cause\s+is|root\s+cause\s*:|i\s+think\s+it'?s|it'?s)\s+(?:the\s+|a\s+)?(.+?)[\s.!]*$",
    re.I,
)


@dataclass(frozen=True)
class CheckAction:
    node: str


@dataclass(frozen=True)
class AskAction:
    question: str


@dataclass(frozen=True)
class DiagnoseAction:
    nodes: tuple[str, ...]


Action = CheckAction | AskAction | DiagnoseAction


class ActionError(ValueError):
    """The action could not be understood; the message says why."""


def parse_action(text: str, tree: FaultTree) -> Action:
    """The action `text` names; raises `ActionError` saying what is accepted (never echoing much)."""
    problem = action_problem(text)  # the contract's type and length cap, before any regex or fuzzy match
    if problem is not None:
        raise ActionError(problem)
    if not text.strip():
        raise ActionError(f"empty action; use one of {FORMS}")
    m = _BRACKET.match(text)
    if m:
        verb, arg = m.group(1).lower(), m.group(2).strip()
        if not arg:
            raise ActionError(f"{verb}[...] needs something inside the brackets")
        if verb == "check":
            return CheckAction(resolve_node(arg, tree))
        if verb == "ask":
            return AskAction(arg)
        return DiagnoseAction(resolve_causes(arg, tree))
    if m := _FREE_CHECK.match(text):
        return CheckAction(resolve_node(m.group(1), tree))
    if m := _FREE_DIAG.match(text):
        return DiagnoseAction(resolve_causes(m.group(1), tree))
    if text.strip().endswith("?"):
        return AskAction(text.strip())
    raise ActionError(f"could not map {excerpt(text)} to an action; accepted forms are {FORMS}")


def resolve_causes(text: str, tree: FaultTree) -> tuple[str, ...]:
    """One or several root causes separated by ';', ',' or ' and '; each must be a basic event."""
    try:
        ids = [resolve_node(text, tree)]
    except ActionError:
        parts = [p for p in re.split(r"\s*;\s*|\s*,\s*|\s+and\s+", text) if p.strip()]
        if len(parts) < 2:
            raise
        ids = [resolve_node(p, tree) for p in parts]
    for nid in ids:
        node = tree.nodes[nid]
        if not node.is_basic:
            examples = ", ".join(tree.nodes[c].label for c in _basic_below(tree, nid)[:3])
            article = "an" if node.kind.value[0] in "aeiou" else "a"
            raise ActionError(
                f"{node.label!r} ({nid}) is {article} {node.kind.value} event, not a root cause; "
                f"diagnose names basic events such as {examples}"
            )
    return tuple(sorted(set(ids), key=tree.index.__getitem__))


def _basic_below(tree: FaultTree, nid: str) -> list[str]:
    import networkx as nx

    below = nx.descendants(tree.graph, nid)
    return [b for b in tree.basic_ids if b in below]


def resolve_node(name: str, tree: FaultTree) -> str:
    key = name.strip().strip("'\"").strip()
    low = key.lower()
    for nid in tree.nodes:
        if nid.lower() == low:
            return nid
    if low in tree.by_label:
        return tree.by_label[low]
    if low in tree.by_alias:
        return tree.by_alias[low]
    names = {n.label: n.id for n in tree.nodes.values()} | {a: n.id for n in tree.nodes.values() for a in n.aliases}
    hits = process.extract(key, list(names), scorer=fuzz.WRatio, limit=4)
    if hits and hits[0][1] >= 88:
        best_id = names[hits[0][0]]
        rivals = [h for h in hits[1:] if names[h[0]] != best_id and h[1] > hits[0][1] - 3]
        if not rivals:
            return best_id
    suggestions = ", ".join(f"{h[0]} ({names[h[0]]})" for h in hits[:3])
    raise ActionError(f"no node matches {excerpt(key)} unambiguously; closest: {suggestions}")
