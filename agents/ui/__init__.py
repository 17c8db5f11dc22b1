"""A read-only web UI over run folders: `python -m agents.ui runs/` (see docs/ui.md)."""
