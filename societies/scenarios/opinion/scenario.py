"""Opinion dynamics: each agent holds an opinion in [0, 1] and, each round, meets one neighbour.

An active agent may `keep` its opinion, `compromise` (move `mu` of the way to its partner's
opinion, Deffuant's update) or state any opinion with `opinion[<x>]` (how DeGroot agents and LLM
agents answer). Updates within a round use the opinions at the round's start (synchronous).
The rules that make this Deffuant bounded confidence or DeGroot averaging are in
`rule.py`; the env only carries out the moves. Partners are one uniformly random
neighbour per agent per round (on a complete graph: anyone else), a vectorised variant of
Deffuant's random pair picking; each agent updates only itself, so both sides of a
meeting compromise only if both choose to. With `pairing_key` the partner pick is a keyed hash
of (key, round, agent) (`societies.keyed`) instead of the env's generator, so a sharded run
(`societies.sharding`) picks the same partners on any number of shards.
"""

from __future__ import annotations

import re

import numpy as np

from envs.contract import excerpt
from societies.env import Moves, Scenario, agent_id
from societies.graphs import SocialGraph
from societies.keyed import keyed_uniform
from societies.metrics import cluster_labels, neighbor_assortativity, partition_modularity, polarization
from societies.personas import Persona

KEEP, COMPROMISE, STATE = 1, 2, 3
TEMPLATE = "opinion[...]"
_OPINION = re.compile(r"^opinion\[\s*([^\]]*)\s*\]$")
SHOW_NEIGHBOURS = 8  # neighbours listed in an observation (the rest are summarised)
CHOICES = tuple(f"opinion[{k / 10:.1f}]" for k in range(11))  # ranked seats' opinions: 0.0, 0.1, .., 1.0


class OpinionScenario(Scenario):
    """Opinions on a social graph; partners drawn each round."""

    name = "opinion"
    state_name = "opinion"
    actions = ("keep", "compromise")
    extra_moves = ("opinion",)

    def __init__(
        self,
        graph: SocialGraph,
        mu: float = 0.5,
        personas: list[Persona] | None = None,
        initial: np.ndarray | None = None,
        cluster_gap: float = 0.02,
        pairing_key: int | None = None,
    ) -> None:
        super().__init__(graph.n, personas)
        if not 0 < mu <= 1:
            raise ValueError(f"mu must be in (0, 1], got {mu}")
        self.graph = graph
        self.mu = mu
        self.initial = initial
        self.cluster_gap = cluster_gap
        self.pairing_key = pairing_key  # None: partners from the env's generator; else keyed by (round, agent)
        self.x = np.zeros(self.n)
        self.partner = np.full(self.n, -1, dtype=np.int64)
        self.last_change = 0.0

    def reset(self, rng: np.random.Generator) -> None:
        self.x = rng.random(self.n) if self.initial is None else np.clip(np.asarray(self.initial, float), 0, 1).copy()
        self.last_change = 0.0

    def begin_round(self, rng: np.random.Generator) -> None:
        super().begin_round(rng)
        self.partner = np.full(self.n, -1, dtype=np.int64)
        if self.pairing_key is None:
            self.partner[self.active] = self.graph.random_neighbor(self.active, rng)
        else:
            u = keyed_uniform(self.pairing_key, self.round, self.active)
            self.partner[self.active] = self.graph.neighbor_at(self.active, u)

    def apply(self, moves: Moves, rng: np.random.Generator) -> np.ndarray:
        new = self.x.copy()
        comp = moves.idx[(moves.code == COMPROMISE) & (self.partner[moves.idx] >= 0)]
        new[comp] = self.x[comp] + self.mu * (self.x[self.partner[comp]] - self.x[comp])
        st = moves.code == STATE
        new[moves.idx[st]] = np.clip(moves.values()[st], 0.0, 1.0)
        self.last_change = float(np.max(np.abs(new - self.x))) if self.n else 0.0
        self.x = new
        return np.zeros(self.n)

    # -- text ---------------------------------------------------------------------------------
    def instruction(self, i: int) -> str:
        return (
            f"{self.persona(i)} You take part in a discussion on one topic; your opinion is a number from 0 "
            f"(fully against) to 1 (fully for). Each round you meet one neighbour. Reply 'keep' to keep your "
            f"opinion, 'compromise' to move {self.mu:g} of the way towards your partner's opinion, or "
            f"a new opinion written as a number in brackets, such as opinion[0.35] or opinion[0.8]."
        )

    def observe(self, i: int) -> str:
        text = f"Round {self.round}. Your opinion is {self.x[i]:.3f}."
        if not self.is_active[i]:
            return text + " You are not in the discussion this round; reply 'wait'."
        j = int(self.partner[i])
        text += f" You meet {agent_id(j)}, whose opinion is {self.x[j]:.3f}." if j >= 0 else " You have no one to meet."
        if not self.graph.complete:
            nb = self.graph.neighbors(i)
            shown = ", ".join(f"{agent_id(int(k))} {self.x[k]:.3f}" for k in nb[:SHOW_NEIGHBOURS])
            more = (
                f" and {nb.size - SHOW_NEIGHBOURS} more (mean {self.x[nb].mean():.3f})"
                if nb.size > SHOW_NEIGHBOURS
                else ""
            )
            text += f" Your neighbours' opinions: {shown}{more}." if nb.size else ""
        return text

    def templates(self, i: int) -> list[str]:
        return [TEMPLATE] if self.is_active[i] else []

    def choices(self, i: int) -> list[str]:
        """A fixed grid, the same for everyone: the menu says nothing of the neighbours, so a move towards them is the
        seat's own reading of its observation (`bench/society_seats.py` measures it)."""
        return list(CHOICES) if self.is_active[i] else []

    def parse(self, i: int, text: str) -> tuple[int, float] | str:
        m = _OPINION.match(text.strip())
        if m is None or not self.is_active[i]:
            return super().parse(i, text)
        try:
            v = float(m.group(1))
        except ValueError:
            return f"{excerpt(m.group(1))} is not a number; write e.g. opinion[0.4]"
        if not 0.0 <= v <= 1.0:
            return f"an opinion must be between 0 and 1, got {v:g}"
        return STATE, v

    def move_text(self, i: int, code: int, value: float) -> str:
        return f"opinion[{float(value)!r}]" if code == STATE else super().move_text(i, code, value)

    # -- measurement ---------------------------------------------------------------------------
    def metrics(self) -> dict[str, float]:
        """Opinion metrics; on a real graph also the echo-chamber ones: the modularity of the graph split
        by opinion cluster (high when clusters sit in separate parts of the graph) and the neighbours'
        opinion assortativity. Complete mixing has no structure to measure (any split of it has Q <= 0)."""
        labels = cluster_labels(self.x, gap=self.cluster_gap)  # one sort gives both cluster counts
        sizes = np.bincount(labels)
        out = {
            "mean_opinion": float(self.x.mean()),
            "polarization": polarization(self.x),
            "clusters": float(np.sum(sizes >= max(0.01 * self.n, 1))),
            "clusters_all": float(sizes.size),
            "max_change": self.last_change,
        }
        if not self.graph.complete:
            g = self.graph
            out["modularity"] = partition_modularity(g.indptr, g.indices, labels)
            out["opinion_assortativity"] = neighbor_assortativity(g.indptr, g.indices, self.x)
        return out

    def node_state(self) -> np.ndarray:
        return self.x.copy()
