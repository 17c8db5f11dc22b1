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


def wilson95(successes: int, n: int) -> tuple[float, float]:
    """The 95% Wilson score interval of a success rate (stays inside [0, 1] and is sound at 0 or n successes)."""
    if n <= 0:
        return float("nan"), float("nan")
    z, p = 1.959964, successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return float(centre - half), float(centre + half)
