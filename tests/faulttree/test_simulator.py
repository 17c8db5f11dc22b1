"""The user simulator: reproducible, vague and wrong at the configured rates, rollbacks on time."""

from __future__ import annotations

import random

import pytest

from envs.faulttree.scenario import sample_scenario
from envs.faulttree.simulator import UserSimulator


@pytest.fixture(scope="module")
def case(vehicle_tree):
    return vehicle_tree, sample_scenario(vehicle_tree, random.Random(3))


def _script(sim, nodes):
    out = []
    for turn, node in enumerate(nodes, 1):
        out.append(sim.answer_check(node, turn))
        out.extend(sim.due_rollbacks(turn))
    return out


def test_same_seed_same_answers(case):
    tree, causes = case
    nodes = tree.ids[:30] * 2
    a = _script(UserSimulator(tree, causes, 5, vagueness=0.5, error_rate=0.3), nodes)
    b = _script(UserSimulator(tree, causes, 5, vagueness=0.5, error_rate=0.3), nodes)
    c = _script(UserSimulator(tree, causes, 6, vagueness=0.5, error_rate=0.3), nodes)
    assert a == b
    assert [u.text for u in a] != [u.text for u in c]


def test_clean_user_is_crisp_and_truthful(case):
    tree, causes = case
    truth = tree.evaluate(causes)
    sim = UserSimulator(tree, causes, 1, vagueness=0.0, error_rate=0.0)
    for turn, node in enumerate(tree.ids, 1):
        u = sim.answer_check(node, turn)
        assert u.strength == "crisp" and u.says_faulty == truth[node]
        obs = tree.nodes[node].check.if_faulty if truth[node] else tree.nodes[node].check.if_fine
        assert obs.lower() in u.text.lower()


def test_vagueness_rate(case):
    tree, causes = case
    sim = UserSimulator(tree, causes, 2, vagueness=0.4, error_rate=0.0)
    answers = [sim.answer_check(tree.ids[i % len(tree)], i) for i in range(1, 1201)]
    vague = sum(u.strength in ("vague", "blank") for u in answers) / len(answers)
    assert 0.34 < vague < 0.46
    blank = [u for u in answers if u.strength == "blank"]
    assert blank and all(u.says_faulty is None for u in blank)
    always = UserSimulator(tree, causes, 3, vagueness=1.0, error_rate=0.0)
    assert all(always.answer_check(n, i).strength in ("vague", "blank") for i, n in enumerate(tree.ids, 1))
    truth = tree.evaluate(causes)
    lean = [u.says_faulty == truth[u.node] for u in answers if u.strength == "vague"]
    assert 0.75 < sum(lean) / len(lean) < 0.95  # vague answers lean the right way ~85% of the time


def test_error_rate_and_consistent_repeats(case):
    tree, causes = case
    truth = tree.evaluate(causes)
    sim = UserSimulator(tree, causes, 4, vagueness=0.0, error_rate=0.25, rollback_prob=0.0)
    nodes = [n for n in tree.ids if n != tree.top]
    first = {n: sim.answer_check(n, i).says_faulty for i, n in enumerate(nodes, 1)}
    wrong = sum(first[n] != truth[n] for n in nodes) / len(nodes)
    assert 0.12 < wrong < 0.4
    again = {n: sim.answer_check(n, 500 + i).says_faulty for i, n in enumerate(nodes)}
    assert again == first  # a mistaken user repeats the same mistake until he corrects it
    assert not sim.due_rollbacks(10_000)  # rollback_prob=0: never corrected


@pytest.mark.parametrize("distance", [1, 5, 12])
def test_rollback_arrives_at_distance_and_refers_back(case, distance):
    tree, causes = case
    truth = tree.evaluate(causes)
    sim = UserSimulator(tree, causes, 9, vagueness=0.0, error_rate=1.0, rollback_distance=distance, rollback_prob=1.0)
    node = tree.basic_ids[0]
    said = sim.answer_check(node, 3)
    assert said.says_faulty != truth[node]
    for turn in range(3, 3 + distance):
        assert sim.due_rollbacks(turn) == []
    [rb] = sim.due_rollbacks(3 + distance)
    assert rb.kind == "rollback" and rb.refers_to == 3 and rb.node == node
    assert rb.says_faulty == truth[node] and rb.strength == "corrected"
    assert "turn 3" in rb.text
    wrong_obs = tree.nodes[node].check.if_faulty if said.says_faulty else tree.nodes[node].check.if_fine
    assert wrong_obs in rb.text
    assert sim.answer_check(node, 40).says_faulty == truth[node]  # later answers use the correction
    assert sim.state.retracted == [(node, said.says_faulty, 3)]


def test_free_questions(case):
    tree, causes = case
    sim = UserSimulator(tree, causes, 1, vagueness=0.0, error_rate=0.0)
    comp = next(n for n in tree.nodes.values() if n.aliases)
    u = sim.answer_question(f"What does the {comp.aliases[0]} look like?", 1)
    assert u.kind == "question" and u.node == comp.id
    hist = sim.answer_question("When did it start?", 2)
    assert hist.kind == "smalltalk" and tree.symptom in hist.text
    assert sim.answer_question("zzz qqq", 3).kind == "smalltalk"


def test_parameters_are_validated(case):
    tree, causes = case
    with pytest.raises(ValueError, match="vagueness"):
        UserSimulator(tree, causes, 1, vagueness=1.5)
    with pytest.raises(ValueError, match="rollback_distance"):
        UserSimulator(tree, causes, 1, rollback_distance=0)
