"""Fault-tree diagnosis: fault trees as text, a vague and fallible simulated user, a scripted expert.

Modules (one job each): `model` (DAG + gate logic), `schema` (JSON format, validation,
round trip), `render` (prompt text), `domains`/`vocab_parts` (wording), `generator` (seeded
trees), `scenario` (fault scenarios, hypothesis space), `dataset` (entries and splits),
`simulator` (the user), `rephrase` (optional LLM rewording), `actions` (parsing), `belief`
(posterior over causes), `expert` (information-gain policy), `reward`, `env` (the Gymnasium env),
`rollout` (run the expert). See docs/faulttree.md.
"""

from envs.faulttree.model import Check, FaultTree, Gate, Kind, Node
from envs.faulttree.schema import FaultTreeFormatError, dump_tree, json_schema, load_tree, parse_tree, save_tree

__all__ = [
    "Check",
    "FaultTree",
    "FaultTreeFormatError",
    "Gate",
    "Kind",
    "Node",
    "dump_tree",
    "json_schema",
    "load_tree",
    "parse_tree",
    "save_tree",
]
