"""Social graphs: networkx generators or an edge list in, a compact CSR adjacency out.

Scenarios read neighbours as numpy arrays (`indptr`, `indices`), so a round over 100k agents is a
few array operations, not a Python loop over a networkx graph. `complete` graphs are never
materialised (n² edges): a partner is drawn uniformly from everyone else instead. `erdos_renyi`
is generated in numpy (G(n, m) with the requested mean degree) because networkx takes minutes
and gigabytes at 100k nodes; the other kinds come from networkx.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import networkx as nx
import numpy as np
from pydantic import BaseModel, ConfigDict, Field

log = logging.getLogger(__name__)

GraphKind = Literal["auto", "complete", "erdos_renyi", "watts_strogatz", "barabasi_albert", "edge_list"]


class GraphSpec(BaseModel):
    """Which social graph to build (`graph.kind=watts_strogatz graph.degree=6` on the command line)."""

    model_config = ConfigDict(extra="forbid")

    kind: GraphKind = "auto"  # auto: the scenario's default (complete mixing for opinions, erdos_renyi otherwise)
    degree: float = Field(default=6.0, gt=0)  # mean degree (erdos_renyi, watts_strogatz k, barabasi_albert 2m)
    rewire: float = Field(default=0.1, ge=0, le=1)  # watts_strogatz rewiring probability
    path: str | None = None  # edge_list: a file of "u v" lines (node ids 0..n-1 or any labels, mapped in order)


@dataclass
class SocialGraph:
    """An undirected graph on nodes 0..n-1 as CSR arrays (each edge stored both ways)."""

    n: int
    indptr: np.ndarray  # int64, len n+1
    indices: np.ndarray  # int32 neighbours, sorted within each row
    complete: bool = False  # complete mixing: indptr/indices are empty and every pair is adjacent

    @property
    def degree(self) -> np.ndarray:
        """Each node's degree."""
        if self.complete:
            return np.full(self.n, self.n - 1, dtype=np.int64)
        return np.diff(self.indptr)

    @property
    def n_edges(self) -> int:
        return self.n * (self.n - 1) // 2 if self.complete else int(self.indices.size // 2)

    def neighbors(self, i: int) -> np.ndarray:
        """Node i's neighbours (for complete graphs, everyone else; avoid at scale)."""
        if self.complete:
            return np.delete(np.arange(self.n), i)
        return self.indices[self.indptr[i] : self.indptr[i + 1]]

    def random_neighbor(self, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One uniformly random neighbour per node in `idx` (-1 for an isolated node), vectorised."""
        idx = np.asarray(idx, dtype=np.int64)
        if self.complete:
            other = rng.integers(0, self.n - 1, size=idx.size)
            return other + (other >= idx)  # skip oneself
        return self.neighbor_at(idx, rng.random(idx.size))

    def neighbor_at(self, idx: np.ndarray, u: np.ndarray) -> np.ndarray:
        """The neighbour that uniform `u[k]` in [0, 1) picks for node `idx[k]` (-1 for an isolated node).

        Separate from the draw so keyed draws (`societies.keyed`) pick the same partner on any shard."""
        idx = np.asarray(idx, dtype=np.int64)
        if self.complete:
            other = np.floor(u * (self.n - 1)).astype(np.int64)
            return other + (other >= idx)  # skip oneself
        deg = self.indptr[idx + 1] - self.indptr[idx]
        pick = np.floor(u * np.maximum(deg, 1)).astype(np.int64)
        out = self.indices[np.minimum(self.indptr[idx] + pick, max(self.indices.size - 1, 0))].astype(np.int64)
        out[deg == 0] = -1
        return out

    def gather(self, sources: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """All (source, neighbour) pairs for `sources`, vectorised: the sparse step of a diffusion round."""
        sources = np.asarray(sources, dtype=np.int64)
        if self.complete:
            src = np.repeat(sources, self.n)
            dst = np.tile(np.arange(self.n), sources.size)
            keep = src != dst
            return src[keep], dst[keep]
        starts, ends = self.indptr[sources], self.indptr[sources + 1]
        lens = ends - starts
        total = int(lens.sum())
        if total == 0:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        offsets = np.arange(total) - np.repeat(np.cumsum(lens) - lens, lens)
        return np.repeat(sources, lens), self.indices[np.repeat(starts, lens) + offsets].astype(np.int64)

    def to_networkx(self) -> nx.Graph:
        """The same graph as networkx (for plots and direct reference simulations; small n only)."""
        if self.complete:
            return nx.complete_graph(self.n)
        g = nx.Graph()
        g.add_nodes_from(range(self.n))
        src = np.repeat(np.arange(self.n), np.diff(self.indptr))
        mask = src < self.indices
        g.add_edges_from(zip(src[mask].tolist(), self.indices[mask].tolist()))
        return g


def from_edges(n: int, u: np.ndarray, v: np.ndarray) -> SocialGraph:
    """CSR from undirected edge arrays; self-loops and duplicates are dropped."""
    u, v = np.asarray(u, dtype=np.int64), np.asarray(v, dtype=np.int64)
    keep = u != v
    u, v = u[keep], v[keep]
    a, b = np.minimum(u, v), np.maximum(u, v)
    key = np.unique(a * n + b)
    a, b = key // n, key % n
    src = np.concatenate([a, b])
    dst = np.concatenate([b, a])
    order = np.lexsort((dst, src))
    src, dst = src[order], dst[order]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    return SocialGraph(n=n, indptr=indptr, indices=dst.astype(np.int32))


def from_networkx(g: nx.Graph) -> SocialGraph:
    """CSR from a networkx graph; nodes are relabelled 0..n-1 in the graph's node order."""
    nodes = list(g.nodes())
    pos = {node: i for i, node in enumerate(nodes)}
    if g.number_of_edges() == 0:
        return from_edges(len(nodes), np.empty(0), np.empty(0))
    u, v = zip(*((pos[a], pos[b]) for a, b in g.edges()))
    return from_edges(len(nodes), np.array(u), np.array(v))


def complete_graph(n: int) -> SocialGraph:
    """Complete mixing without storing n² edges."""
    return SocialGraph(n=n, indptr=np.zeros(n + 1, np.int64), indices=np.empty(0, np.int32), complete=True)


def gnm(n: int, degree: float, rng: np.random.Generator) -> SocialGraph:
    """Erdos-Renyi G(n, m) with m = n*degree/2, in numpy (a few duplicate draws are dropped)."""
    m = int(round(n * degree / 2))
    u = rng.integers(0, n, size=m)
    v = rng.integers(0, n, size=m)
    return from_edges(n, u, v)


def read_edge_list(path: str | Path) -> SocialGraph:
    """An edge list file ("u v" per line, '#' comments) as a graph; labels are mapped in first-seen order."""
    return from_networkx(nx.read_edgelist(str(path), comments="#", nodetype=str))


def build_graph(spec: GraphSpec, n: int, seed: int, default: GraphKind = "erdos_renyi") -> SocialGraph:
    """The graph `spec` asks for on n nodes, deterministic per seed."""
    kind = default if spec.kind == "auto" else spec.kind
    rng = np.random.default_rng([seed, 0x6A])  # its own stream: the graph does not shift the dynamics' draws
    if kind == "complete":
        return complete_graph(n)
    if kind == "erdos_renyi":
        return gnm(n, spec.degree, rng)
    s = int(rng.integers(2**31))
    if kind == "watts_strogatz":
        k = max(2, int(round(spec.degree)))
        return from_networkx(nx.connected_watts_strogatz_graph(n, k, spec.rewire, seed=s))
    if kind == "barabasi_albert":
        return from_networkx(nx.barabasi_albert_graph(n, max(1, int(round(spec.degree / 2))), seed=s))
    if kind == "edge_list":
        if not spec.path:
            raise ValueError("graph.kind=edge_list needs graph.path=<file of 'u v' lines>")
        g = read_edge_list(spec.path)
        if g.n != n:
            log.info("edge list %s has %d nodes; the society has that many agents", spec.path, g.n)
        return g
    raise ValueError(f"unknown graph kind {kind!r}")
