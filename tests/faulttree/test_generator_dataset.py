"""Seeded generator (domains, sizes, wording, determinism) and the dataset builder (splits, JSONL)."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

from envs.faulttree.dataset import (
    DEFAULT_ENTRIES,
    build_dataset,
    fingerprint,
    load_dataset,
    make_entry,
    split_sizes,
    tree_for,
)
from envs.faulttree.domains import DOMAINS
from envs.faulttree.generator import MAX_NODES, MIN_NODES, generate_tree
from envs.faulttree.model import Gate
from envs.faulttree.schema import dump_tree


@pytest.mark.parametrize("domain", sorted(DOMAINS))
def test_trees_are_sized_worded_and_dag_shaped(domain):
    gates = set()
    for seed in range(8):
        tree = generate_tree(domain, seed)
        assert MIN_NODES <= len(tree) <= MAX_NODES
        assert tree.shared_ids, "common-cause nodes make it a DAG"
        for node in tree.nodes.values():
            assert "{" not in node.label + node.check.instruction + node.check.if_faulty + node.check.if_fine
            assert node.label[0].isupper() or node.label[0].isdigit()
            gates.add(node.gate)
    assert {Gate.OR, Gate.AND} <= gates or {Gate.OR, Gate.KOFN} <= gates


def test_generator_is_deterministic_and_seed_sensitive():
    assert dump_tree(generate_tree("hvac", 11)) == dump_tree(generate_tree("hvac", 11))
    assert dump_tree(generate_tree("hvac", 11)) != dump_tree(generate_tree("hvac", 12))
    with pytest.raises(ValueError, match="unknown domain"):
        generate_tree("spaceship", 1)


def test_target_size_is_respected():
    assert len(generate_tree("network", 3, target_nodes=60)) in range(60, 70)
    assert len(generate_tree("network", 3, target_nodes=10)) >= MIN_NODES


def test_default_split_sizes():
    sizes = split_sizes()
    assert sum(sizes.values()) == DEFAULT_ENTRIES == 3130
    assert sizes == {"train": 2504, "dev": 313, "test": 313}


def test_entries_are_pure_functions_of_their_index():
    a, ta = make_entry("dev", 17)
    b, tb = make_entry("dev", 17)
    assert a == b and dump_tree(ta) == dump_tree(tb)
    assert ta.evaluate(a.causes)[ta.top]
    assert make_entry("dev", 17, base_seed=1)[0] != a


def test_build_dataset_writes_disjoint_splits(tmp_path):
    manifest = build_dataset(tmp_path, n_entries=60)
    assert manifest["splits"] == {"train": 48, "dev": 6, "test": 6}
    trees = [json.loads(line) for line in (tmp_path / "trees.jsonl").read_text().splitlines()]
    split_of = {t["tree_id"]: t["split"] for t in trees}
    for split in ("train", "dev", "test"):
        lines = (tmp_path / f"{split}.jsonl").read_text().splitlines()
        assert len(lines) == manifest["splits"][split]
        assert all(split_of[json.loads(line)["tree_id"]] == split for line in lines)
    prints = {}
    for t in trees:
        fp = fingerprint(tree_for(t["split"], int(t["tree_id"].split("-")[1]))[1])
        assert prints.setdefault(fp, t["split"]) == t["split"]
    data = load_dataset(str(tmp_path))
    assert len(data.entries["train"]) == 48 and len(data.trees) == manifest["trees"]


def test_env_from_dataset_matches_on_the_fly(tmp_path):
    build_dataset(tmp_path, n_entries=60)
    disk = gym.make("agentsim/FaultTree-v0", dataset_path=str(tmp_path), split="dev")
    fly = gym.make("agentsim/FaultTree-v0", split="dev", n_entries=60)
    for i in (0, 5):
        o1, i1 = disk.reset(seed=3, options={"entry_index": i})
        o2, i2 = fly.reset(seed=3, options={"entry_index": i})
        assert o1 == o2 and i1["available_actions"] == i2["available_actions"]
        a = disk.unwrapped.expert_action()
        assert disk.step(a)[0] == fly.step(a)[0]
