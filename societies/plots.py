"""PNG plots of a society run (matplotlib, Agg): metric curves, the network coloured by state, opinion paths."""

from __future__ import annotations

import logging
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402

from societies.graphs import SocialGraph  # noqa: E402
from societies.metrics import MetricSeries  # noqa: E402

log = logging.getLogger(__name__)
NETWORK_MAX = 1500  # larger graphs: the induced subgraph on the first NETWORK_MAX agents is drawn


def plot_metrics(series: MetricSeries, path: str | Path) -> Path:
    """One panel per metric against the round."""
    names = list(series.series)
    cols = min(3, max(1, len(names)))
    rows = (len(names) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows), squeeze=False)
    for ax, name in zip(axes.flat, names):
        ax.plot(series.rounds, series.series[name], lw=1.5)
        ax.set_title(name)
        ax.set_xlabel("round")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(names) :]:
        ax.axis("off")
    fig.suptitle(f"{series.scenario}: metrics per round")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return Path(path)


def plot_network(graph: SocialGraph, state: np.ndarray, path: str | Path, title: str, seed: int = 0) -> Path:
    """The graph with each node coloured by its state (complete mixing: nodes only, on a circle)."""
    n = min(graph.n, NETWORK_MAX)
    if graph.complete:
        g = nx.empty_graph(n)
        pos = nx.circular_layout(g)
    else:
        full = graph.to_networkx() if graph.n <= NETWORK_MAX else _induced(graph, n)
        g = full
        pos = nx.spring_layout(g, seed=seed, iterations=30)
    fig, ax = plt.subplots(figsize=(7, 7))
    if g.number_of_edges():
        nx.draw_networkx_edges(g, pos, ax=ax, alpha=0.15, width=0.5)
    nodes = nx.draw_networkx_nodes(
        g, pos, ax=ax, node_size=max(4, 4000 // max(n, 1)), node_color=state[:n], cmap="viridis", vmin=0, vmax=1
    )
    fig.colorbar(nodes, ax=ax, shrink=0.7)
    ax.set_title(title + (f" (first {n} of {graph.n} agents)" if graph.n > n else ""))
    ax.axis("off")
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return Path(path)


def _induced(graph: SocialGraph, n: int) -> nx.Graph:
    g = nx.Graph()
    g.add_nodes_from(range(n))
    for i in range(n):
        nb = graph.neighbors(i)
        g.add_edges_from((i, int(j)) for j in nb[nb < n] if j > i)
    return g


def plot_paths(rounds: list[int], values: np.ndarray, path: str | Path, title: str) -> Path:
    """Each sampled agent's state over the rounds (opinion paths merging into clusters)."""
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(rounds, values, lw=0.6, alpha=0.6)
    ax.set_xlabel("round")
    ax.set_ylabel("opinion")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return Path(path)
