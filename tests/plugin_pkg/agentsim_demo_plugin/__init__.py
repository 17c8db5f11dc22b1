"""A demo agentsim plugin: `first` brain, `notes` memory, `counter` env (see pyproject.toml).

The env and the memory declare their facts with the project's decorators (a step limit; state carried
across episodes); the brain does not, so it gets a brain's default facts (not in-process)."""
