"""TD/GAE and SARSA(lambda) targets against hand-computed cases and a plain-loop reference."""

from __future__ import annotations

import numpy as np
import pytest

from agents.trajectories.schema import EpisodeRecord, EpisodeStats, Outcome, StepRecord
from prm.episodes import flatten, from_record
from prm.targets.td import discounted_reverse_cumsum, monte_carlo_returns, step_progress, td_targets


def test_paper_mode_three_steps_by_hand():
    a, b, c, R, lam = 0.2, 0.5, 0.7, 1.0, 0.9
    t = td_targets(np.array([a, b, c]), np.array([0, 0, R]), np.array([3]), np.array([True]), lam=lam)
    # delta = [a - 0, b - a, R - b]  (terminal: no gamma*M_T); Q = A + M_{t-1}
    assert t.q == pytest.approx([(1 - lam) * a + lam * (1 - lam) * b + lam**2 * R, (1 - lam) * b + lam * R, R])
    assert t.advantage == pytest.approx([t.q[0] - 0.0, t.q[1] - a, R - b])
    assert t.progress == pytest.approx([0.0, t.q[1] - t.q[0], t.q[2] - t.q[1]])


def test_sarsa_mode_three_steps_by_hand():
    a, b, c, R, lam = 0.2, 0.5, 0.7, 1.0, 0.9
    t = td_targets(np.array([a, b, c]), np.array([0, 0, R]), np.array([3]), np.array([True]), lam=lam, mode="sarsa")
    assert t.q == pytest.approx([(1 - lam) * b + lam * (1 - lam) * c + lam**2 * R, (1 - lam) * c + lam * R, R])


def test_gamma_discounts_both_modes():
    a, b, R, g, lam = 0.3, 0.6, 1.0, 0.5, 0.8
    p = td_targets(np.array([a, b]), np.array([0, R]), np.array([2]), np.array([True]), gamma=g, lam=lam)
    # delta0 = g*a - 0, delta1 = R - a ; Q0 = delta0 + g*lam*delta1 ; Q1 = delta1 + a
    assert p.q == pytest.approx([g * a + g * lam * (R - a), R])
    s = td_targets(np.array([a, b]), np.array([0, R]), np.array([2]), np.array([True]), gamma=g, lam=lam, mode="sarsa")
    # delta0 = g*b - a, delta1 = R - b ; Q0 = a + delta0 + g*lam*delta1
    assert s.q == pytest.approx([g * b + g * lam * (R - b), R])


def test_lambda_one_is_monte_carlo_and_lambda_zero_is_one_step():
    v = np.array([0.1, 0.9, 0.4, 0.3, 0.8])
    r = np.array([0, 0, 0.7, 0, 0.0])
    lengths, term = np.array([3, 2]), np.array([True, True])
    mc = monte_carlo_returns(r, lengths)
    for mode in ("paper", "sarsa"):
        assert td_targets(v, r, lengths, term, lam=1.0, mode=mode).q == pytest.approx(mc)
    # lambda = 0: paper target is r_t + gamma * M_t (its own value), sarsa is r_t + gamma * M_{t+1}
    assert td_targets(v, r, lengths, term, lam=0.0).q == pytest.approx([0.1, 0.9, 0.7, 0.3, 0.0])
    assert td_targets(v, r, lengths, term, lam=0.0, mode="sarsa").q == pytest.approx([0.9, 0.4, 0.7, 0.8, 0.0])


def test_truncated_bootstraps_terminated_does_not():
    v, r = np.array([0.2, 0.6]), np.array([0.0, 0.0])
    cut = td_targets(v, r, np.array([2]), np.array([False]), lam=0.5)
    end = td_targets(v, r, np.array([2]), np.array([True]), lam=0.5)
    assert cut.q[-1] == pytest.approx(0.6)  # paper: r_T + gamma * M_T
    assert end.q[-1] == pytest.approx(0.0)  # a real end (or a cut scored as failure): the outcome
    boot = td_targets(v, r, np.array([2]), np.array([False]), lam=0.5, mode="sarsa", bootstrap=np.array([0.9]))
    assert boot.q[-1] == pytest.approx(0.9)
    assert (
        td_targets(v, r, np.array([2]), np.array([True]), lam=0.5, mode="sarsa", bootstrap=np.array([0.9])).q[-1] == 0.0
    )


def _reference(values, rewards, lengths, terminal, gamma, lam, mode):
    """Plain per-trajectory loop straight from the formulas."""
    out, pos = [], 0
    for n, term in zip(lengths, terminal):
        v, r = values[pos : pos + n], rewards[pos : pos + n]
        delta = np.zeros(n)
        for t in range(n):
            if mode == "paper":
                boot = 0.0 if (t == n - 1 and term) else v[t]
                delta[t] = r[t] + gamma * boot - (v[t - 1] if t > 0 else 0.0)
            else:
                nxt = v[t + 1] if t < n - 1 else (0.0 if term else v[t])
                delta[t] = r[t] + gamma * nxt - v[t]
        adv = np.zeros(n)
        acc = 0.0
        for t in reversed(range(n)):
            acc = delta[t] + gamma * lam * acc
            adv[t] = acc
        base = np.array([v[t - 1] if t > 0 else 0.0 for t in range(n)]) if mode == "paper" else v
        out.append(adv + base)
        pos += n
    return np.concatenate(out)


@pytest.mark.parametrize("mode", ["paper", "sarsa"])
@pytest.mark.parametrize("gamma,lam", [(1.0, 0.95), (0.9, 0.7), (1.0, 0.0)])
def test_vectorised_equals_loop(mode, gamma, lam):
    rng = np.random.default_rng(1)
    lengths = rng.integers(1, 12, size=200)
    n = int(lengths.sum())
    values, rewards = rng.random(n), rng.random(n) * (rng.random(n) < 0.2)
    terminal = rng.random(len(lengths)) < 0.7
    got = td_targets(values, rewards, lengths, terminal, gamma=gamma, lam=lam, mode=mode).q
    assert got == pytest.approx(_reference(values, rewards, lengths, terminal, gamma, lam, mode), abs=1e-12)


def test_reverse_cumsum_and_progress_stay_inside_trajectories():
    x = np.array([1.0, 1.0, 1.0, 2.0, 2.0])
    assert discounted_reverse_cumsum(x, 0.5, np.array([3, 2])) == pytest.approx([1.75, 1.5, 1.0, 3.0, 2.0])
    assert step_progress(np.array([0.1, 0.4, 0.2, 0.9, 1.0]), np.array([3, 2])) == pytest.approx([0, 0.3, -0.2, 0, 0.1])


def test_bad_shapes_are_rejected():
    with pytest.raises(ValueError, match="lengths sum"):
        td_targets(np.zeros(3), np.zeros(3), np.array([2]), np.array([True]))
    with pytest.raises(ValueError, match="one flag per trajectory"):
        td_targets(np.zeros(3), np.zeros(3), np.array([3]), np.array([True, False]))
    with pytest.raises(ValueError, match="mode"):
        td_targets(np.zeros(1), np.zeros(1), np.array([1]), np.array([True]), mode="q")  # type: ignore[arg-type]


def _episode(rewards, terminated, truncated, success=False):
    steps = [
        StepRecord(
            index=i,
            raw_output="",
            action=f"a{i}",
            observation=f"o{i + 1}",
            reward=r,
            terminated=terminated and i == len(rewards) - 1,
            truncated=truncated and i == len(rewards) - 1,
        )
        for i, r in enumerate(rewards)
    ]
    return EpisodeRecord(
        episode_id="e",
        env="toy",
        env_id="toy",
        seed=0,
        instruction="do it",
        initial_observation="o0",
        brain="b",
        steps=steps,
        outcome=Outcome(
            reward=rewards[-1], total_reward=sum(rewards), success=success, terminated=terminated, truncated=truncated
        ),
        stats=EpisodeStats(
            steps=len(steps),
            env_steps=len(steps),
            invalid_actions=0,
            parse_failures=0,
            tokens_in=0,
            tokens_out=0,
            brain_time_s=0,
            wall_time_s=0,
        ),
        started_at=0,
        finished_at=0,
    )


def test_records_map_states_actions_and_ends():
    t = from_record(_episode([0.0, 0.0, 0.5], terminated=True, truncated=False))
    assert t.observations == ["o0", "o1", "o2"] and t.actions == ["a0", "a1", "a2"]
    assert t.terminal and t.outcome == 0.5
    cut = from_record(_episode([0.0, 0.0], terminated=False, truncated=True))
    assert cut.terminal and cut.outcome == 0.0  # a step-limit cut scored as failure: no bootstrap
    kept = from_record(_episode([0.0, 0.0], terminated=False, truncated=True), truncated_as_failure=False)
    assert not kept.terminal
    r, lengths, term = flatten([t, cut, kept])
    assert lengths.tolist() == [3, 2, 2] and term.tolist() == [True, True, False] and r.tolist()[:3] == [0, 0, 0.5]
    ok = from_record(_episode([0.0, 0.8], terminated=True, truncated=False, success=False), outcome="success")
    assert ok.rewards.tolist() == [0.0, 0.0]
