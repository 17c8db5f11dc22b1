"""The commands the README and docs show, as written, compose and validate (Hydra `--cfg job`, then our models)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel

from agents.cli import check_keys
from agents.config import CollectConfig, RunConfig, validate_config

ROOT = Path(__file__).resolve().parents[2]
MODULES = ("agents.run", "agents.collect", "agents.train", "prm.train", "prm.search", "prm.dense", "societies.run")
PATTERN = re.compile(r"python -m (" + "|".join(re.escape(m) for m in MODULES) + r")((?: [^#`\n]*)?)")


def documented_commands() -> list[tuple[str, str, list[str]]]:
    found = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8").replace("\\\n", " ")
        for m in PATTERN.finditer(text):
            args = m.group(2).strip().rstrip("`").strip()
            comment = text[m.end() :].split("\n", 1)[0]
            if "exits 2" in comment:  # a mistake shown on purpose (tests/cli/test_unknown_keys.py runs those)
                continue
            if "..." in args or "$(" in args or "--help" in args or "key=value" in args or "<" in args:
                continue
            found.append((f"{doc.name}: {m.group(0).strip()}", m.group(1), shlex.split(args)))
    return found


COMMANDS = documented_commands()


def test_the_docs_show_commands() -> None:
    assert len(COMMANDS) >= 12
    assert any("env.kwargs." in " ".join(a) for _, _, a in COMMANDS)  # the README's kwargs form is among them


def _model(module: str) -> type[BaseModel]:
    """The config model of each command (what `main = hydra_command(..., model=...)` checks against)."""
    from agents.policy.config import PolicyTrainConfig
    from prm.config import TrainConfig
    from prm.dense import DenseConfig
    from prm.run_search import SearchConfig
    from societies.config import SocietyRunConfig

    models: dict[str, type[BaseModel]] = {
        "agents.run": RunConfig,
        "agents.collect": CollectConfig,
        "agents.train": PolicyTrainConfig,
        "prm.train": TrainConfig,
        "prm.search": SearchConfig,
        "societies.run": SocietyRunConfig,
        "prm.dense": DenseConfig,
    }
    return models[module]


def _validate(module: str, cfg: dict) -> None:
    check_keys(cfg, _model(module))  # every key known, at every depth (as the command checks before its job)
    validate_config(_model(module), cfg)


@pytest.mark.parametrize("where,module,args", COMMANDS, ids=[c[0][:90] for c in COMMANDS])
def test_documented_command_composes_and_validates(where: str, module: str, args: list[str], tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", module, "--cfg", "job", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
    )
    assert res.returncode == 0, f"{where}\n{res.stderr[-2000:]}"
    cfg = yaml.safe_load(res.stdout)
    _validate(module, cfg)
