"""`python -m agents.collect env=webshop brain=scripted episodes=1000 concurrency=16 [executor=ray] out=...`

Rerunning the same command resumes: finished episodes are kept, missing and failed ones run.
Exit codes: 0 all N episodes are in the store; 1 some failed or the run stopped (rerun to
finish); 2 a configuration mistake (one clear message, no traceback).
"""

from __future__ import annotations

import logging
import sys

import hydra
from omegaconf import DictConfig, OmegaConf

from agents.brains.base import BrainError
from agents.core.factory import ConfigError

log = logging.getLogger("agents.collect")


@hydra.main(version_base="1.3", config_path="../conf", config_name="collect")
def main(cfg: DictConfig) -> None:
    from agents.collect.collector import collect

    logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per env request would drown the log
    try:
        plain = OmegaConf.to_container(cfg, resolve=True)
        result = collect(plain)  # type: ignore[arg-type]
    except (ConfigError, BrainError, ValueError) as e:
        log.error("%s", e)
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    if not result.complete:
        sys.exit(1)


if __name__ == "__main__":
    main()
