"""AgentPRM: a process reward model for agents (Xi et al., 2025, arXiv 2511.08325).

One scalar model M scores every step: promise Q(s_t, a_t) = expected final outcome, and
progress A_t = Q_t - Q_{t-1}. Modules, one job each:

- `targets`  TD/GAE and SARSA(lambda) labels (numpy, vectorised) and Monte Carlo labels (env rollouts)
- `episodes` trajectory records -> plain per-step arrays (outcome, terminal flags, step text in the env's compact form)
- `data`     step text -> token windows with a marker after each action; token cache; batching
- `model`    Hugging Face backbone + scalar head read at the markers (save/from_pretrained)
- `scoring`  batched, cached scoring of (partial) trajectories with a trained model
- `metrics`  held-out evaluation: MSE vs MC labels, step ranking, success AUC
- `config`, `loss`, `plots`, `train`  `python -m prm.train`: L_Q + beta * L_A, labels recomputed by the current model
- `policy`   sample M actions at a state from any brain; roll a policy out from a state
- `search`   Best-of-N, step-level beam search @N x M, per-step reranking (env snapshot/restore);
             `python -m prm.search` runs the driver `run_search` (the library never imports it)
- `dense`    write per-step promise/progress into trajectories as dense rewards (`python -m prm.dense`)

`import prm` stays light: torch is imported only by the modules that need it.
"""
