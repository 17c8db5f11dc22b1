"""Rule brains, vectorised: one call decides a whole round for every active agent that follows the rule.

A rule reads the scenario's arrays (not the text) and returns `Moves`, so 100k agents cost a
few numpy operations. `text_actions` writes the same moves as text, which drives the Parallel
API exactly as an LLM agent would (tests check that both paths give the same run).
`Population` mixes rules (e.g. one IPD strategy per persona).

Known models as rules:
- `Deffuant(threshold)`: compromise with the partner iff |x_i - x_j| < threshold (bounded confidence);
- `DeGroot()`: state the mean of oneself and one's neighbours, i.e. x <- D^-1 (A + I) x;
- `IndependentCascade(p)`: share with probability 1 - (1 - p)^k after k exposures (`key=`: one
  keyed trial per edge, the same on any number of shards);
- the IPD strategies of Axelrod's tournaments: `STRATEGIES`.
- `FeedRule(p_repost, p_like, p_follow, p_post)`: a feed user; reposting with p per exposure makes
  each story an independent cascade under the recency feed;
- public goods: `FreeRider`, `Cooperator`, `ConditionalCooperator(bias)` (Fischbacher & Gächter 2010),
  `ReputationConditional(bias)`, mixed by name with `PublicGoodsStrategies`.
- `TownRoutine(cooldown)`: a small-town day (routine, conversations with acquaintances, the news passed
  on, the party attended by those who know of it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from societies.env import NOOP, Moves, Scenario, SocietyEnv, agent_id
from societies.keyed import edge_trials
from societies.scenarios.cooperation import COOPERATE, DEFECT, CooperationScenario
from societies.scenarios.diffusion import IGNORE, SHARE, DiffusionScenario
from societies.scenarios.feed import FOLLOW, LIKE, NOTHING, POST, REPOST, FeedScenario
from societies.scenarios.opinion import COMPROMISE, KEEP, STATE, OpinionScenario
from societies.scenarios.public_goods import CONTRIBUTE, PublicGoodsScenario
from societies.scenarios.town import DO, GO, SAY, TALK, TownScenario


class Rule(Protocol):
    """A vectorised brain: the moves of agents `idx` this round."""

    name: str

    def decide(self, sc: Scenario, idx: np.ndarray, rng: np.random.Generator) -> Moves: ...


def _per_agent(value: float | np.ndarray, idx: np.ndarray) -> np.ndarray | float:
    return value[idx] if isinstance(value, np.ndarray) else value


# ------------------------------------------------------------------------------------- opinions
class Deffuant:
    """Bounded confidence: compromise only with partners closer than `threshold` (per agent or one value)."""

    name = "deffuant"

    def __init__(self, threshold: float | np.ndarray) -> None:
        self.threshold = threshold

    def decide(self, sc: Scenario, idx: np.ndarray, rng: np.random.Generator) -> Moves:
        assert isinstance(sc, OpinionScenario)
        j = sc.partner[idx]
        close = (j >= 0) & (np.abs(sc.x[idx] - sc.x[np.maximum(j, 0)]) < _per_agent(self.threshold, idx))
        return Moves(idx, np.where(close, COMPROMISE, KEEP).astype(np.int8))


class DeGroot:
    """Averaging: each agent states the mean opinion of itself and its neighbours (row-stochastic W = D^-1 (A + I))."""

    name = "degroot"

    def decide(self, sc: Scenario, idx: np.ndarray, rng: np.random.Generator) -> Moves:
        assert isinstance(sc, OpinionScenario)
        g = sc.graph
        if g.complete:
            target = np.full(idx.size, sc.x.mean())
        else:
            rows = np.repeat(np.arange(g.n), np.diff(g.indptr))
            sums = np.bincount(rows, weights=sc.x[g.indices], minlength=g.n)
            target = ((sums + sc.x) / (g.degree + 1))[idx]
        return Moves(idx, np.full(idx.size, STATE, np.int8), target)


def degroot_limit(sc: OpinionScenario, x0: np.ndarray) -> float:
    """DeGroot's consensus on a connected graph: the stationary distribution of W applied to x0.

    For W = D^-1 (A + I), pi_i is proportional to deg_i + 1 (W is reversible)."""
    w = sc.graph.degree + 1.0
    return float(np.dot(w / w.sum(), x0))


# ------------------------------------------------------------------------------------ diffusion
class IndependentCascade:
    """Share with probability 1 - (1 - p)^k after k exposures: each exposing edge succeeds independently with p.

    With `key` (keyed randomness, `societies.keyed`), the trial of edge source -> target is one
    fixed uniform, a hash of (key, source, target), and an agent shares iff any edge that exposed
    it this round succeeded: the same model (each edge is tried once, when its source has just
    shared), but the draws no longer depend on the order of decisions, so a sharded run
    (`societies.sharding`) makes exactly the same trials on any number of shards."""

    name = "independent_cascade"

    def __init__(self, p: float, key: int | None = None) -> None:
        if not 0 <= p <= 1:
            raise ValueError(f"p must be in [0, 1], got {p}")
        self.p = p
        self.key = key

    def decide(self, sc: Scenario, idx: np.ndarray, rng: np.random.Generator) -> Moves:
        assert isinstance(sc, DiffusionScenario)
        if self.key is None:
            k = sc.exposures[idx]
            share = rng.random(idx.size) < 1.0 - (1.0 - self.p) ** k
        else:
            share = self._keyed(sc, np.asarray(idx, dtype=np.int64))
        return Moves(idx, np.where(share, SHARE, IGNORE).astype(np.int8))

    def _keyed(self, sc: DiffusionScenario, idx: np.ndarray) -> np.ndarray:
        """Any success among this round's exposing edges of each agent (exposure pairs are sorted by target)."""
        assert self.key is not None
        ok = edge_trials(self.key, sc.exp_src, sc.exp_dst, self.p)
        hits = np.concatenate([[0], np.cumsum(ok)])
        lo = np.searchsorted(sc.exp_dst, idx, side="left")
        hi = np.searchsorted(sc.exp_dst, idx, side="right")
        return hits[hi] > hits[lo]


# ----------------------------------------------------------------------------------------- feed
class FeedRule:
    """A feed user, vectorised: repost, follow, like or post, each with its own probability, else nothing.

    Per post in its feed (an exposure), an agent reposts with probability `p_repost` and likes with
    `p_like`, both times `off_topic` when the post is not on its interest (0 = only on-topic posts,
    1 = topic-blind). A story it has posted or shared already, or a post it has liked, is skipped.
    With no repost, it follows the author of the last post it liked with `p_follow` (if it does not
    yet); otherwise it likes the first liked exposure; otherwise it posts with `p_post`. One move a
    round, in that order. Repost-only agents (`p_like = p_follow = p_post = 0`) share a story they
    were shown k times in a round with 1 - (1 - p)^k: the independent cascade."""

    name = "feed"

    def __init__(
        self, p_repost: float, p_like: float = 0.0, p_follow: float = 0.0, p_post: float = 0.0, off_topic: float = 1.0
    ) -> None:
        for label, v in (("p_repost", p_repost), ("p_like", p_like), ("p_follow", p_follow), ("p_post", p_post),
                         ("off_topic", off_topic)):  # fmt: skip
            if not 0 <= v <= 1:
                raise ValueError(f"{label} must be in [0, 1], got {v}")
        self.p_repost, self.p_like, self.p_follow, self.p_post = p_repost, p_like, p_follow, p_post
        self.off_topic = off_topic

    def decide(self, sc: Scenario, idx: np.ndarray, rng: np.random.Generator) -> Moves:
        assert isinstance(sc, FeedScenario)
        idx = np.asarray(idx, dtype=np.int64)
        m = idx.size
        pos, post = sc.exposures_of(idx)  # flat, each agent's feed in order: a round costs its exposures
        agent = idx[pos]
        weight = np.where(sc.posts.topic[post] == sc.interest[agent], 1.0, self.off_topic)
        code = np.full(m, NOTHING, np.int8)
        value = np.full(m, np.nan)
        # draws only for probabilities > 0, always in this order: the same state gives the same moves
        if self.p_post > 0:
            chosen = rng.random(m) < self.p_post
            code[chosen] = POST
        if self.p_like > 0 and post.size:
            hit = rng.random(post.size) < self.p_like * weight
            hit[hit] = ~sc.liked.contains(agent[hit], post[hit])
            _choose(code, value, pos, post, hit, LIKE)
        if self.p_follow > 0:
            cand = np.flatnonzero(sc.last_liked[idx] >= 0)
            go = cand[rng.random(cand.size) < self.p_follow]
            target = sc.posts.author[sc.last_liked[idx[go]]]
            ok = sc.can_follow(idx[go], target)
            code[go[ok]] = FOLLOW
            value[go[ok]] = target[ok]
        if self.p_repost > 0 and post.size:
            hit = rng.random(post.size) < self.p_repost * weight
            hit[hit] = ~sc.joined.contains(agent[hit], sc.posts.root[post[hit]])
            _choose(code, value, pos, post, hit, REPOST)
        return Moves(idx, code, value)


def _choose(code: np.ndarray, value: np.ndarray, pos: np.ndarray, post: np.ndarray, hit: np.ndarray, c: int) -> None:
    """Set move `c` on the first hit exposure of each agent (`pos` is sorted: exposures come row by row)."""
    p, x = pos[hit], post[hit]
    first = np.ones(p.size, dtype=bool)
    first[1:] = p[1:] != p[:-1]
    code[p[first]] = c
    value[p[first]] = x[first]


# ---------------------------------------------------------------------------------- cooperation
Strategy = Callable[[CooperationScenario, np.ndarray, np.random.Generator], np.ndarray]  # -> cooperate? (bool)


def _last(sc: CooperationScenario, who: np.ndarray, t: np.ndarray, back: int = 1) -> np.ndarray:
    """Move `back` steps ago in the current match (0 if none)."""
    col = t - back
    out = sc.hist[who, np.maximum(col, 0)]
    return np.where(col >= 0, out, 0)


def _opp_last(sc: CooperationScenario, idx: np.ndarray, back: int = 1) -> np.ndarray:
    return _last(sc, sc.opp[idx], sc.t[idx], back)


def tit_for_tat(sc: CooperationScenario, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return _opp_last(sc, idx) != DEFECT


def always_cooperate(sc: CooperationScenario, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.ones(idx.size, dtype=bool)


def always_defect(sc: CooperationScenario, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.zeros(idx.size, dtype=bool)


def grudger(sc: CooperationScenario, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Cooperate until the opponent defects once, then defect for the rest of the match (Friedman)."""
    return ~np.any(sc.hist[sc.opp[idx]] == DEFECT, axis=1)


def tit_for_two_tats(sc: CooperationScenario, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return ~((_opp_last(sc, idx, 1) == DEFECT) & (_opp_last(sc, idx, 2) == DEFECT))


def pavlov(sc: CooperationScenario, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Win-stay, lose-shift: cooperate first, then iff both played the same move last time."""
    mine, theirs = _last(sc, idx, sc.t[idx]), _opp_last(sc, idx)
    return (sc.t[idx] == 0) | (mine == theirs)


def random_strategy(sc: CooperationScenario, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return rng.random(idx.size) < 0.5


def suspicious_tit_for_tat(sc: CooperationScenario, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return (sc.t[idx] > 0) & (_opp_last(sc, idx) != DEFECT)


def joss(sc: CooperationScenario, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Tit-for-tat that defects instead of cooperating 10% of the time (Axelrod's first tournament)."""
    return tit_for_tat(sc, idx, rng) & (rng.random(idx.size) >= 0.1)


def generous_tit_for_tat(sc: CooperationScenario, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Tit-for-tat that forgives a defection a third of the time."""
    return tit_for_tat(sc, idx, rng) | (rng.random(idx.size) < 1 / 3)


STRATEGIES: dict[str, Strategy] = {
    "tit_for_tat": tit_for_tat,
    "always_cooperate": always_cooperate,
    "always_defect": always_defect,
    "grudger": grudger,
    "tit_for_two_tats": tit_for_two_tats,
    "pavlov": pavlov,
    "random": random_strategy,
    "suspicious_tit_for_tat": suspicious_tit_for_tat,
    "joss": joss,
    "generous_tit_for_tat": generous_tit_for_tat,
}


class IPDStrategies:
    """One Axelrod strategy per agent (`strategies[i]`), decided strategy by strategy, vectorised."""

    name = "ipd"

    def __init__(self, strategies: Sequence[str]) -> None:
        unknown = sorted(set(strategies) - set(STRATEGIES))
        if unknown:
            raise ValueError(f"unknown IPD strategies {unknown}; known: {', '.join(STRATEGIES)}")
        self.names = list(strategies)
        self._codes = np.array([list(STRATEGIES).index(s) for s in strategies], dtype=np.int64)

    def decide(self, sc: Scenario, idx: np.ndarray, rng: np.random.Generator) -> Moves:
        assert isinstance(sc, CooperationScenario)
        coop = np.zeros(idx.size, dtype=bool)
        which = self._codes[idx]
        for k, fn in enumerate(STRATEGIES.values()):  # fixed order: the shared generator's draws stay seeded
            sel = which == k
            if sel.any():
                coop[sel] = fn(sc, idx[sel], rng)
        return Moves(idx, np.where(coop, COOPERATE, DEFECT).astype(np.int8))


# ------------------------------------------------------------------------------------- helpers
class Population:
    """Several rules in one society: `assign[i]` is agent i's rule (an index into `rules`)."""

    name = "population"

    def __init__(self, rules: Sequence[Rule], assign: np.ndarray) -> None:
        self.rules = list(rules)
        self.assign = np.asarray(assign, dtype=np.int64)

    def decide(self, sc: Scenario, idx: np.ndarray, rng: np.random.Generator) -> Moves:
        return Moves.concat([r.decide(sc, idx[self.assign[idx] == k], rng) for k, r in enumerate(self.rules)])


# --------------------------------------------------------------------------------- public goods
def _contribute(sc: PublicGoodsScenario, idx: np.ndarray, share: np.ndarray) -> Moves:
    """Shares of the endowment as `contribute[tokens]` moves."""
    tokens = np.clip(share, 0.0, 1.0) * sc.endowment
    return Moves(idx, np.full(idx.size, CONTRIBUTE, np.int8), tokens)


def _first_share(idx: np.ndarray, start: float, spread: float, rng: np.random.Generator) -> np.ndarray:
    """First-round shares: `start`, spread uniformly by +-`spread` (drawn only when spread > 0)."""
    if spread <= 0 or idx.size == 0:
        return np.full(idx.size, start)
    return np.clip(start + spread * (2 * rng.random(idx.size) - 1), 0.0, 1.0)


class FreeRider:
    """Contributes nothing: the dominant strategy of each round when r / G < 1."""

    name = "free_rider"

    def decide(self, sc: Scenario, idx: np.ndarray, rng: np.random.Generator) -> Moves:
        assert isinstance(sc, PublicGoodsScenario)
        return _contribute(sc, idx, np.zeros(idx.size))


class Cooperator:
    """Contributes the whole endowment every round, whatever the others do."""

    name = "cooperator"

    def decide(self, sc: Scenario, idx: np.ndarray, rng: np.random.Generator) -> Moves:
        assert isinstance(sc, PublicGoodsScenario)
        return _contribute(sc, idx, np.ones(idx.size))


class ConditionalCooperator:
    """Gives `bias` times what the others in its last group gave on average; `start` in its first round.

    Fischbacher & Gächter (2010, "Social preferences, beliefs, and the dynamics of free riding in
    public goods experiments", AER 100): most people are conditional cooperators, but imperfect ones
    whose contributions lie below what they expect of the others (a self-serving bias, slope < 1).
    Matched with free riders, that bias alone makes contributions decay round after round."""

    name = "conditional"

    def __init__(self, bias: float = 0.8, start: float = 0.5, spread: float = 0.0) -> None:
        if not 0 <= bias <= 1 or not 0 <= start <= 1 or spread < 0:
            raise ValueError(f"need bias, start in [0, 1] and spread >= 0; got {bias}, {start}, {spread}")
        self.bias, self.start, self.spread = bias, start, spread

    def decide(self, sc: Scenario, idx: np.ndarray, rng: np.random.Generator) -> Moves:
        assert isinstance(sc, PublicGoodsScenario)
        prev = sc.others_seen[idx]
        share = self.bias * prev
        first = np.isnan(prev)
        share[first] = _first_share(idx[first], self.start, self.spread, rng)
        return _contribute(sc, idx, share)


class ReputationConditional(ConditionalCooperator):
    """A conditional cooperator that reads reputations when they are public (else it is `ConditionalCooperator`).

    It conditions on its current partners' public image b (known before it gives) instead of last
    round's strangers, and when the partners are at least as reputable as itself it holds its own
    image: share = max(bias * b, min(own image, b)). Under contribution-based grouping its image
    decides its next group, so letting it slip costs more than it saves (Gunnthorsdottir et al. 2010:
    near-efficient equilibria under competitive grouping); partners with a worse record are matched
    down to their level."""

    name = "reputation_conditional"

    def decide(self, sc: Scenario, idx: np.ndarray, rng: np.random.Generator) -> Moves:
        assert isinstance(sc, PublicGoodsScenario)
        if not sc.reputation:
            return super().decide(sc, idx, rng)
        own = sc.image[idx]
        b = sc.partner_image(idx)
        b = np.where(np.isnan(b), own, b)  # partners without a record: assumed to be like oneself
        share = np.maximum(self.bias * b, np.minimum(own, b))
        first = np.isnan(own)
        share[first] = _first_share(idx[first], self.start, self.spread, rng)
        return _contribute(sc, idx, share)


PG_STRATEGIES = ("free_rider", "cooperator", "conditional", "reputation_conditional")


class PublicGoodsStrategies(Population):
    """One public-goods strategy per agent (`strategies[i]`, names from `PG_STRATEGIES`), as a `Population`."""

    name = "public_goods"

    def __init__(self, strategies: Sequence[str], bias: float = 0.8, start: float = 0.5, spread: float = 0.0) -> None:
        unknown = sorted(set(strategies) - set(PG_STRATEGIES))
        if unknown:
            raise ValueError(f"unknown public goods strategies {unknown}; known: {', '.join(PG_STRATEGIES)}")
        rules: list[Rule] = [
            FreeRider(),
            Cooperator(),
            ConditionalCooperator(bias, start, spread),
            ReputationConditional(bias, start, spread),
        ]
        super().__init__(rules, np.array([PG_STRATEGIES.index(s) for s in strategies], dtype=np.int64))
        self.names = list(strategies)


# ----------------------------------------------------------------------------------------- town
class TownRoutine:
    """A town day by rule, deterministic (the Generative Agents behaviours the diffusion check needs).

    In order: speak once in a conversation (the news if one knows it, the host's invitation, else
    small talk); head for the party in time (one round of slack) if one knows of it and goes to
    parties; open a conversation with a free acquaintance here not talked with for `cooldown`
    rounds (the least recent first); at the party, celebrate; else follow the routine (walk towards its place, then do its
    activity). So the news passes along every conversation an informed agent holds."""

    name = "town_routine"

    def __init__(self, cooldown: int = 3) -> None:
        if cooldown < 0:
            raise ValueError(f"cooldown must be >= 0, got {cooldown}")
        self.cooldown = cooldown

    def decide(self, sc: Scenario, idx: np.ndarray, rng: np.random.Generator) -> Moves:
        assert isinstance(sc, TownScenario)
        idx = np.asarray(idx, dtype=np.int64)
        r = sc.round
        loc = sc.loc[idx]
        code = np.zeros(idx.size, dtype=np.int8)
        value = np.full(idx.size, np.nan)
        open_ = np.ones(idx.size, dtype=bool)  # not decided yet

        def put(mask: np.ndarray, c: int, v: np.ndarray | int) -> None:
            m = mask & open_
            code[m] = c
            value[m] = v[m] if isinstance(v, np.ndarray) else v
            open_[m] = False

        knows = sc.knows[idx]
        host = (idx == 0) & (sc.n_informed > 0)
        line = np.where(knows, np.where(host, sc.invite_line, sc.news_line), sc.smalltalk_line[idx])
        put((sc.partner[idx] >= 0) & (sc.spoke[idx] == 0), SAY, line)
        party = sc.party_loc
        going = knows & sc.willing[idx] & (r >= sc.party_round - sc.dist[loc, party] - 1) & (r < sc.party_end)
        put(going & (loc != party), GO, sc.next_hop[loc, party])
        # free: not in a conversation, or in one where both have spoken (so a rule agent moves on)
        done_talking = (sc.spoke > 0) & (sc.spoke[np.maximum(sc.partner, 0)] > 0)
        free_now = (sc.partner < 0) | done_talking
        free = (sc.loc[None, :] == loc[:, None]) & free_now[None, :] & (r - sc.last_talk[idx] > self.cooldown)
        pick = sc.know[idx] & free  # the acquaintance talked with least recently (ties: the lowest index)
        put(pick.any(axis=1), TALK, np.where(pick, sc.last_talk[idx], np.iinfo(np.int64).max).argmin(axis=1))
        at_party = going & (loc == party)
        put(at_party & sc.party_on(), DO, sc.party_act)
        target, act = sc.routine_target(idx, r)
        put(at_party & (target != party), NOOP, 0)  # early: wait here for the party
        put(loc != target, GO, sc.next_hop[loc, target])
        put(open_, DO, act)
        return Moves(idx, code, value)


def text_actions(env: SocietyEnv, moves: Moves) -> dict[str, str]:
    """The moves as the text actions an agent would send (no-moves become `wait`)."""
    sc = env.scenario
    vals = moves.values()
    return {
        agent_id(int(i)): sc.move_text(int(i), int(c), float(v))
        for i, c, v in zip(moves.idx, moves.code, vals)
        if c != NOOP
    }


def play_round(env: SocietyEnv, rule: Rule, rng: np.random.Generator):
    """One round of a rule society on the fast path."""
    return env.step_moves(rule.decide(env.scenario, env.scenario.active, rng))
