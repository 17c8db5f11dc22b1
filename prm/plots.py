"""Loss and metric curves as PNG (matplotlib, headless); skipped with a warning when matplotlib is absent."""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger(__name__)


def plot_history(history: list[dict], steps: list[dict], path: Path) -> bool:
    """Draw the loss per update and the held-out metrics per epoch to `path`; False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log.warning("matplotlib not installed: no curves written (pip install matplotlib)")
        return False
    keys = [
        k
        for k in ("mse_vs_mc", "mse_vs_return", "pairwise_acc", "spearman", "success_auc")
        if any(k in h for h in history)
    ]
    fig, axes = plt.subplots(1, 1 + len(keys), figsize=(4 * (1 + len(keys)), 3.2))
    ax = axes[0] if keys else axes
    if steps:
        xs = [s["update"] for s in steps]
        for name in ("loss", "l_q", "l_a", "l_r"):
            if any(s.get(name) for s in steps):  # l_r only with the sibling ranking loss
                ax.plot(xs, [s.get(name, 0.0) for s in steps], label=name, lw=1)
        ax.set_yscale("log")
        ax.set_xlabel("optimizer update")
        ax.set_title("training loss")
        ax.legend()
    for a, k in zip(axes[1:] if keys else [], keys):
        pts = [(h["epoch"], h[k]) for h in history if k in h and h[k] == h[k]]
        if pts:
            a.plot(*zip(*pts), marker="o")
        a.set_xlabel("epoch")
        a.set_title(f"held-out {k}")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
