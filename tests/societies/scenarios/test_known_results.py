"""Rule societies reproduce the classic results of their models (small sizes, seeded, stated tolerances).

Every run is seeded, so each check is deterministic; the tolerances say how far from the
textbook value a correct implementation may land at these sizes (and were chosen before looking
at borderline seeds, from the models' known variability).
"""

from __future__ import annotations

import random

import networkx as nx
import numpy as np
import pytest
from scipy import stats

from societies.env import SocietyEnv
from societies.graphs import complete_graph, from_networkx
from societies.metrics import n_clusters
from societies.rules import play_round
from societies.scenarios.cooperation import CooperationScenario, IPDStrategies
from societies.scenarios.diffusion import DiffusionScenario, IndependentCascade
from societies.scenarios.opinion import Deffuant, DeGroot, OpinionScenario, degroot_limit


def run_to_end(env: SocietyEnv, rule, seed: int) -> None:
    env.start(seed)
    rng = np.random.default_rng([seed, 1])
    while env.agents:
        play_round(env, rule, rng)


# ------------------------------------------------------------------------ Deffuant bounded confidence
@pytest.mark.parametrize(
    "threshold,low,high",
    [(0.1, 4.0, 6.0), (0.2, 2.0, 3.0), (0.3, 1.0, 2.0)],
)
def test_deffuant_clusters_about_one_over_twice_the_threshold(threshold: float, low: float, high: float) -> None:
    """Deffuant et al. (2000): final major clusters ~ 1/(2 threshold): 5, 2.5, 1.7 here (mean over 10 seeds).

    500 agents on complete mixing, mu = 0.5, 300 rounds; clusters split at gaps > 0.02 and holding
    >= 1% of agents. Measured (seeds 0-9): 4.7 / 2.1 / 1.0."""
    counts = []
    for seed in range(10):
        env = SocietyEnv(OpinionScenario(complete_graph(500), mu=0.5), max_rounds=300)
        run_to_end(env, Deffuant(threshold), seed)
        assert env.scenario.last_change < 1e-3  # settled
        counts.append(n_clusters(env.scenario.x, gap=0.02, min_share=0.01))
    assert low <= np.mean(counts) <= high, counts


# ------------------------------------------------------------------------------------ DeGroot
@pytest.mark.parametrize(
    "graph",
    [nx.barabasi_albert_graph(200, 2, seed=1), nx.connected_watts_strogatz_graph(200, 4, 0.2, seed=1)],
    ids=["barabasi_albert", "watts_strogatz"],
)
def test_degroot_reaches_the_stationary_weighted_average(graph: nx.Graph) -> None:
    """DeGroot (1974): on a connected aperiodic graph x(t) = W^t x0 -> (pi . x0) 1, pi the stationary law of W."""
    sc = OpinionScenario(from_networkx(graph))
    env = SocietyEnv(sc, max_rounds=5000)
    env.start(3)
    x0 = sc.x.copy()
    rng = np.random.default_rng(0)
    while env.agents and not (sc.round > 0 and sc.last_change < 1e-13):
        play_round(env, DeGroot(), rng)
    target = degroot_limit(sc, x0)
    assert np.max(np.abs(sc.x - target)) < 1e-9
    # the weighting matters: the consensus is not the plain mean of the start (0.4977 / 0.5102 vs 0.5072)
    assert abs(target - x0.mean()) > 1e-3


# ---------------------------------------------------------------------------- independent cascade
def networkx_cascade(g: nx.Graph, seed_node: int, p: float, rnd: random.Random) -> int:
    """The independent cascade model, simulated directly on the networkx graph (Kempe et al., 2003)."""
    active, frontier = {seed_node}, [seed_node]
    while frontier:
        new = []
        for u in frontier:
            for v in g.neighbors(u):
                if v not in active and rnd.random() < p:
                    active.add(v)
                    new.append(v)
        frontier = new
    return len(active)


def env_cascades(g: nx.Graph, p: float, runs: int) -> np.ndarray:
    env = SocietyEnv(DiffusionScenario(from_networkx(g)), max_rounds=10_000)
    sizes = []
    for seed in range(runs):
        run_to_end(env, IndependentCascade(p), seed)
        sizes.append(int(env.scenario.adopted.sum()))
    return np.array(sizes)


@pytest.mark.parametrize("p,edges", [(0.3, 600), (0.15, 900)], ids=["p0.3-deg4", "p0.15-deg6"])
def test_cascade_sizes_match_a_direct_networkx_simulation(p: float, edges: int) -> None:
    """Same graph (G(300, m)), same p, one uniformly random seed; 1,500 cascades each way.

    Measured: p=0.3, deg 4: means 31.0 (networkx) vs 29.0 (env), SE 1.6, KS p 0.57, P(>=20) 0.325 vs 0.313,
    q90 113 vs 108; p=0.15, deg 6: 6.38 vs 6.58, SE 0.4, KS p 0.995.

    Tolerances: two-sample KS p-value > 0.01; means within 4 standard errors of their difference;
    the chance of a large outbreak (>= 20 nodes) within 4 standard errors; the median and the
    90th percentile within 15% (+1 node)."""
    g = nx.gnm_random_graph(300, edges, seed=7)
    runs = 1500
    rnd = random.Random(1)
    nodes = list(g.nodes())
    ref = np.array([networkx_cascade(g, rnd.choice(nodes), p, rnd) for _ in range(runs)])
    ours = env_cascades(g, p, runs)
    assert stats.ks_2samp(ref, ours).pvalue > 0.01
    se = np.sqrt(ref.var() / runs + ours.var() / runs)
    assert abs(ref.mean() - ours.mean()) < 4 * se, (ref.mean(), ours.mean(), se)
    big_ref, big_ours = np.mean(ref >= 20), np.mean(ours >= 20)
    se_big = np.sqrt(big_ref * (1 - big_ref) / runs + big_ours * (1 - big_ours) / runs)
    assert abs(big_ref - big_ours) < 4 * se_big + 1e-9
    for q in (50, 90):
        a, b = np.percentile(ref, q), np.percentile(ours, q)
        assert abs(a - b) <= 0.15 * a + 1, (q, a, b)


def test_cascade_extremes_are_exact() -> None:
    """p = 1 reaches the seed's whole component; p = 0 stops at the seed."""
    g = nx.gnm_random_graph(200, 180, seed=3)
    for p, expect in ((1.0, "component"), (0.0, "seed")):
        env = SocietyEnv(DiffusionScenario(from_networkx(g)), max_rounds=1000)
        run_to_end(env, IndependentCascade(p), 5)
        seed = int(np.flatnonzero(env.scenario.generation == 0)[0])
        size = int(env.scenario.adopted.sum())
        assert size == (len(nx.node_connected_component(g, seed)) if expect == "component" else 1)
        if expect == "component":  # generations are BFS distances from the seed
            dist = nx.single_source_shortest_path_length(g, seed)
            assert all(env.scenario.generation[v] == d for v, d in dist.items())


# ----------------------------------------------------------------------- iterated prisoner's dilemma
def tournament(names: list[str], seeds: int = 5, match_length: int = 200) -> tuple[np.ndarray, CooperationScenario]:
    total = np.zeros(len(names))
    for seed in range(seeds):
        sc = CooperationScenario(len(names), match_length=match_length)
        run_to_end(SocietyEnv(sc, max_rounds=10**6), IPDStrategies(names), seed)
        total += sc.mean_payoff()
    return total / seeds, sc


AXELROD_7 = ["tit_for_tat", "always_cooperate", "always_defect", "grudger", "tit_for_two_tats", "pavlov", "random"]


def test_tit_for_tat_ranks_near_the_top() -> None:
    """Axelrod (1980): TFT does well in a round robin. Measured: 2nd of 7 (2.54 per move; grudger 2.67)."""
    score, sc = tournament(AXELROD_7)
    rank = int(np.argsort(-score).tolist().index(0)) + 1
    assert rank <= 2, dict(zip(AXELROD_7, score.round(3)))
    assert score[0] >= 0.9 * score.max()
    for weaker in ("always_defect", "always_cooperate", "random"):
        assert score[0] > score[AXELROD_7.index(weaker)]
    # TFT never outscores an opponent in a match, yet ranks near the top
    assert sc.pair_score is not None
    assert np.all(sc.pair_score[0, 1:] <= sc.pair_score[1:, 0] + 1e-9)


def test_tit_for_tat_near_the_top_with_exploiters_too() -> None:
    """With suspicious TFT and Joss added, measured: 3rd of 9 (2.37; TF2T 2.54, always cooperate 2.39)."""
    names = [*AXELROD_7, "suspicious_tit_for_tat", "joss"]
    score, _ = tournament(names)
    rank = int(np.argsort(-score).tolist().index(0)) + 1
    assert rank <= 3, dict(zip(names, score.round(3)))


def test_tit_for_tat_against_always_defect_scores_the_textbook_numbers() -> None:
    """200 moves: TFT is exploited once, then both defect: 0 + 199 * 1 against 5 + 199 * 1."""
    sc = CooperationScenario(2, match_length=200)
    run_to_end(SocietyEnv(sc, max_rounds=10**6), IPDStrategies(["tit_for_tat", "always_defect"]), 0)
    assert sc.score.tolist() == [199.0, 204.0]
