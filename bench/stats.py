"""Intervals the benchmarks report (one definition, so their tables compare)."""

from __future__ import annotations

import numpy as np

T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


def ci95(xs: list[float]) -> tuple[float, float]:
    """Mean and half-width of the 95% t-interval over seeds."""
    a = np.asarray(xs, dtype=float)
    if len(a) < 2:
        return float(a.mean()), float("nan")
    try:
        from scipy.stats import t as student_t

        q = float(student_t.ppf(0.975, len(a) - 1))
    except ImportError:
        q = T975.get(len(a) - 1, 1.96)
    return float(a.mean()), float(q * a.std(ddof=1) / np.sqrt(len(a)))
