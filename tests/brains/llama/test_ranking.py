"""Picking among ranked candidates (`agents.brains.llama.ranking`): the score, unscorable candidates, seeded samples."""

from __future__ import annotations

import numpy as np

from agents.brains.llama.ranking import Ranking, pick, scoring_texts


def _ranking(per_candidate: dict[int, list[float]]) -> Ranking:
    return Ranking([], [], [], {i: np.array(lps) for i, lps in per_candidate.items()})


def test_mean_prefers_likely_tokens_and_sum_prefers_short_candidates() -> None:
    ranking = _ranking({0: [-1.0], 1: [-0.5, -0.5, -0.5, -0.5]})
    scores, idx = pick(ranking, ["a", "bbbb"], "mean", 0.0, None)
    assert idx == 1 and [s.score for s in scores] == [-1.0, -0.5] and [s.n_tokens for s in scores] == [1, 4]
    scores, idx = pick(ranking, ["a", "bbbb"], "sum", 0.0, None)
    assert idx == 0 and [s.logprob for s in scores] == [-1.0, -2.0]


def test_a_candidate_with_nothing_to_score_is_never_preferred() -> None:
    ranking = _ranking({1: [-30.0]})
    for seed in range(20):
        scores, idx = pick(ranking, ["", "unlikely"], "mean", 5.0, seed)
        assert idx == 1 and scores[0].score == -1e9 and scores[0].n_tokens == 0


def test_samples_are_seeded_and_spread() -> None:
    ranking = _ranking({0: [-1.0], 1: [-1.2], 2: [-1.1]})
    picks = [pick(ranking, ["x", "y", "z"], "mean", 1.0, s)[1] for s in range(30)]
    assert picks == [pick(ranking, ["x", "y", "z"], "mean", 1.0, s)[1] for s in range(30)]
    assert len(set(picks)) == 3


def test_candidates_are_scored_after_the_prefix_and_templates_by_their_fixed_head() -> None:
    head, full = scoring_texts("PROMPT", "Action: ", "click[b01]")
    assert head == "PROMPTAction:" and full == "PROMPTAction: click[b01]"
    _, template = scoring_texts("PROMPT", "Action: ", "search[...]")
    assert template == "PROMPTAction: search["
