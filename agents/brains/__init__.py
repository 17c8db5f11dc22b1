"""LLM backends behind one contract (`base.Brain`), built by name through `registry.make_brain`."""
