"""Cooperation: a round-robin tournament of the iterated prisoner's dilemma (Axelrod, 1980).

Every pair of agents plays one match of `match_length` moves; the pairings follow the circle
method (with a bye when n is odd), one match per agent at a time, so each round is one move of
n/2 simultaneous matches. An agent sees its current opponent's and its own past moves in the
match and answers `cooperate` or `defect`; the payoff (T=5, R=3, P=1, S=0) is its reward. If
one side's action is bad, that move of the match is not played (both states unchanged). The
run terminates when every pair has played; totals rank the agents as Axelrod's tables did.
"""

from __future__ import annotations

import numpy as np

from societies.env import WAIT, Moves, Scenario, agent_id
from societies.personas import Persona

COOPERATE, DEFECT = 1, 2
T, R, P, S = 5.0, 3.0, 1.0, 0.0
PAYOFF = np.array([[0, 0, 0], [0, R, S], [0, T, P]])  # PAYOFF[my move, their move]; row/col 0 = no move
LETTER = {COOPERATE: "C", DEFECT: "D"}
SHOW_MOVES = 10
PAIR_MATRIX_MAX = 2048  # keep the n x n table of pair scores up to this many agents


def circle_pairing(n: int, k: int) -> np.ndarray:
    """Opponent of each agent in pairing k of the circle method (-1 = bye); k in 0..rounds(n)-1."""
    m = n + (n % 2)
    pos = np.arange(m)
    holder = np.where(pos == 0, 0, 1 + (pos - 1 + k) % (m - 1))  # who sits at each position
    opp = np.empty(m, dtype=np.int64)
    a, b = holder[: m // 2], holder[::-1][: m // 2]
    opp[a], opp[b] = b, a
    opp = opp[:n]
    opp[opp >= n] = -1  # the dummy is the bye
    return opp


def n_pairings(n: int) -> int:
    return n - 1 + (n % 2)


class CooperationScenario(Scenario):
    """An iterated prisoner's dilemma round-robin."""

    name = "cooperation"
    state_name = "share of its moves that cooperated"
    actions = ("cooperate", "defect")

    def __init__(self, n: int, match_length: int = 200, personas: list[Persona] | None = None) -> None:
        super().__init__(n, personas)
        if match_length < 1:
            raise ValueError(f"match_length must be >= 1, got {match_length}")
        self.match_length = match_length
        self.total_rounds = n_pairings(n) * match_length
        self._empty()

    def _empty(self) -> None:
        n, L = self.n, self.match_length
        self.opp = np.full(n, -1, dtype=np.int64)
        self.hist = np.zeros((n, L), dtype=np.int8)  # this match's moves, 0 = not played
        self.t = np.zeros(n, dtype=np.int64)  # moves played in this match
        self.match_score = np.zeros(n)
        self.score = np.zeros(n)
        self.moves_played = np.zeros(n, dtype=np.int64)
        self.cooperations = np.zeros(n, dtype=np.int64)
        self.pair_score = np.zeros((n, n)) if n <= PAIR_MATRIX_MAX else None
        self.match = -1
        self.round_coop = float("nan")

    def reset(self, rng: np.random.Generator) -> None:
        self._empty()

    def begin_round(self, rng: np.random.Generator) -> None:
        k = self.round // self.match_length
        if k != self.match and k < n_pairings(self.n):
            self.match = k
            self.opp = circle_pairing(self.n, k)
            self.hist[:] = 0
            self.t[:] = 0
            self.match_score[:] = 0
        if self.round >= self.total_rounds:
            self.opp = np.full(self.n, -1, dtype=np.int64)
        self.active = np.flatnonzero(self.opp >= 0)
        self.is_active = self.opp >= 0

    def apply(self, moves: Moves, rng: np.random.Generator) -> np.ndarray:
        mv = np.zeros(self.n, dtype=np.int8)
        mv[moves.idx] = moves.code
        i = self.active
        j = self.opp[i]
        play = i[(mv[i] > 0) & (mv[j] > 0)]
        rewards = np.zeros(self.n)
        if play.size:
            o = self.opp[play]
            rewards[play] = PAYOFF[mv[play], mv[o]]
            self.hist[play, np.minimum(self.t[play], self.match_length - 1)] = mv[play]
            self.t[play] += 1
            self.match_score[play] += rewards[play]
            self.score[play] += rewards[play]
            self.moves_played[play] += 1
            self.cooperations[play] += mv[play] == COOPERATE
            if self.pair_score is not None:
                self.pair_score[play, o] += rewards[play]
            self.round_coop = float(np.mean(mv[play] == COOPERATE))
        else:
            self.round_coop = float("nan")
        return rewards

    def done(self) -> bool:
        return self.round >= self.total_rounds

    # -- text -----------------------------------------------------------------------------------
    def instruction(self, i: int) -> str:
        return (
            f"{self.persona(i)} You play the iterated prisoner's dilemma against every other player in turn, "
            f"{self.match_length} moves per opponent. Each move, reply 'cooperate' or 'defect'. Payoffs per move: "
            f"both cooperate {R:g} each; both defect {P:g} each; if you defect while they cooperate you get {T:g} "
            f"and they get {S:g} (and the reverse). Score as many points as you can over the whole tournament."
        )

    def observe(self, i: int) -> str:
        text = f"Round {self.round}."
        j = int(self.opp[i])
        if j < 0:
            return text + (" The tournament is over." if self.done() else " You sit out this round; reply 'wait'.")
        t = int(self.t[i])
        text += (
            f" Match {self.match + 1} of {n_pairings(self.n)}: move {t + 1} of {self.match_length} "
            f"against {agent_id(j)}."
        )
        if t:
            lo = max(0, t - SHOW_MOVES)
            theirs = " ".join(LETTER[int(m)] for m in self.hist[j, lo:t])
            mine = " ".join(LETTER[int(m)] for m in self.hist[i, lo:t])
            text += (
                f" Last moves (C = cooperate, D = defect), oldest first: theirs {theirs}; yours {mine}. "
                f"Score in this match: you {self.match_score[i]:g}, them {self.match_score[j]:g}."
            )
        return text + f" Tournament score: {self.score[i]:g}."

    def available(self, i: int) -> list[str]:
        return list(self.actions) if self.is_active[i] else [WAIT]

    # -- measurement ----------------------------------------------------------------------------
    def metrics(self) -> dict[str, float]:
        played = max(int(self.moves_played.sum()), 1)
        return {
            "cooperation_rate": self.round_coop,
            "cumulative_cooperation": float(self.cooperations.sum() / played),
            "mean_payoff": float(self.score.sum() / played),
        }

    def mean_payoff(self) -> np.ndarray:
        """Each agent's payoff per move played (the tournament's ranking score)."""
        return self.score / np.maximum(self.moves_played, 1)

    def node_state(self) -> np.ndarray:
        return self.cooperations / np.maximum(self.moves_played, 1)

    def agent_outcome(self, i: int) -> tuple[float, bool]:
        mean = float(self.mean_payoff()[i])
        return mean, mean >= R
