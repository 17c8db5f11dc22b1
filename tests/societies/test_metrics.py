"""Echo-chamber measures: modularity of the graph split by opinion cluster, and neighbour assortativity.

Both are checked against networkx on small graphs and on opinion societies: camps that follow a
graph's communities score the communities' modularity; clusters scattered over a graph score little.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from societies.env import SocietyEnv
from societies.graphs import complete_graph, from_networkx
from societies.metrics import cluster_labels, clusters, neighbor_assortativity, partition_modularity
from societies.rules import play_round
from societies.scenarios.opinion import Deffuant, OpinionScenario

GRAPHS = {
    "watts_strogatz": nx.connected_watts_strogatz_graph(80, 6, 0.1, seed=2),
    "barabasi_albert": nx.barabasi_albert_graph(80, 2, seed=3),
    "karate": nx.karate_club_graph(),
}


def as_sets(labels: np.ndarray) -> list[set[int]]:
    return [set(np.flatnonzero(labels == k).tolist()) for k in np.unique(labels)]


@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("gap", [0.01, 0.05, 0.2])
def test_modularity_by_opinion_cluster_matches_networkx(name: str, gap: float) -> None:
    g = nx.Graph(GRAPHS[name])  # unweighted: the karate club's edge weights are not the social graph's
    nx.set_edge_attributes(g, 1, "weight")
    sg = from_networkx(g)
    x = np.random.default_rng(len(name)).random(sg.n)
    labels = cluster_labels(x, gap)
    ours = partition_modularity(sg.indptr, sg.indices, labels)
    assert ours == pytest.approx(nx.community.modularity(g, as_sets(labels)), abs=1e-12)


def test_the_karate_club_split_has_its_known_modularity() -> None:
    """Zachary's two factions: Q = 0.3582 on the unweighted graph (networkx gives the same)."""
    g = nx.karate_club_graph()
    sg = from_networkx(g)
    labels = np.array([g.nodes[i]["club"] == "Officer" for i in range(sg.n)], dtype=np.int64)
    q = partition_modularity(sg.indptr, sg.indices, labels)
    assert q == pytest.approx(nx.community.modularity(g, as_sets(labels), weight=None), abs=1e-12)
    assert q == pytest.approx(0.3582, abs=1e-4)
    assert partition_modularity(sg.indptr, sg.indices, np.zeros(sg.n, np.int64)) == pytest.approx(0.0, abs=1e-12)


def test_cluster_labels_are_the_partition_clusters_gives() -> None:
    x = np.random.default_rng(0).random(500) ** 3
    for gap in (0.001, 0.01, 0.05):
        labels = cluster_labels(x, gap)
        assert sorted(map(frozenset, as_sets(labels)), key=min) == sorted(
            (frozenset(c.tolist()) for c in clusters(x, gap)), key=min
        )
        assert np.all(np.diff(labels[np.argsort(x, kind="stable")]) >= 0)  # 0 = lowest opinions


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_neighbour_assortativity_matches_networkx(name: str) -> None:
    g = GRAPHS[name]
    sg = from_networkx(g)
    x = np.round(np.random.default_rng(1).random(sg.n), 1)  # few distinct values keep networkx's mixing matrix small
    nx.set_node_attributes(g, {i: float(x[i]) for i in range(sg.n)}, "x")
    ours = neighbor_assortativity(sg.indptr, sg.indices, x)
    assert ours == pytest.approx(nx.numeric_assortativity_coefficient(g, "x"), abs=1e-9)
    assert np.isnan(neighbor_assortativity(sg.indptr, sg.indices, np.full(sg.n, 0.3)))  # consensus: no spread


def deffuant_run(g: nx.Graph, rounds: int, threshold: float, initial: np.ndarray | None = None) -> OpinionScenario:
    sc = OpinionScenario(from_networkx(g), initial=initial)
    env = SocietyEnv(sc, rounds)
    env.start(0)
    rng = np.random.default_rng(1)
    while env.agents:
        play_round(env, Deffuant(threshold), rng)
    return sc


def test_opinion_camps_that_follow_communities_are_echo_chambers() -> None:
    """Two planted communities (100 nodes each, p_in 0.08, p_out 0.004) that start on opposite sides
    (opinions in [0, 0.4] and [0.6, 1]); Deffuant with threshold 0.3, 300 rounds.

    The bridges join agents too far apart to compromise, so each community settles on its own
    opinion: the two clusters are the two communities, modularity equals the planted partition's
    (measured 0.455) and opinion assortativity is 0.91. From uniformly random opinions the same
    graph reaches one consensus cluster: modularity 0, whatever the assortativity (0.86)."""
    g = nx.planted_partition_graph(2, 100, 0.08, 0.004, seed=5)
    low, high = np.random.default_rng(0).random(100) * 0.4, 0.6 + np.random.default_rng(1).random(100) * 0.4
    camps = deffuant_run(g, 300, 0.3, np.concatenate([low, high]))
    m = camps.metrics()
    planted = nx.community.modularity(g, [set(range(100)), set(range(100, 200))])
    assert m["clusters_all"] == 2 and m["modularity"] == pytest.approx(planted, abs=1e-12) and planted > 0.4
    assert m["opinion_assortativity"] > 0.8
    mixed = deffuant_run(g, 300, 0.3).metrics()
    assert mixed["clusters_all"] == 1 and mixed["modularity"] == pytest.approx(0.0, abs=1e-12)


def test_opinion_metrics_on_a_small_world_graph_match_networkx() -> None:
    """Deffuant (threshold 0.25) on a Watts-Strogatz graph (300 nodes, k 6, rewiring 0.05), 600 rounds.

    Measured (seed 0): 6 major clusters (11 in all), yet modularity only 0.13 and assortativity 0.06:
    from random opinions, bounded confidence on a small world leaves clusters scattered over the
    graph, not walled off in parts of it."""
    sc = deffuant_run(nx.connected_watts_strogatz_graph(300, 6, 0.05, seed=4), 600, 0.25)
    m = sc.metrics()
    labels = cluster_labels(sc.x, sc.cluster_gap)
    assert m["modularity"] == pytest.approx(nx.community.modularity(sc.graph.to_networkx(), as_sets(labels)))
    assert m["clusters"] >= 3 and m["modularity"] < 0.3


def test_complete_mixing_has_no_graph_metrics() -> None:
    sc = OpinionScenario(complete_graph(50))
    SocietyEnv(sc, 3).start(0)
    assert "modularity" not in sc.metrics() and "clusters" in sc.metrics()
