"""The scripted expert: honest accuracy thresholds, soft evidence, revision on rollback."""

from __future__ import annotations

import numpy as np

from envs.faulttree.belief import Belief, Evidence, evidence_from
from envs.faulttree.expert import decide
from envs.faulttree.rollout import run_expert
from envs.faulttree.scenario import hypotheses
from envs.faulttree.simulator import Utterance


def _accuracy(env, n):
    results = [run_expert(env, seed) for seed in range(n)]
    return results, float(np.mean([r.success for r in results]))


def test_expert_is_near_perfect_with_a_clear_user(make_env):
    results, acc = _accuracy(make_env(vagueness=0.0, error_rate=0.0), 25)
    assert acc >= 0.95  # measured 1.0
    assert np.mean([r.turns for r in results]) < 20 and not any(r.truncated for r in results)


def test_expert_copes_with_default_vagueness_and_errors(make_env):
    results, acc = _accuracy(make_env(), 40)  # vagueness 0.3, error_rate 0.1
    assert acc >= 0.75  # measured 0.85-0.9 on this seed range


def test_expert_rarely_rests_on_retracted_facts(make_env):
    env = make_env(vagueness=0.0, error_rate=0.3, rollback_distance=2, rollback_prob=1.0)
    results, acc = _accuracy(env, 30)
    with_rb = [r for r in results if r.rollbacks_seen]
    assert len(with_rb) >= 10
    assert np.mean([r.used_retracted_fact for r in with_rb]) <= 0.1
    assert acc >= 0.6


def test_vague_answers_are_soft_evidence(vehicle_tree):
    belief = Belief(vehicle_tree, hypotheses(vehicle_tree))
    node = vehicle_tree.ids[1]  # a subsystem event
    prior = belief.marginals(belief.posterior([]))[1]
    crisp = belief.marginals(belief.posterior([Evidence(node, True, "crisp")]))[1]
    vague = belief.marginals(belief.posterior([Evidence(node, True, "vague")]))[1]
    assert prior < vague < crisp


def test_rollback_revises_the_belief(vehicle_tree):
    tree = vehicle_tree
    hyp = hypotheses(tree)
    truth = hyp.sets[int(np.argmax(hyp.prior))]
    state = tree.evaluate(truth)
    belief = Belief(tree, hyp)
    sub = tree.nodes[tree.top].children
    faulty_sub = next(s for s in sub if state[s])
    # The user wrongly says the faulty subsystem is fine, then corrects it.
    wrong = [Utterance(1, "check", "", faulty_sub, False, "crisp")]
    wrong += [Utterance(2 + i, "check", "", s, state[s], "crisp") for i, s in enumerate(sub) if s != faulty_sub]
    before = belief.marginals(belief.posterior(evidence_from(wrong)))[tree.index[faulty_sub]]
    rollback = Utterance(9, "rollback", "", faulty_sub, True, "corrected", refers_to=1)
    ev = evidence_from(wrong + [rollback])
    after = belief.marginals(belief.posterior(ev))[tree.index[faulty_sub]]
    assert before < 0.5 < 0.95 < after
    assert [e for e in ev if e.node == faulty_sub] == [Evidence(faulty_sub, True, "corrected")]


def test_expert_is_deterministic_and_stops_at_the_limit(make_env, vehicle_tree):
    env = make_env(vagueness=0.5, error_rate=0.2)
    env.reset(seed=11)
    assert env.unwrapped.expert_action() == env.unwrapped.expert_action()
    belief = Belief(vehicle_tree, hypotheses(vehicle_tree))
    assert decide(belief, [], turns_left=1).kind == "diagnose"
    assert decide(belief, [], turns_left=30).kind == "check"
