"""Ranking candidate actions by the model's likelihood: each candidate's own tokens scored after the prompt.

A candidate is scored as a continuation of the prompt (+ the prefix it follows, e.g. `Action:`), by its
tokens' mean (or summed) log-probability. Rankings are deterministic for a model and prompt, so the last
`RANKINGS_KEPT` are remembered: N samples at one state (search) cost one ranking. Prompts go in sequence 0
one after another, or, with KV slots, in shared decodes (`slots.SlotScheduler`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from agents.brains.base import CandidateScore
from agents.brains.llama.scoring import ContinuationScorer
from agents.brains.llama.slot_table import common_prefix
from agents.brains.llama.slots import SlotScheduler
from envs.contract import SLOT

RANKINGS_KEPT = 64  # choose() rankings remembered (search samples N actions at one state; rollouts revisit states)
RankingKey = tuple[str, str, tuple[str, ...]]  # (chat-formatted prompt, prefix, candidates)


def scoring_texts(prompt: str, prefix: str, candidate: str) -> tuple[str, str]:
    """(the context a candidate is scored after, that context + the candidate): how `choose` lays them out.

    Training data (`agents.policy.sft_data`) uses the same split, so it trains exactly what is ranked."""
    head = prompt + prefix.rstrip(" ")
    shown = candidate.split(SLOT)[0] if SLOT in candidate else candidate  # a template is scored by its fixed head
    return head, head + (" " if prefix.endswith(" ") else "") + shown


@dataclass
class Ranking:
    """What ranking candidates after one prompt computed: the prompt's ids, each candidate's ids, where its own
    tokens start, and their logprobs (deterministic for a model and prompt, so a repeat costs nothing)."""

    base: list[int]
    fulls: list[list[int]]
    owns: list[int]
    by_index: dict[int, np.ndarray]


_Tokenized = tuple[list[int], list[list[int]], list[int]]  # (prompt ids, each candidate's full ids, own starts)


class CandidateRanker:
    """Ranks (prompt, prefix, candidates) with the scorer, remembering recent rankings."""

    def __init__(
        self, tokenize: Callable[[str], list[int]], scorer: ContinuationScorer, slots: SlotScheduler | None
    ) -> None:
        self.tokenize = tokenize
        self.scorer = scorer
        self.slots = slots
        self.rankings: OrderedDict[RankingKey, Ranking] = OrderedDict()

    def rank(self, keys: list[RankingKey]) -> list[Ranking]:
        """The ranking of each key: remembered ones as they are, the others ranked together."""
        missing = list(dict.fromkeys(k for k in keys if k not in self.rankings))
        if missing:
            ranked = self.rank_many([(k[0], k[1], list(k[2])) for k in missing])
            for k, ranking in zip(missing, ranked):
                self.rankings[k] = ranking
        rankings = [self.rankings[k] for k in keys]
        for k in keys:
            self.rankings.move_to_end(k)
        while len(self.rankings) > RANKINGS_KEPT:
            self.rankings.popitem(last=False)
        return rankings

    def rank_many(self, items: list[tuple[str, str, list[str]]]) -> list[Ranking]:
        """Rank candidates after each (prompt, prefix): every candidate's own tokens' logprobs.

        With KV slots, each prompt reuses the longest prefix any slot holds (an agent's own last prompt), the
        new tails of all prompts go in one decode, then every candidate of every prompt in as few as fit.
        """
        tokenized: list[_Tokenized] = []
        for prompt, prefix, candidates in items:
            head, _ = scoring_texts(prompt, prefix, "")
            base = self.tokenize(head)
            fulls = [self.tokenize(scoring_texts(prompt, prefix, c)[1]) for c in candidates]
            # shared context = longest prefix common to the prompt and every candidate's tokenization;
            # a candidate's own tokens start where its tokenization leaves the prompt's
            owns = [common_prefix(base, f) for f in fulls]
            self.scorer.check_fits(max(len(f) for f in fulls))
            tokenized.append((base, fulls, owns))
        if self.slots is None or not self.scorer.scratch:
            return [self._rank_in_sequence_0(*t) for t in tokenized]
        return self._rank_in_slots(tokenized, self.slots)

    def _rank_in_slots(self, tokenized: list[_Tokenized], slots: SlotScheduler) -> list[Ranking]:
        """Prompts placed in KV slots, a wave at a time; every placed prompt's candidates in shared decodes."""
        rankings: dict[int, Ranking] = {}
        todo = list(enumerate(tokenized))
        slots.check()
        while todo:
            now, later = slots.wave([(base, base[: min(owns)]) for _, (base, _, owns) in todo])
            wave, todo = [todo[i] for i in now], [todo[i] for i in later]
            contexts = [base[: min(owns)] for _, (base, _, owns) in wave]
            reserve = len(self.scorer.runtime.cached_tokens()) + sum(sum(len(f) for f in t[1]) for _, t in wave + todo)
            placed = slots.prefill(contexts, reserve)
            done, todo = wave[: len(placed)], wave[len(placed) :] + todo
            conts = [
                [(f[len(ctx) :], own - len(ctx)) for f, own in zip(fulls, owns)]
                for (_, (_, fulls, owns)), ctx in zip(done, contexts)
            ]
            scored = self.scorer.score_in_sequences(
                [(seq, len(ctx), row, c) for (seq, row), ctx, c in zip(placed, contexts, conts)]
            )
            for (k, (base, fulls, owns)), per in zip(done, scored):
                rankings[k] = Ranking(base, fulls, owns, {i: lp for i, lp in enumerate(per) if lp is not None})
        return [rankings[k] for k in range(len(tokenized))]

    def _rank_in_sequence_0(self, base: list[int], fulls: list[list[int]], owns: list[int]) -> Ranking:
        """Ranking on the one-prompt path (no slots): the prompt in sequence 0, candidates one after another or batched."""
        m = min(owns)
        ctx_logits = self.scorer.eval_context(base[:m])
        conts = [(f[m:], own - m) for f, own in zip(fulls, owns)]
        scorable = [i for i, (cont, _) in enumerate(conts) if cont]
        if self.scorer.scratch:
            scored = self.scorer.score_batched(m, ctx_logits, [conts[i] for i in scorable])
        else:
            scored = [self.scorer.score_one(m, ctx_logits, *conts[i]) for i in scorable]
        return Ranking(base, fulls, owns, dict(zip(scorable, scored)))


def pick(
    ranking: Ranking, candidates: list[str], score: str, temperature: float, seed: int | None
) -> tuple[list[CandidateScore], int]:
    """Each candidate's score (`mean` or `sum` of its tokens' logprobs; unscorable ones never preferred) and the
    index chosen: the argmax at temperature 0, else a sample of softmax(score / temperature) seeded by `seed`."""
    scores: list[CandidateScore] = []
    for i, c in enumerate(candidates):
        if i not in ranking.by_index:
            scores.append(CandidateScore(c, -1e9, 0, -1e9))  # nothing to score: never preferred
            continue
        lp, n = float(ranking.by_index[i].sum()), len(ranking.by_index[i])
        value = lp / max(1, n) if score == "mean" else lp
        scores.append(CandidateScore(c, lp, n, value))
    vals = np.array([s.score for s in scores], dtype=np.float64)
    if temperature and temperature > 0:
        rng = np.random.default_rng(seed)
        z = vals / temperature
        z = np.exp(z - z.max())
        idx = int(rng.choice(len(scores), p=z / z.sum()))
    else:
        idx = int(vals.argmax())
    return scores, idx
