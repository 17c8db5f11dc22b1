"""Public goods: a linear public-goods game in groups, with an optional public reputation.

Each round the active agents are split into groups of `group_size` G. Every member gets an
endowment E and puts part of it, c in [0, E], into the group pot; the pot is multiplied by r
(1 < r < G) and shared equally among the G members. So agent i earns E - c_i + r * pot / G. With
r / G < 1 each token put in returns only r / G to its giver: keeping everything is the dominant
strategy, while everyone giving everything earns most (r * E each), the social dilemma of the
voluntary contribution mechanism (Isaac & Walker 1988; Fehr & Gächter 2000). Defaults E = 20,
G = 4, r = 1.6 (marginal per-capita return 0.4) are those of Fehr & Gächter (2000) and
Fischbacher & Gächter (2010).

Reputation is a public image score (Nowak & Sigmund 1998): the share of the endowment an agent
contributed, as an exponentially weighted mean over the rounds it played (weight `recency`
on the latest round). It is always computed (the `reputation_correlation` metric reads it); with
`reputation=True` it is also shown to everyone and decides the groups. Groups are then formed by
contribution-based competitive grouping, i.e. assortative matching on the public record
(Gunnthorsdottir, Houser & McCabe 2007, "Disposition, history and contributions in public goods
experiments", JEBO 62; Gunnthorsdottir, Vragov, Seifert & McCabe 2010, "Near-efficient equilibria
in contribution-based competitive grouping", J. Public Econ. 94): agents are ranked by image
(ties, and agents without a record, who count as `image_prior`, in random order) and the top G
form the first group, the next G the second, and so on. When the active agents do not split
evenly, the last ones in the order sit the round out (random ones without reputation, the lowest
images with it: a mild exclusion of low-reputation players). Without reputation, groups are drawn
at random every round (the "strangers" protocol).

A move is `contribute[<tokens>]` or a shortcut (`contribute_none`, `contribute_half`,
`contribute_all`). An active agent that makes no move (a bad action, or no action sent) is absent:
it earns 0 that round, puts nothing in, and its share of the pot is forfeited; the pot is still
divided by G, so r / G < 1 keeps the dilemma for those who play, and a garbled answer is never a
free ride.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from envs.contract import excerpt
from societies.env import Moves, Scenario, agent_id
from societies.personas import Persona

NONE, HALF, ALL, CONTRIBUTE = 1, 2, 3, 4
TEMPLATE = "contribute[...]"
_CONTRIBUTE = re.compile(r"^contribute\[\s*([^\]]*)\s*\]$")


class PublicGoodsScenario(Scenario):
    """A repeated linear public-goods game; groups random or formed by public reputation."""

    name = "public_goods"
    state_name = "mean share of the endowment given"
    actions = ("contribute_none", "contribute_half", "contribute_all")
    extra_moves = ("contribute",)

    def __init__(
        self,
        n: int,
        group_size: int = 4,
        r: float = 1.6,
        endowment: float = 20.0,
        reputation: bool = False,
        recency: float = 0.5,
        image_prior: float = 0.5,
        personas: list[Persona] | None = None,
        labels: Sequence[str] | None = None,
    ) -> None:
        super().__init__(n, personas)
        if not 2 <= group_size <= n:
            raise ValueError(f"group_size must be between 2 and the number of agents ({n}), got {group_size}")
        if not r > 0:
            raise ValueError(f"r must be positive, got {r}")
        if not endowment > 0:
            raise ValueError(f"endowment must be positive, got {endowment}")
        if not 0 < recency <= 1:
            raise ValueError(f"recency must be in (0, 1], got {recency}")
        if labels is not None and len(labels) != n:
            raise ValueError(f"{len(labels)} labels for {n} agents")
        self.group_size = group_size
        self.r = float(r)
        self.endowment = float(endowment)
        self.reputation = reputation
        self.recency = recency
        self.image_prior = image_prior
        # labels (e.g. each agent's rule) only split the contribution metric by kind
        self.label_names: list[str] = sorted(set(labels)) if labels is not None else []
        self.label = (
            np.array([self.label_names.index(s) for s in labels], dtype=np.int64) if labels is not None else None
        )
        self._empty()

    def _empty(self) -> None:
        n = self.n
        self.members = np.empty((0, self.group_size), dtype=np.int64)  # this round's groups, one row each
        self.group = np.full(n, -1, dtype=np.int64)  # each agent's row in `members` (-1 = sits out)
        self.image = np.full(n, np.nan)  # public image: EWMA of the share contributed (NaN = no record)
        self.others_prev = np.full(n, np.nan)  # mean share the others in one's last group contributed
        self.others_seen = np.full(n, np.nan)  # EWMA of `others_prev` over the rounds played (what one has seen)
        self.last_share = np.full(n, np.nan)  # share of E contributed in the last round played
        self.last_payoff = np.full(n, np.nan)
        self.score = np.zeros(n)  # total payoff
        self.played = np.zeros(n, dtype=np.int64)  # rounds played
        self.given = np.zeros(n)  # sum of shares contributed
        self.round_share = np.full(n, np.nan)  # this round's share per agent (NaN = did not play)
        self.round_stats: dict[str, float] = {}

    def reset(self, rng: np.random.Generator) -> None:
        self._empty()

    def begin_round(self, rng: np.random.Generator) -> None:
        super().begin_round(rng)
        cand, g = self.active, self.group_size
        k = cand.size // g
        if self.reputation:
            key = np.where(np.isnan(self.image[cand]), self.image_prior, self.image[cand])
            order = cand[np.lexsort((rng.random(cand.size), -key))]  # best image first, ties at random
        else:
            order = rng.permutation(cand)
        self.members = order[: k * g].reshape(k, g)
        self.group = np.full(self.n, -1, dtype=np.int64)
        self.group[self.members] = np.repeat(np.arange(k), g).reshape(k, g)
        self.active = np.sort(self.members.ravel())
        self.is_active = self.group >= 0

    def amounts(self, moves: Moves) -> np.ndarray:
        """Tokens each move puts in (shortcuts resolved, values clipped to [0, E])."""
        e = self.endowment
        table = np.array([0.0, 0.0, e / 2, e, np.nan])
        out = table[moves.code]
        free = moves.code == CONTRIBUTE
        out[free] = np.clip(moves.values()[free], 0.0, e)
        return out

    def apply(self, moves: Moves, rng: np.random.Generator) -> np.ndarray:
        n, e, m = self.n, self.endowment, self.members
        rewards = np.zeros(n)
        self.round_share = np.full(n, np.nan)
        self.round_stats = {}
        if m.size == 0:
            return rewards
        amount = np.zeros(n)
        moved = np.zeros(n, dtype=bool)
        amount[moves.idx] = self.amounts(moves)
        moved[moves.idx] = True
        present = moved[m]
        c = np.where(present, amount[m], 0.0)
        pot = c.sum(axis=1, keepdims=True)
        rewards[m] = np.where(present, e - c + self.r * pot / self.group_size, 0.0)
        others = present.sum(axis=1, keepdims=True) - 1
        with np.errstate(invalid="ignore", divide="ignore"):
            others_mean = (pot - c) / others / e
        seen = present & (others > 0)
        j, o = m[seen], others_mean[seen]
        w = self.recency
        self.others_prev[m[present]] = np.nan  # no one else in the group played: nothing seen this round
        self.others_prev[j] = o
        self.others_seen[j] = np.where(np.isnan(self.others_seen[j]), o, (1 - w) * self.others_seen[j] + w * o)
        who = m[present]
        share = c[present] / e
        before = self.image[who]
        self.round_share[who] = share
        self.last_share[who] = share
        self.last_payoff[who] = rewards[who]
        self.score[who] += rewards[who]
        self.played[who] += 1
        self.given[who] += share
        self.image[who] = np.where(np.isnan(before), share, (1 - w) * before + w * share)
        self.round_stats = {
            "mean_contribution": float(share.mean()) if share.size else float("nan"),
            "mean_payoff": float(rewards[who].mean()) if who.size else float("nan"),
            "reputation_correlation": _corr(before, share),
        }
        return rewards

    def partner_image(self, idx: np.ndarray) -> np.ndarray:
        """Mean public image of each agent's current group partners (NaN when none of them has a record)."""
        idx = np.asarray(idx, dtype=np.int64)
        g = self.group[idx]
        out = np.full(idx.size, np.nan)
        ok = g >= 0
        if not ok.any():
            return out
        img = self.image[self.members]
        known = ~np.isnan(img)
        total, count = np.where(known, img, 0.0).sum(axis=1), known.sum(axis=1)
        own = self.image[idx[ok]]
        mine = ~np.isnan(own)
        t = total[g[ok]] - np.where(mine, own, 0.0)
        k = count[g[ok]] - mine
        with np.errstate(invalid="ignore", divide="ignore"):
            out[ok] = np.where(k > 0, t / k, np.nan)
        return out

    # -- text -----------------------------------------------------------------------------------
    def instruction(self, i: int) -> str:
        g, e = self.group_size, self.endowment
        rep = (
            " Everyone's reputation is public: the share of the endowment they contributed, recent rounds "
            "counting most. Groups are formed by reputation, so players with similar reputations play together."
            if self.reputation
            else " Groups are drawn at random every round, and contributions are anonymous."
        )
        return (
            f"{self.persona(i)} You play a public goods game in groups of {g}. Each round you get {e:g} tokens "
            f"and choose how many to put into your group's pot; the pot is multiplied by {self.r:g} and shared "
            f"equally among the {g} members, whatever each contributed, and you keep the tokens you do not "
            f"put in.{rep} Reply contribute[<number from 0 to {e:g}>], or contribute_none, contribute_half or "
            f"contribute_all. Earn as many tokens as you can over all rounds."
        )

    def _rep(self, j: int) -> str:
        return "no record yet" if np.isnan(self.image[j]) else f"{self.image[j]:.2f}"

    def observe(self, i: int) -> str:
        e = self.endowment
        text = f"Round {self.round}."
        if self.played[i]:
            others = (
                f"the others in your group {self.others_prev[i] * e:.3g} on average"
                if not np.isnan(self.others_prev[i])
                else "no one else in your group played"
            )
            text += (
                f" Last time you played, you contributed {self.last_share[i] * e:.3g} of {e:g} tokens, {others}, "
                f"and you earned {self.last_payoff[i]:.3g}. Total earned: {self.score[i]:.4g} over "
                f"{self.played[i]} rounds."
            )
            if not np.isnan(self.others_seen[i]):
                text += f" Lately your group mates gave {self.others_seen[i] * e:.3g} tokens on average."
        if not self.is_active[i]:
            return text + " You are not in a group this round; reply 'wait'."
        mates = [int(j) for j in self.members[self.group[i]] if j != i]
        if self.reputation:
            listed = ", ".join(f"{agent_id(j)} (reputation {self._rep(j)})" for j in mates)
            text += f" This round your group is you and {listed}. Your reputation: {self._rep(i)}."
        else:
            text += f" This round your group is you and {len(mates)} players drawn at random."
        return text + f" You have {e:g} tokens to split between the pot and yourself."

    def templates(self, i: int) -> list[str]:
        return [TEMPLATE] if self.is_active[i] else []

    def choices(self, i: int) -> list[str]:
        """The quarters `contribute_none/half/all` leave out, so ranked seats have five levels and no free slot."""
        return [f"contribute[{q * self.endowment:g}]" for q in (0.25, 0.75)] if self.is_active[i] else []

    def parse(self, i: int, text: str) -> tuple[int, float] | str:
        m = _CONTRIBUTE.match(text.strip())
        if m is None or not self.is_active[i]:
            return super().parse(i, text)
        try:
            v = float(m.group(1))
        except ValueError:
            return f"{excerpt(m.group(1))} is not a number; write e.g. contribute[{self.endowment / 2:g}]"
        if not 0.0 <= v <= self.endowment:
            return f"a contribution must be between 0 and {self.endowment:g} tokens, got {v:g}"
        return CONTRIBUTE, v

    def move_text(self, i: int, code: int, value: float) -> str:
        return f"contribute[{float(value)!r}]" if code == CONTRIBUTE else super().move_text(i, code, value)

    # -- measurement ----------------------------------------------------------------------------
    def metrics(self) -> dict[str, float]:
        nan = float("nan")
        out = {
            "mean_contribution": self.round_stats.get("mean_contribution", nan),
            "mean_payoff": self.round_stats.get("mean_payoff", nan),
            "cumulative_contribution": float(self.given.sum() / self.played.sum()) if self.played.any() else nan,
            "reputation_correlation": self.round_stats.get("reputation_correlation", nan),
        }
        if self.label is not None:
            played = ~np.isnan(self.round_share)
            lab = self.label[played]
            k = len(self.label_names)
            total = np.bincount(lab, weights=self.round_share[played], minlength=k)
            count = np.bincount(lab, minlength=k)
            for j, name in enumerate(self.label_names):
                out[f"contribution_{name}"] = float(total[j] / count[j]) if count[j] else nan
        return out

    def node_state(self) -> np.ndarray:
        """Each agent's mean share contributed over the rounds it played (0 before it played)."""
        return self.given / np.maximum(self.played, 1)

    def agent_outcome(self, i: int) -> tuple[float, bool]:
        """Mean payoff per round played; success = more than keeping the endowment alone would give."""
        mean = float(self.score[i] / max(int(self.played[i]), 1))
        return mean, mean > self.endowment


def _corr(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation over the pairs where `a` is known (NaN when fewer than 3 or no spread)."""
    ok = ~np.isnan(a)
    a, b = a[ok], b[ok]
    if a.size < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])
