"""BabyAI (minigrid's grid-world levels) as a text env: `levels` (AgentGym's 40-level pool and its
task index), `view` (the agent's view in words, `go to` paths), `env` (the gym env, BabyAIBot expert)."""
