"""The textual fault-tree format: JSON validated by pydantic, with a lossless round trip.

Why a flat node list (not nested JSON): shared nodes (several parents) appear once and are
referenced by id, so the file stays a DAG without duplication. Errors name the node and the
field (`nodes[12] (id 'E7').children: unknown node id 'E99'`).

Schema (version 1)::

    {
      "format": "faulttree/1",
      "name": "Car: engine cranks but will not start",
      "domain": "vehicle",
      "top": "T",
      "symptom": "My car cranks but the engine never catches.",
      "nodes": [
        {"id": "T", "label": "Engine cranks but does not start", "kind": "top",
         "description": "...", "gate": "OR", "children": ["E1", "E2"],
         "check": {"instruction": "...", "if_faulty": "...", "if_fine": "..."}},
        {"id": "E1", "label": "Loss of redundant cooling fans", "kind": "intermediate",
         "gate": "KOFN", "k": 2, "children": ["E3", "E4", "E5"], ...},
        {"id": "B1", "label": "Clogged fuel filter", "kind": "basic", "children": [], ...}
      ]
    }

Rules: ids unique; exactly one `top` node and `top` names it; `basic` nodes have no gate and
no children; `top`/`intermediate` nodes have a gate and >= 1 child; `k` is required for
`KOFN` (1 <= k <= len(children)) and forbidden otherwise; labels and aliases
are unique (case-insensitive) so agents can name nodes; every child id exists; no cycles; every node is
reachable from the top. See `EXAMPLE` below for a complete small file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Final, Literal

import networkx as nx
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from envs.faulttree.model import Check, FaultTree, Gate, Kind, Node

FORMAT: Final = "faulttree/1"


class FaultTreeFormatError(ValueError):
    """A fault-tree file is invalid; the message names the node and the field."""


class CheckSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    instruction: str = Field(min_length=1, description="What the user is asked to do.")
    if_faulty: str = Field(min_length=1, description="What the user observes when the node is faulty.")
    if_fine: str = Field(min_length=1, description="What the user observes when the node is fine.")


class NodeSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    label: str = Field(
        min_length=1, pattern=r"^[^\[\];]+$", description="Human-readable name; no [ ] or ; (they delimit actions)."
    )
    kind: Literal["top", "intermediate", "basic"]
    description: str = ""
    gate: Literal["AND", "OR", "KOFN"] | None = None
    k: int | None = None
    children: list[str] = Field(default_factory=list)
    aliases: list[str] = Field(default_factory=list, description="Other names for the node (e.g. the component).")
    check: CheckSpec

    @model_validator(mode="after")
    def _gate_rules(self) -> NodeSpec:
        if self.kind == "basic":
            if self.gate is not None:
                raise _field_error("gate", "a basic event has no gate")
            if self.children:
                raise _field_error("children", "a basic event has no children")
        else:
            if self.gate is None:
                raise _field_error("gate", f"a {self.kind} event needs a gate (AND, OR or KOFN)")
            if not self.children:
                raise _field_error("children", f"a {self.kind} event needs at least one child")
        if self.gate == "KOFN":
            if self.k is None:
                raise _field_error("k", "a KOFN gate needs k")
            if not 1 <= self.k <= len(self.children):
                raise _field_error(
                    "k", f"k={self.k} must be between 1 and the number of children ({len(self.children)})"
                )
        elif self.k is not None:
            raise _field_error("k", f"k is only allowed on KOFN gates, not {self.gate or 'basic events'}")
        if len(set(self.children)) != len(self.children):
            raise _field_error("children", "a child is listed twice")
        return self


class TreeFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    format: Literal["faulttree/1"] = FORMAT
    name: str = Field(min_length=1)
    domain: str = Field(min_length=1)
    top: str
    symptom: str = Field(min_length=1, description="How the user first describes the top event.")
    nodes: list[NodeSpec] = Field(min_length=1)

    @field_validator("nodes")
    @classmethod
    def _unique(cls, nodes: list[NodeSpec]) -> list[NodeSpec]:
        seen: dict[str, int] = {}
        labels: dict[str, str] = {}
        for i, node in enumerate(nodes):
            if node.id in seen:
                raise ValueError(f"nodes[{i}] (id {node.id!r}).id: duplicate id (first at nodes[{seen[node.id]}])")
            seen[node.id] = i
            low = node.label.lower()
            if low in labels:
                raise ValueError(
                    f"nodes[{i}] (id {node.id!r}).label: duplicate label {node.label!r} (also on {labels[low]!r})"
                )
            labels[low] = node.id
        for i, node in enumerate(nodes):
            for alias in node.aliases:
                other = labels.get(alias.lower())
                if other is not None and other != node.id:
                    raise ValueError(
                        f"nodes[{i}] (id {node.id!r}).aliases: {alias!r} is already the label or alias of {other!r}"
                    )
                labels[alias.lower()] = node.id
        return nodes

    @model_validator(mode="after")
    def _graph_rules(self) -> TreeFile:
        ids = {n.id: i for i, n in enumerate(self.nodes)}
        if self.top not in ids:
            raise ValueError(f"top: unknown node id {self.top!r}")
        tops = [n.id for n in self.nodes if n.kind == "top"]
        if tops != [self.top]:
            raise ValueError(
                f"nodes (id {self.top!r}).kind: exactly one node, the top {self.top!r}, must have kind 'top' (found {tops})"
            )
        graph = nx.DiGraph()
        graph.add_nodes_from(ids)
        for i, node in enumerate(self.nodes):
            for child in node.children:
                if child not in ids:
                    raise ValueError(
                        f"nodes[{i}] (id {node.id!r}).children: unknown node id {child!r} (dangling reference)"
                    )
                if child == self.top:
                    raise ValueError(f"nodes[{i}] (id {node.id!r}).children: the top event {child!r} cannot be a child")
                graph.add_edge(node.id, child)
        try:
            cycle = nx.find_cycle(graph)
        except nx.NetworkXNoCycle:
            cycle = None
        if cycle:
            first = cycle[0][0]
            path = " -> ".join([u for u, _ in cycle] + [cycle[0][0]])
            raise ValueError(f"nodes[{ids[first]}] (id {first!r}).children: cycle {path}")
        reachable = nx.descendants(graph, self.top) | {self.top}
        orphans = [n.id for n in self.nodes if n.id not in reachable]
        if orphans:
            raise ValueError(
                f"nodes[{ids[orphans[0]]}] (id {orphans[0]!r}): not reachable from the top event {self.top!r}"
            )
        return self


def _field_error(field: str, message: str) -> ValueError:
    return ValueError(f"{field}: {message}")


# --- conversion --------------------------------------------------------------------------------
def to_tree(spec: TreeFile) -> FaultTree:
    nodes = [
        Node(
            id=n.id,
            label=n.label,
            kind=Kind(n.kind),
            description=n.description,
            check=Check(n.check.instruction, n.check.if_faulty, n.check.if_fine),
            gate=Gate(n.gate) if n.gate else None,
            k=n.k,
            children=tuple(n.children),
            aliases=tuple(n.aliases),
        )
        for n in spec.nodes
    ]
    return FaultTree.build(spec.name, spec.domain, spec.top, spec.symptom, nodes)


def to_spec(tree: FaultTree) -> TreeFile:
    return TreeFile(
        name=tree.name,
        domain=tree.domain,
        top=tree.top,
        symptom=tree.symptom,
        nodes=[
            NodeSpec(
                id=n.id,
                label=n.label,
                kind=n.kind.value,
                description=n.description,
                gate=n.gate.value if n.gate else None,
                k=n.k,
                children=list(n.children),
                aliases=list(n.aliases),
                check=CheckSpec(instruction=n.check.instruction, if_faulty=n.check.if_faulty, if_fine=n.check.if_fine),
            )
            for n in tree.nodes.values()  # insertion order = file order
        ],
    )


def parse_tree(data: str | bytes | dict[str, Any]) -> FaultTree:
    """Validate JSON text (or an already-decoded dict) and build the tree."""
    try:
        raw = json.loads(data) if isinstance(data, (str, bytes)) else data
    except json.JSONDecodeError as exc:
        raise FaultTreeFormatError(f"not valid JSON: {exc}") from exc
    try:
        return to_tree(TreeFile.model_validate(raw))
    except ValidationError as exc:
        raise FaultTreeFormatError(_describe(exc, raw)) from exc


def load_tree(path: str | Path) -> FaultTree:
    try:
        return parse_tree(Path(path).read_text(encoding="utf-8"))
    except FaultTreeFormatError as exc:
        raise FaultTreeFormatError(f"{path}: {exc}") from exc


def dump_tree(tree: FaultTree, *, indent: int | None = 2) -> str:
    return to_spec(tree).model_dump_json(indent=indent, exclude_none=True)


def save_tree(tree: FaultTree, path: str | Path) -> None:
    Path(path).write_text(dump_tree(tree) + "\n", encoding="utf-8")


def json_schema() -> dict[str, Any]:
    """The JSON Schema of the file format (for docs and external validators)."""
    return TreeFile.model_json_schema()


def _describe(exc: ValidationError, raw: Any) -> str:
    """Rewrite pydantic locations like ('nodes', 3, 'check', 'if_fine') into "nodes[3] (id 'B2').check.if_fine"."""
    parts = []
    for err in exc.errors():
        loc = [str(x) for x in err["loc"] if not str(x).startswith("function-")]
        msg = err["msg"].removeprefix("Value error, ")
        if len(err["loc"]) >= 2 and err["loc"][0] == "nodes" and isinstance(err["loc"][1], int):
            idx = err["loc"][1]
            node_id = None
            try:
                node_id = raw["nodes"][idx].get("id")
            except (KeyError, IndexError, TypeError, AttributeError):
                pass
            where = f"nodes[{idx}]" + (f" (id {node_id!r})" if node_id else "")
            rest = loc[2:]
            field = re.match(r"^(\w+): ", msg)
            if not rest and field:  # a node-level rule that names its field in the message
                rest, msg = [field.group(1)], msg[field.end() :]
            parts.append(where + "".join("." + r for r in rest) + ": " + msg)
        elif msg.startswith(("nodes", "top:")):
            parts.append(msg)  # tree-level rules already say where
        else:
            parts.append(".".join(loc) + ": " + msg if loc else msg)
    return "; ".join(parts)


EXAMPLE: dict[str, Any] = {
    "format": FORMAT,
    "name": "Pump: no flow at the outlet",
    "domain": "pump",
    "top": "T",
    "symptom": "The pump runs but nothing comes out of the outlet.",
    "nodes": [
        {
            "id": "T",
            "label": "No flow at the pump outlet",
            "kind": "top",
            "gate": "OR",
            "children": ["E1", "B3"],
            "description": "The pump is powered but delivers no flow.",
            "check": {
                "instruction": "Open the outlet valve and watch the flow meter",
                "if_faulty": "the flow meter stays at zero",
                "if_fine": "the flow meter shows normal flow",
            },
        },
        {
            "id": "E1",
            "label": "Both feed pumps failed",
            "kind": "intermediate",
            "gate": "AND",
            "children": ["B1", "B2"],
            "description": "The duty and the standby pump are both down.",
            "check": {
                "instruction": "Look at the run lights of both feed pumps",
                "if_faulty": "neither run light is on",
                "if_fine": "at least one run light is on",
            },
        },
        {
            "id": "B1",
            "label": "Duty pump motor burnt out",
            "kind": "basic",
            "check": {
                "instruction": "Sniff near the duty pump motor and feel its casing",
                "if_faulty": "it smells burnt and the casing is cold",
                "if_fine": "no smell, the casing is warm",
            },
        },
        {
            "id": "B2",
            "label": "Standby pump breaker tripped",
            "kind": "basic",
            "check": {
                "instruction": "Look at the standby pump breaker in the panel",
                "if_faulty": "the breaker lever is in the tripped position",
                "if_fine": "the breaker is on",
            },
        },
        {
            "id": "B3",
            "label": "Closed suction valve",
            "kind": "basic",
            "check": {
                "instruction": "Look at the handle of the suction valve",
                "if_faulty": "the handle is across the pipe (closed)",
                "if_fine": "the handle is in line with the pipe (open)",
            },
        },
    ],
}
