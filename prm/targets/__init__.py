"""PRM training labels: TD with GAE (the paper), SARSA(lambda) (a switch), Monte Carlo rollouts (the baseline).

`td` is pure numpy; `mc` (env rollouts) is imported on use: `from prm.targets.mc import mc_labels`.
"""

from prm.targets.td import Targets, TDMode, discounted_reverse_cumsum, monte_carlo_returns, step_progress, td_targets

__all__ = ["TDMode", "Targets", "discounted_reverse_cumsum", "monte_carlo_returns", "step_progress", "td_targets"]
