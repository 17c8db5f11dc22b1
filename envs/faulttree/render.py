"""Compact indented rendering of a fault tree for prompts.

One line a node: id, gate, label. A shared node is expanded the first time and later shown as
"(shared, see E7 above)" so the text stays linear in the number of nodes. Checks are omitted by
default (the agent asks for them by node); `with_checks=True` adds them for richer prompts.
"""

from __future__ import annotations

from envs.faulttree.model import FaultTree, Gate, Node


def gate_tag(node: Node) -> str:
    if node.gate is None:
        return "basic"
    if node.gate is Gate.KOFN:
        return f"{node.k}-of-{len(node.children)}"
    return node.gate.value


def render_tree(tree: FaultTree, *, with_checks: bool = False, indent: str = "  ") -> str:
    lines = [
        f"Fault tree: {tree.name} ({len(tree)} nodes; gates: OR = any child, AND = all children, k-of-n = at least k children)"
    ]
    expanded: set[str] = set()

    def visit(nid: str, depth: int) -> None:
        node = tree.nodes[nid]
        pad = indent * depth
        if nid in expanded:
            lines.append(f"{pad}{nid} {node.label} (shared, see above)")
            return
        expanded.add(nid)
        tag = "" if node.is_basic else f" [{gate_tag(node)}]"
        lines.append(f"{pad}{nid}{tag} {node.label}")
        if with_checks:
            lines.append(f"{pad}{indent}check: {node.check.instruction}")
        for child in node.children:
            visit(child, depth + 1)

    visit(tree.top, 0)
    return "\n".join(lines)
