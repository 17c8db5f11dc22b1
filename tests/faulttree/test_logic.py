"""Gate logic on DAGs, scenario sampling and the hypothesis space."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from envs.faulttree.model import Check, FaultTree, Gate, Kind, Node
from envs.faulttree.scenario import hypotheses, minimise, sample_scenario, scenario_distribution

CHK = Check("look", "bad", "good")


def _tree() -> FaultTree:
    """T = OR(E1, E2); E1 = AND(S, B1); E2 = 2-of-3(S, B2, B3); S = OR(B4, B5) is shared."""
    b = [Node(f"B{i}", f"Basic {i}", Kind.BASIC, "", CHK) for i in range(1, 6)]
    return FaultTree.build(
        "t",
        "pump",
        "T",
        "broken",
        [
            Node("T", "Top", Kind.TOP, "", CHK, Gate.OR, None, ("E1", "E2")),
            Node("E1", "And", Kind.INTERMEDIATE, "", CHK, Gate.AND, None, ("S", "B1")),
            Node("E2", "Vote", Kind.INTERMEDIATE, "", CHK, Gate.KOFN, 2, ("S", "B2", "B3")),
            Node("S", "Shared", Kind.INTERMEDIATE, "", CHK, Gate.OR, None, ("B4", "B5")),
            *b,
        ],
    )


@pytest.mark.parametrize(
    "faulty,shared,e1,e2,top",
    [
        (set(), False, False, False, False),
        ({"B1"}, False, False, False, False),
        ({"B4"}, True, False, False, False),  # the shared OR alone: 1 of 3 votes, AND lacks B1
        ({"B4", "B1"}, True, True, False, True),  # AND(S, B1) through the shared node
        ({"B2", "B3"}, False, False, True, True),  # 2-of-3 without the shared node
        ({"B5", "B2"}, True, False, True, True),  # 2-of-3 with the shared node as one vote
        ({"B1", "B2"}, False, False, False, False),
        ({"B1", "B2", "B3", "B4"}, True, True, True, True),
    ],
)
def test_gate_values(faulty, shared, e1, e2, top):
    state = _tree().evaluate(faulty)
    assert (state["S"], state["E1"], state["E2"], state["T"]) == (shared, e1, e2, top)


def test_state_matrix_matches_evaluate():
    tree = _tree()
    sets = [frozenset(c) for r in range(4) for c in itertools.combinations(tree.basic_ids, r)]
    matrix = tree.state_matrix(sets)
    for h, s in enumerate(sets):
        state = tree.evaluate(s)
        assert [state[n] for n in tree.ids] == matrix[h].tolist()


def test_scenario_distribution_is_exact_minimal_cut_sets():
    tree = _tree()
    dist = scenario_distribution(tree)
    assert abs(sum(dist.values()) - 1) < 1e-12
    # all minimal cut sets of the tree, by brute force
    cuts = [
        frozenset(c) for r in range(1, 4) for c in itertools.combinations(tree.basic_ids, r) if tree.evaluate(c)["T"]
    ]
    minimal = {c for c in cuts if not any(o < c for o in cuts)}
    assert set(dist) == minimal
    # E1 branch (prob 1/2): {B4,B1} or {B5,B1} each 1/4.
    assert dist[frozenset({"B1", "B4"})] == pytest.approx(0.25)


def test_sampled_scenarios_trigger_top_and_are_minimal(vehicle_tree):
    rng = random.Random(0)
    for _ in range(50):
        causes = sample_scenario(vehicle_tree, rng)
        assert vehicle_tree.evaluate(causes)[vehicle_tree.top]
        assert minimise(vehicle_tree, causes) == causes
        assert all(vehicle_tree.nodes[c].is_basic for c in causes)


def test_scenario_frequencies_follow_distribution():
    tree = _tree()
    dist = scenario_distribution(tree)
    rng = random.Random(1)
    draws = [sample_scenario(tree, rng) for _ in range(4000)]
    for s, p in dist.items():
        assert abs(draws.count(s) / 4000 - p) < 0.03


def test_hypotheses_include_multi_cause_sets(vehicle_tree):
    hyp = hypotheses(vehicle_tree)
    assert np.isclose(hyp.prior.sum(), 1)
    assert hyp.states.shape == (len(hyp.sets), len(vehicle_tree))
    assert hyp.states[:, vehicle_tree.index[vehicle_tree.top]].all()
    assert any(len(s) > 1 for s in hyp.sets), "redundancy groups should give AND / k-of-n scenarios"
