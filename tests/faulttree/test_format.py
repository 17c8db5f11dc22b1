"""The JSON format: valid files load, round trips are lossless, broken files name node and field."""

from __future__ import annotations

import json

import pytest

from envs.faulttree.generator import generate_tree
from envs.faulttree.model import Gate, Kind
from envs.faulttree.render import render_tree
from envs.faulttree.schema import (
    FaultTreeFormatError,
    TreeFile,
    dump_tree,
    json_schema,
    load_tree,
    parse_tree,
    save_tree,
    to_spec,
)


def test_example_loads(example):
    tree = parse_tree(example)
    assert tree.top == "T" and len(tree) == 5
    assert tree.nodes["E1"].gate is Gate.AND and tree.nodes["B1"].kind is Kind.BASIC
    assert to_spec(tree) == TreeFile.model_validate(example)


@pytest.mark.parametrize("domain,seed", [("vehicle", 1), ("hvac", 2), ("pump", 3), ("server", 4), ("network", 5)])
def test_generated_round_trip_is_lossless(domain, seed, tmp_path):
    tree = generate_tree(domain, seed)
    text = dump_tree(tree)
    again = parse_tree(text)
    assert dump_tree(again) == text
    assert again.nodes == tree.nodes and again.symptom == tree.symptom
    path = tmp_path / "tree.json"
    save_tree(tree, path)
    assert dump_tree(load_tree(path)) == text


def _broken(example, mutate):
    mutate(example)
    with pytest.raises(FaultTreeFormatError) as err:
        parse_tree(example)
    return str(err.value)


@pytest.mark.parametrize(
    "mutate,expected",
    [
        (lambda d: d["nodes"][1]["children"].append("B9"), "nodes[1] (id 'E1').children: unknown node id 'B9'"),
        (lambda d: d["nodes"][2].update(kind="intermediate", gate="OR", children=["E1"]), "(id 'E1').children: cycle"),
        (lambda d: d["nodes"][4]["check"].pop("if_fine"), "nodes[4] (id 'B3').check.if_fine: Field required"),
        (lambda d: d["nodes"][2].update(gate="OR"), "nodes[2] (id 'B1').gate: a basic event has no gate"),
        (lambda d: d["nodes"][1].update(gate="KOFN"), "nodes[1] (id 'E1').k: a KOFN gate needs k"),
        (lambda d: d["nodes"][1].update(gate="KOFN", k=3), "nodes[1] (id 'E1').k: k=3 must be between 1"),
        (lambda d: d["nodes"][0].update(k=1), "nodes[0] (id 'T').k: k is only allowed on KOFN"),
        (lambda d: d["nodes"][3].update(id="B1"), "nodes[3] (id 'B1').id: duplicate id"),
        (
            lambda d: d["nodes"].append(dict(d["nodes"][4], id="B7", label="Orphan")),
            "nodes[5] (id 'B7'): not reachable",
        ),
        (lambda d: d["nodes"][4].update(label="Closed [suction] valve"), "nodes[4] (id 'B3').label"),
        (lambda d: d.update(top="X"), "top: unknown node id 'X'"),
        (lambda d: d["nodes"][1]["children"].append("T"), "the top event 'T' cannot be a child"),
        (lambda d: d["nodes"][2].update(extra=1), "nodes[2] (id 'B1').extra: Extra inputs are not permitted"),
    ],
)
def test_broken_files_name_node_and_field(example, mutate, expected):
    assert expected in _broken(example, mutate)


def test_bad_json_and_path_in_message(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    with pytest.raises(FaultTreeFormatError, match="bad.json: not valid JSON"):
        load_tree(path)


def test_json_schema_documents_fields():
    schema = json_schema()
    node = schema["$defs"]["NodeSpec"]["properties"]
    assert {"id", "label", "kind", "gate", "k", "children", "check", "aliases"} <= set(node)


def test_render_is_compact_and_marks_shared(vehicle_tree):
    text = render_tree(vehicle_tree)
    lines = text.splitlines()[1:]
    assert lines[0].startswith("T [OR] ")
    assert len(lines) == len(vehicle_tree) + sum(vehicle_tree.graph.in_degree(n) - 1 for n in vehicle_tree.shared_ids)
    shared = vehicle_tree.shared_ids[0]
    assert any(line.strip().startswith(f"{shared} ") and "(shared, see above)" in line for line in lines)
    assert "  " + lines[1].lstrip() == lines[1]  # children are indented one level
    assert "check:" in render_tree(vehicle_tree, with_checks=True)


def test_example_in_docs_is_valid_json_file(tmp_path, example):
    path = tmp_path / "ex.json"
    path.write_text(json.dumps(example))
    assert len(load_tree(path)) == 5
