"""`python -m agents.run env=webshop brain=local episodes=5 ...` — run an agent and report how it does.

`--help` lists the config groups and their options. User mistakes (unknown names, bad options,
an unreachable endpoint) end with one clear message and exit code 2, not a traceback.
"""

from __future__ import annotations

import logging
import sys

import hydra
from omegaconf import DictConfig, OmegaConf

from agents.brains.base import BrainError
from agents.core.factory import ConfigError

log = logging.getLogger("agents.run")


@hydra.main(version_base="1.3", config_path="conf", config_name="run")
def main(cfg: DictConfig) -> None:
    from agents.runner import run_config

    logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per request would drown the log
    try:
        plain = OmegaConf.to_container(cfg, resolve=True)
        run_config(plain)  # type: ignore[arg-type]
    except (ConfigError, BrainError, ValueError) as e:
        log.error("%s", e)
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
