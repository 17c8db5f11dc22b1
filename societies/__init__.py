"""Agent societies: multi-agent text envs on PettingZoo's Parallel API (docs/societies.md).

`env` (SocietyEnv, Scenario, Moves), `scenarios/` (opinion, diffusion, cooperation, public_goods, ...), `rules`
(vectorised rule brains), `graphs`, `personas`, `metrics`, `plots`, `adapter` (single-agent <->
Parallel), `config` + `run` (`python -m societies.run`), `sharding` + `partition` + `keyed` (rule
societies over Ray actors by graph partition, with shard-invariant randomness). Builds on
`agents` and `envs`, never the other way round.
"""
