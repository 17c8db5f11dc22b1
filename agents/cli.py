"""The one layout every entry point shares (`agents.run`, `agents.collect`, `prm.train`, `prm.search`, `prm.dense`).

`main = hydra_command(config_path, config_name, job)`: Hydra composes `key=value` overrides, `job`
gets the plain dict and returns an exit code. A user mistake (`ConfigError`, `BrainError`,
`ValueError`, a missing file) is one `error: ...` line on stderr and exit code 2; no traceback.
Keys under an open mapping (`env.kwargs.<k>=<v>`) are accepted as typed, without Hydra's `+`.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

log = logging.getLogger("agents.cli")

# mappings whose keys are the user's to choose (an env's constructor kwargs): `a.b.k=v` adds k
OPEN_MAPPINGS = ("env.kwargs.",)
Job = Callable[[dict[str, Any]], int]


class UsageError(ValueError):
    """A mistake in how a command was called; exit code 2."""


def open_mapping_overrides(argv: list[str]) -> list[str]:
    """`env.kwargs.num_products=2000` -> `++env.kwargs.num_products=2000` (add or override), as the README writes it."""
    out = []
    for arg in argv:
        if arg.startswith(OPEN_MAPPINGS) and "=" in arg:
            arg = "++" + arg
        out.append(arg)
    return out


def user_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that mean the user asked for something wrong (exit 2), not that the program broke."""
    from agents.brains.base import BrainError
    from agents.config import ConfigError

    return (ConfigError, BrainError, UsageError, ValidationError, ValueError, FileNotFoundError)


def hydra_command(
    config_path: str,
    config_name: str,
    job: Job,
    schemas: dict[str, type[BaseModel]] | None = None,
    search_path: list[Path] | None = None,
) -> Callable[[], None]:
    """Wrap `job` as a Hydra command with the shared error handling and exit codes.

    `schemas` (name -> pydantic model) become config nodes the YAML's defaults list names, so a
    model's defaults are the only ones (default: the run and collect schemas). `search_path` adds
    config folders whose groups the YAML may use (prm.search uses agents.run's env/brain/agent)."""
    import hydra
    from omegaconf import DictConfig, OmegaConf

    from agents.config import register_schemas

    @hydra.main(version_base="1.3", config_path=config_path, config_name=config_name)
    def _main(cfg: DictConfig) -> None:
        logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per request would drown the log
        try:
            plain = OmegaConf.to_container(cfg, resolve=True)
            code = job(plain)  # type: ignore[arg-type]
        except user_errors() as e:
            log.debug("user error", exc_info=True)
            print(f"error: {e}", file=sys.stderr)
            sys.exit(2)
        if code:
            sys.exit(code)

    def main() -> None:
        register_schemas(schemas)  # at start, so every part registered by then has its preset
        args = open_mapping_overrides(sys.argv[1:])
        if search_path:
            args.append("hydra.searchpath=[" + ",".join(f"file://{p}" for p in search_path) + "]")
        sys.argv = [sys.argv[0], *args]
        _main()

    return main
