"""A demo agentsim plugin: `first` brain, `notes` memory, `counter` env (see pyproject.toml)."""
