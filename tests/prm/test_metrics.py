"""Evaluation metrics on cases small enough to check by hand."""

import numpy as np
import pytest

from prm.metrics import pairwise_accuracy, rankdata, roc_auc, spearman


def test_rankdata_averages_ties():
    assert rankdata(np.array([10, 20, 20, 5])).tolist() == [2.0, 3.5, 3.5, 1.0]


def test_spearman_signs():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    assert spearman(x, x**3) == pytest.approx(1.0)
    assert spearman(x, -x) == pytest.approx(-1.0)
    assert np.isnan(spearman(x, np.ones(4)))


def test_roc_auc_counts_ordered_pairs():
    assert roc_auc(np.array([0.9, 0.8, 0.1, 0.2]), np.array([1, 1, 0, 0])) == 1.0
    assert roc_auc(np.array([0.9, 0.1, 0.8, 0.2]), np.array([1, 1, 0, 0])) == 0.5
    assert roc_auc(np.array([0.5, 0.5]), np.array([1, 0])) == 0.5


def test_pairwise_accuracy_within_tasks_only():
    pred = np.array([0.9, 0.1, 0.2, 0.8])
    label = np.array([1.0, 0.0, 1.0, 0.0])
    # task a: (0 vs 1) right; task b: (2 vs 3) wrong; cross-task pairs are not compared
    assert pairwise_accuracy(pred, label, ["a", "a", "b", "b"]) == 0.5
    assert pairwise_accuracy(pred, label, ["a", "a", "a", "a"], margin=0.5) == 0.75  # 3 of the 4 pairs
