"""`python -m agents.run env=webshop brain=local episodes=5 ...` — run an agent and report how it does.

`--help` lists the config groups and their options. Exit codes: 0 every episode finished; 1 some
episodes crashed (the table says how many; rerun with resume=true to finish them); 2 a user
mistake (unknown key, value out of range, unreachable endpoint), reported before any episode starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.cli import hydra_command
from agents.config import RunConfig


def job(cfg: dict[str, Any]) -> int:
    """Validate the config and run the episodes (the same engine as `agents.collect`)."""
    from agents.engine import run_config

    return run_config(cfg).exit_code


main = hydra_command(str(Path(__file__).parent / "conf"), "run", job, model=RunConfig)

if __name__ == "__main__":
    main()
