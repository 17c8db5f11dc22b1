"""Information diffusion: one post spreads over a social graph, agent by agent.

Seeds post at round 0. Each round, the agents that shared in the previous round expose their
neighbours who have not shared yet; an exposed agent sees who shared and answers `share` or
`ignore`. Only exposed agents are active (sparse activation: a round costs the frontier's
edges, not n), and with persona activity < 1 an exposed agent is online only with that chance
(an offline agent misses that exposure). The run terminates when no one is exposed.

With the independent-cascade rule (`rule.py`, `IndependentCascade`: share with probability
1 - (1 - p)^k after k exposures) this is the independent cascade model: each newly active
node gets one chance to activate each inactive neighbour with probability p
(tests/societies/scenarios/test_known_results.py checks it against a direct networkx simulation).
"""

from __future__ import annotations

import numpy as np

from societies.env import WAIT, Moves, Scenario, agent_id
from societies.graphs import SocialGraph
from societies.metrics import cascade_stats
from societies.personas import Persona

SHARE, IGNORE = 1, 2
POST = "The old river bridge closes for repairs next month; the ferry runs every 20 minutes instead."
SHOW_SOURCES = 5


class DiffusionScenario(Scenario):
    """One post's cascade over a graph."""

    name = "diffusion"
    state_name = "adopted: 1 = shared the post, 0 = not (yet)"
    actions = ("share", "ignore")

    def __init__(
        self,
        graph: SocialGraph,
        n_seeds: int = 1,
        personas: list[Persona] | None = None,
        seeds: np.ndarray | None = None,
        post: str = POST,
        activity: float | None = None,
    ) -> None:
        super().__init__(graph.n, personas)
        if activity is not None:
            self.activity = np.full(self.n, float(activity))
        if not 1 <= n_seeds <= graph.n:
            raise ValueError(f"n_seeds must be in 1..{graph.n}, got {n_seeds}")
        self.graph = graph
        self.n_seeds = n_seeds
        self.fixed_seeds = None if seeds is None else np.asarray(seeds, dtype=np.int64)
        self.post = post
        self._all_online = bool(np.all(self.activity >= 1.0))
        self._empty()

    def _empty(self) -> None:
        self.adopted = np.zeros(self.n, dtype=bool)
        self.generation = np.full(self.n, -1, dtype=np.int32)
        self.parent = np.full(self.n, -1, dtype=np.int64)
        self.frontier = np.empty(0, np.int64)
        self.exposures = np.zeros(self.n, dtype=np.int32)
        self.first_source = np.full(self.n, -1, dtype=np.int64)
        self.exp_dst = np.empty(0, np.int64)  # exposure pairs of this round, sorted by target
        self.exp_src = np.empty(0, np.int64)
        self.active = np.empty(0, np.int64)
        self.is_active = np.zeros(self.n, dtype=bool)
        self.new_adopters = 0

    def reset(self, rng: np.random.Generator) -> None:
        self._empty()
        seeds = self.fixed_seeds if self.fixed_seeds is not None else rng.choice(self.n, self.n_seeds, replace=False)
        seeds = np.unique(np.asarray(seeds, dtype=np.int64))
        self.adopted[seeds] = True
        self.generation[seeds] = 0
        self.frontier = seeds
        self.new_adopters = int(seeds.size)

    def begin_round(self, rng: np.random.Generator) -> None:
        # clear last round's sparse state (touch only what was set)
        self.is_active[self.active] = False
        self.exposures[self.exp_dst] = 0
        self.first_source[self.exp_dst] = -1
        src, dst = self.graph.gather(self.frontier)
        keep = ~self.adopted[dst]
        src, dst = src[keep], dst[keep]
        order = np.argsort(dst, kind="stable")
        self.exp_src, self.exp_dst = src[order], dst[order]
        exposed, first, counts = np.unique(self.exp_dst, return_index=True, return_counts=True)
        self.exposures[exposed] = counts
        self.first_source[exposed] = self.exp_src[first]
        if self._all_online or exposed.size == 0:
            self.active = exposed
        else:
            self.active = exposed[rng.random(exposed.size) < self.activity[exposed]]
        self.is_active[self.active] = True

    def apply(self, moves: Moves, rng: np.random.Generator) -> np.ndarray:
        sharers = moves.idx[moves.code == SHARE]
        sharers = sharers[~self.adopted[sharers]]
        self.adopted[sharers] = True
        self.generation[sharers] = self.round + 1
        self.parent[sharers] = self.first_source[sharers]
        self.frontier = np.sort(sharers)
        self.new_adopters = int(sharers.size)
        return np.zeros(self.n)

    def done(self) -> bool:
        return self.active.size == 0

    # -- text -----------------------------------------------------------------------------------
    def instruction(self, i: int) -> str:
        return (
            f"{self.persona(i)} You read a social feed. When people you follow share a post, decide whether "
            "to 'share' it with your own followers or 'ignore' it. You can share a post once."
        )

    def observe(self, i: int) -> str:
        text = f"Round {self.round}."
        if self.adopted[i]:
            g = int(self.generation[i])
            return text + (" You posted: " if g == 0 else f" You shared this post in round {g - 1}: ") + repr(self.post)
        if not self.is_active[i]:
            return text + " Nothing new in your feed."
        lo, hi = np.searchsorted(self.exp_dst, [i, i + 1])
        src = self.exp_src[lo:hi]
        names = ", ".join(agent_id(int(s)) for s in src[:SHOW_SOURCES])
        more = f" and {src.size - SHOW_SOURCES} more" if src.size > SHOW_SOURCES else ""
        return text + f" {names}{more} shared this post: {self.post!r}"

    def available(self, i: int) -> list[str]:
        return list(self.actions) if self.is_active[i] else [WAIT]

    # -- measurement ----------------------------------------------------------------------------
    def metrics(self) -> dict[str, float]:
        stats = cascade_stats(self.generation)
        return {**stats, "new_adopters": float(self.new_adopters), "exposed": float(self.active.size)}

    def node_state(self) -> np.ndarray:
        return self.adopted.astype(float)

    def agent_outcome(self, i: int) -> tuple[float, bool]:
        return float(self.adopted[i]), bool(self.adopted[i] and self.generation[i] > 0)
