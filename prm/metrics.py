"""Held-out PRM quality: error against Monte Carlo labels, step ranking, and trajectory success AUC.

numpy only (no scipy/sklearn dependency); ties are handled with average ranks.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np


def rankdata(x: np.ndarray) -> np.ndarray:
    """Average ranks (1-based), ties sharing their mean rank."""
    x = np.asarray(x, dtype=np.float64)
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    ranks = np.empty(len(x), dtype=np.float64)
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])
    ends = np.r_[starts[1:], len(x)]
    avg = (starts + ends + 1) / 2.0  # mean of 1-based ranks start+1..end
    ranks[order] = np.repeat(avg, ends - starts)
    return ranks


def spearman(pred: np.ndarray, label: np.ndarray) -> float:
    """Spearman rank correlation; NaN when either side is constant."""
    if len(pred) < 2:
        return float("nan")
    a, b = rankdata(pred), rankdata(label)
    a, b = a - a.mean(), b - b.mean()
    den = np.sqrt((a * a).sum() * (b * b).sum())
    return float((a * b).sum() / den) if den > 0 else float("nan")


def roc_auc(scores: np.ndarray, positive: np.ndarray) -> float:
    """P(score of a random positive > score of a random negative), ties counting half (Mann-Whitney U)."""
    positive = np.asarray(positive, dtype=bool)
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    r = rankdata(scores)
    return float((r[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def pairwise_accuracy(pred: np.ndarray, label: np.ndarray, groups: list[str], margin: float = 0.1) -> float:
    """Among step pairs of the same task whose labels differ by more than `margin`, the share ordered right."""
    by: dict[str, list[int]] = defaultdict(list)
    for i, g in enumerate(groups):
        by[g].append(i)
    right = total = 0.0
    for idx in by.values():
        if len(idx) < 2:
            continue
        p, y = pred[idx], label[idx]
        dy = y[:, None] - y[None, :]
        dp = p[:, None] - p[None, :]
        mask = dy > margin
        total += mask.sum()
        right += (dp[mask] > 0).sum() + 0.5 * (dp[mask] == 0).sum()
    return float(right / total) if total else float("nan")


def prm_metrics(
    pred: np.ndarray, mc: np.ndarray, groups: list[str], final_scores: np.ndarray, success: np.ndarray
) -> dict[str, float]:
    """The evaluation row printed each epoch."""
    return {
        "mse_vs_mc": float(np.mean((pred - mc) ** 2)) if len(mc) else float("nan"),
        "pairwise_acc": pairwise_accuracy(pred, mc, groups) if len(mc) else float("nan"),
        "spearman": spearman(pred, mc) if len(mc) else float("nan"),
        "success_auc": roc_auc(final_scores, success),
    }
