"""`python -m agents.collect env=webshop brain=scripted episodes=1000 concurrency=16 [executor=ray] out=...`

Rerunning the same command resumes: finished episodes are kept, missing and failed ones run.
Exit codes: 0 all N episodes are in the store; 1 some failed or the run stopped (rerun to
finish); 2 a configuration mistake (one clear message, no traceback).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.cli import hydra_command
from agents.config import CollectConfig


def job(cfg: dict[str, Any]) -> int:
    """Validate the config and run the collection; the exit code says whether it is complete."""
    from agents.engine import collect

    return collect(cfg).exit_code


main = hydra_command(str(Path(__file__).parents[1] / "conf"), "collect", job, model=CollectConfig)

if __name__ == "__main__":
    main()
