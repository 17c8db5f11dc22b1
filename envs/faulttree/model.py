"""In-memory fault tree: a DAG of events joined by AND / OR / k-of-n gates.

Kept as plain dataclasses plus a networkx DiGraph (edges parent -> child) because the
generator, the simulator and the expert all need fast structural queries (topological
order, ancestors, shared nodes); pydantic lives only at the file boundary (`schema.py`).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property

import networkx as nx
import numpy as np


class Gate(str, enum.Enum):
    """How an intermediate event combines its children."""

    AND = "AND"
    OR = "OR"
    KOFN = "KOFN"


class Kind(str, enum.Enum):
    TOP = "top"
    INTERMEDIATE = "intermediate"
    BASIC = "basic"


@dataclass(frozen=True)
class Check:
    """A check the user can perform on a node, and what they observe either way."""

    instruction: str
    if_faulty: str
    if_fine: str


@dataclass(frozen=True)
class Node:
    id: str
    label: str
    kind: Kind
    description: str
    check: Check
    gate: Gate | None = None
    k: int | None = None
    children: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()  # other names a user or agent may use, e.g. the component name

    @property
    def is_basic(self) -> bool:
        return self.kind is Kind.BASIC


@dataclass
class FaultTree:
    """A validated fault tree. Build it through `FaultTree.build` so invariants hold."""

    name: str
    domain: str
    top: str
    symptom: str
    nodes: dict[str, Node]
    graph: nx.DiGraph = field(repr=False)

    @classmethod
    def build(cls, name: str, domain: str, top: str, symptom: str, nodes: Iterable[Node]) -> FaultTree:
        nodes_by_id = {n.id: n for n in nodes}
        graph = nx.DiGraph()
        graph.add_nodes_from(nodes_by_id)
        for node in nodes_by_id.values():
            for child in node.children:
                graph.add_edge(node.id, child)
        return cls(name=name, domain=domain, top=top, symptom=symptom, nodes=nodes_by_id, graph=graph)

    # --- structure -------------------------------------------------------------------------
    @cached_property
    def order(self) -> list[str]:
        """Node ids children-first (a reverse topological order), stable across runs."""
        return list(reversed(list(nx.lexicographical_topological_sort(self.graph, key=_natural_key))))

    @cached_property
    def index(self) -> dict[str, int]:
        return {nid: i for i, nid in enumerate(self.ids)}

    @cached_property
    def ids(self) -> list[str]:
        """Node ids in document order (top first, depth-first), used for matrices and rendering."""
        seen: list[str] = []
        visited: set[str] = set()

        def visit(nid: str) -> None:
            if nid in visited:
                return
            visited.add(nid)
            seen.append(nid)
            for child in self.nodes[nid].children:
                visit(child)

        visit(self.top)
        seen.extend(sorted((n for n in self.nodes if n not in visited), key=_natural_key))
        return seen

    @cached_property
    def basic_ids(self) -> list[str]:
        return [nid for nid in self.ids if self.nodes[nid].is_basic]

    @cached_property
    def shared_ids(self) -> list[str]:
        """Nodes with more than one parent (the DAG part of the tree)."""
        return [nid for nid in self.ids if self.graph.in_degree(nid) > 1]

    @cached_property
    def by_label(self) -> dict[str, str]:
        return {n.label.lower(): n.id for n in self.nodes.values()}

    @cached_property
    def by_alias(self) -> dict[str, str]:
        return {a.lower(): n.id for n in self.nodes.values() for a in n.aliases}

    def parents(self, nid: str) -> list[str]:
        return sorted(self.graph.predecessors(nid), key=_natural_key)

    def __len__(self) -> int:
        return len(self.nodes)

    # --- logic -------------------------------------------------------------------------------
    def evaluate(self, faulty_basics: Iterable[str]) -> dict[str, bool]:
        """State (True = faulty) of every node when exactly `faulty_basics` have failed."""
        faulty = set(faulty_basics)
        state: dict[str, bool] = {}
        for nid in self.order:
            node = self.nodes[nid]
            if node.is_basic:
                state[nid] = nid in faulty
            else:
                state[nid] = gate_value(node, [state[c] for c in node.children])
        return state

    def state_matrix(self, hypotheses: list[frozenset[str]]) -> np.ndarray:
        """Bool matrix [hypothesis, node] (columns in `ids` order), vectorised gate evaluation."""
        cols = np.zeros((len(hypotheses), len(self.ids)), dtype=bool)
        for h, hyp in enumerate(hypotheses):
            for b in hyp:
                cols[h, self.index[b]] = True
        for nid in self.order:
            node = self.nodes[nid]
            if node.is_basic:
                continue
            child_cols = cols[:, [self.index[c] for c in node.children]]
            count = child_cols.sum(axis=1)
            cols[:, self.index[nid]] = count >= required(node)
        return cols


def required(node: Node) -> int:
    """How many faulty children make a gate's output faulty."""
    if node.gate is Gate.AND:
        return len(node.children)
    if node.gate is Gate.OR:
        return 1
    assert node.k is not None
    return node.k


def gate_value(node: Node, child_states: list[bool]) -> bool:
    return sum(child_states) >= required(node)


def _natural_key(nid: str) -> tuple:
    """Sort "E2" before "E10"."""
    head = nid.rstrip("0123456789")
    tail = nid[len(head) :]
    return (head, int(tail) if tail else -1, nid)
