"""The Gymnasium env: seeds, snapshot/restore, actions, reward, info, rollback, hook, limits.

The contract (Gymnasium's checker without warnings, determinism, bad actions, snapshot round
trip, the after-end rule, the action cap) is checked for every registered env in tests/test_contract.py.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from gymnasium.wrappers import TimeLimit

from envs.contract import ECHO_CHARS, MAX_ACTION_CHARS, HasExpert, Snapshottable
from envs.faulttree.reward import diagnosis_reward, used_retracted_fact

ROLLBACK_ENV = dict(vagueness=0.0, error_rate=0.5, rollback_distance=2, rollback_prob=1.0)


def test_zero_config_reset_and_info(make_env):
    env = make_env()
    assert isinstance(env.unwrapped, Snapshottable) and isinstance(env.unwrapped, HasExpert)
    assert isinstance(env, TimeLimit) and env.spec.max_episode_steps == 40  # the registered step limit
    obs, info = env.reset(seed=0)
    assert "Fault tree:" in obs and obs.rstrip().split("\n")[-1].startswith("User: ")
    assert info["instruction"] and info["action_templates"] == ["check[...]", "ask[...]", "diagnose[...]"]
    acts = info["available_actions"]
    assert (
        1 <= len(acts) <= 16
        and any(a.startswith("check[") for a in acts)
        and any(a.startswith("diagnose[") for a in acts)
    )
    assert env.unwrapped.expert_action() in acts
    for key in ("turns", "checks_used", "rollbacks_seen", "invalid_actions"):
        assert info[key] == 0


def _trajectory(env, seed, n=12):
    out = [env.reset(seed=seed)]
    for _ in range(n):
        step = env.step(env.unwrapped.expert_action())
        out.append(step)
        if step[2] or step[3]:
            break
    return out


def test_same_seed_same_trajectory_other_seed_other(make_env):
    a = _trajectory(make_env(vagueness=0.5, error_rate=0.2), 42)
    b = _trajectory(make_env(vagueness=0.5, error_rate=0.2), 42)
    assert a == b
    assert _trajectory(make_env(vagueness=0.5, error_rate=0.2), 43) != a


def test_snapshot_restore_branches_identically(make_env):
    env = make_env(vagueness=0.5, error_rate=0.3, rollback_distance=3)
    env.reset(seed=7)
    for _ in range(3):
        env.step(env.unwrapped.expert_action())
    snap = env.unwrapped.snapshot()
    first = [env.step(a) for a in ("check[B1]", "check[B2]", "ask[when did it start?]", "check[B3]")]
    env.unwrapped.restore(snap)
    second = [env.step(a) for a in ("check[B1]", "check[B2]", "ask[when did it start?]", "check[B3]")]
    assert first == second


def test_bad_actions_change_nothing_and_explain(make_env):
    env = make_env()
    env.reset(seed=1)
    before = env.unwrapped.snapshot()["episode"]
    for bad in ("", "dance", "check[]", "check[no such thing here]", "diagnose[T]", "ask"):
        obs, reward, term, trunc, info = env.step(bad)
        assert obs.startswith("Invalid action:") and info["error"] == obs and "check[...]" in obs
        assert reward == 0 and not term and not trunc and info["turns"] == 0
    after = env.unwrapped.snapshot()["episode"]
    assert after.dialogue == before.dialogue and after.turn == before.turn
    assert after.invalid == 6


def test_action_forms_are_mapped(make_env):
    env = make_env(vagueness=0.0, error_rate=0.0)
    env.reset(seed=2, options={"entry_index": 0})
    tree = env.unwrapped._tree
    comp = next(n for n in tree.nodes.values() if n.aliases and n.aliases[0] != n.label)
    for action in (
        f"check[{comp.id}]",
        f"check[{comp.label.lower()}]",
        f"check[{comp.aliases[0]}]",
        f"please check the {comp.aliases[0]}",
        f"Check [{comp.label}]",
    ):
        obs, *_, info = env.step(action)
        assert not obs.startswith("Invalid"), action
        assert env.unwrapped._ep.dialogue[-1].node == comp.id
    assert env.step("Is anything leaking?")[4]["questions_asked"] == 1
    basic = tree.nodes[tree.basic_ids[0]]
    _, _, term, _, info = env.step(f"I think it's the {basic.label.lower()}")
    assert term and info["diagnosis"] == [basic.id]


def test_truncation_at_turn_limit(make_env):
    env = make_env(max_turns=5)
    env.reset(seed=3)
    for i in range(5):
        obs, reward, term, trunc, info = env.step("ask[when did it start?]")
        assert not term and trunc == (i == 4)
    assert reward == 0 and info["success"] is False and "turn limit" in obs
    # after the end: refused, the ending's flags again (the contract's after-end rule)
    obs, reward, term, trunc, info = env.step("check[B1]")
    assert reward == 0 and (term, trunc) == (False, True) and "episode is over" in info["error"]
    assert info["turns"] == 5 and info["invalid_actions"] == 0
    env2 = make_env(max_turns=5, max_episode_steps=3)  # all steps, bad ones too: Gymnasium's TimeLimit
    env2.reset(seed=3)
    assert [env2.step("nonsense")[3] for _ in range(3)] == [False, False, True]


def test_after_diagnosis_steps_report_termination(make_env):
    env = make_env()
    env.reset(seed=4)
    _, _, term, _, _ = env.step("diagnose[" + "; ".join(env.unwrapped._ep.entry.causes) + "]")
    assert term
    obs, reward, term, trunc, info = env.step("check[B1]")
    assert (reward, term, trunc) == (0.0, True, False) and obs == info["error"] and "reset()" in obs
    assert info["success"] is True  # the outcome stays in info


def test_huge_action_is_refused_with_a_short_message(make_env):
    """A 1M-char check[...] used to be fuzzy-matched (32 s) and echoed whole in the error."""
    env = make_env()
    env.reset(seed=0)
    for action in ("check[" + "x" * 1_000_000 + "]", "ask[" + "y" * (MAX_ACTION_CHARS + 1) + "]"):
        obs, reward, term, trunc, info = env.step(action)
        assert (reward, term, trunc) == (0.0, False, False) and f"at most {MAX_ACTION_CHARS:,}" in info["error"]
        assert len(info["error"]) < 1_500 and action[6] * ECHO_CHARS not in info["error"]
    assert info["turns"] == 0 and info["invalid_actions"] == 2


def test_reward_and_partial_credit():
    assert diagnosis_reward({"B1"}, {"B1"}) == 1.0
    assert diagnosis_reward({"B1", "B2"}, {"B2", "B1"}) == 1.0
    assert diagnosis_reward({"B1"}, {"B1", "B2"}) == 0.25
    assert diagnosis_reward({"B1", "B3"}, {"B1"}) == 0.25
    assert diagnosis_reward({"B1", "B2"}, {"B1", "B2", "B3"}) == pytest.approx(1 / 3)
    assert diagnosis_reward({"B3"}, {"B1"}) == 0.0
    assert diagnosis_reward(set(), {"B1"}) == 0.0


def test_env_reward_matches_truth(make_env):
    env = make_env()
    env.reset(seed=4)
    ep, tree = env.unwrapped._ep, env.unwrapped._tree
    wrong = next(b for b in tree.basic_ids if b not in ep.entry.causes)
    snap = env.unwrapped.snapshot()
    _, r, term, _, info = env.step(f"diagnose[{wrong}]")
    assert term and r == 0 and info["success"] is False and info["true_causes"] == ep.entry.causes
    env.unwrapped.restore(snap)
    _, r, term, _, info = env.step("diagnose[" + "; ".join(ep.entry.causes) + "]")
    assert r == 1.0 and info["success"] is True


def _find_rollback(env, seeds=range(40)):
    """Run the expert until a rollback arrives; return the env at that point."""
    for seed in seeds:
        env.reset(seed=seed)
        for _ in range(env.unwrapped.max_turns):
            _, _, term, trunc, info = env.step(env.unwrapped.expert_action())
            if info["rollbacks_seen"] or term or trunc:
                break
        if info["rollbacks_seen"] and not (term or trunc):
            return info
    raise AssertionError("no rollback in 40 episodes")


def test_rollback_is_shown_and_the_expert_revises(make_env):
    env = make_env(**ROLLBACK_ENV)
    _find_rollback(env)
    ep, tree, sim = env.unwrapped._ep, env.unwrapped._tree, env.unwrapped._sim
    rb = next(u for u in ep.dialogue if u.kind == "rollback")
    assert f"turn {rb.refers_to}" in rb.text
    node, wrong, _ = sim.state.retracted[0]
    # Diagnosing a cause set that agrees with the retracted answer is flagged ...
    post_belief = env.unwrapped._belief
    agree = [h for h in post_belief.hyp.sets if tree.evaluate(h)[node] == wrong]
    assert used_retracted_fact(tree, agree[0], sim.state.retracted)
    # ... while the corrected answer, not the retracted one, now drives the belief.
    post, evidence, _ = env.unwrapped._analysis()
    assert [e for e in evidence if e.node == node] and all(e.faulty != wrong for e in evidence if e.node == node)


def test_rephraser_hook(make_env):
    calls = []

    class Brain:
        def complete(self, messages):
            calls.append(messages)
            return SimpleNamespace(text="(reworded) " + messages[-1]["content"].split("\n")[-1])

    env = make_env(rephraser=Brain(), vagueness=0.0, error_rate=0.0)
    obs, _ = env.reset(seed=5)
    assert "User: (reworded)" in obs and calls[0][0]["role"] == "system"
    obs, *_ = env.step(env.unwrapped.expert_action())
    assert obs.startswith("User: (reworded)")
    # the truth stays rule-based: same structured answers as without the rephraser
    plain = make_env(vagueness=0.0, error_rate=0.0)
    plain.reset(seed=5)
    plain.step(plain.unwrapped.expert_action())
    assert [(u.node, u.says_faulty) for u in plain.unwrapped._ep.dialogue] == [
        (u.node, u.says_faulty) for u in env.unwrapped._ep.dialogue
    ]

    def broken(_text):
        raise RuntimeError("model down")

    env2 = make_env(rephraser=broken)
    obs, _ = env2.reset(seed=5)
    assert obs.endswith(env2.unwrapped._tree.symptom)
    with pytest.raises(TypeError):
        make_env(rephraser=42)


def test_domain_and_entry_options(make_env):
    env = make_env(domain="pump", split="dev")
    _, info = env.reset(seed=0, options={"entry_index": 3})
    assert info["domain"] == "pump" and info["entry_id"] == "dev-00003"
    with pytest.raises(ValueError):
        env.reset(options={"entry_index": 10_000})
    with pytest.raises(Exception, match="unknown domain"):
        make_env(domain="rocket")
