"""The scenarios' layout: a folder per scenario with its rule and params, registered at its definition, and
no import circle between the feed's recommenders and the feed scenario (not even for type checking)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import societies
from societies.config import SocietyRunConfig
from societies.scenarios import scenario_names, scenario_spec

ROOT = Path(societies.__file__).parent
BUILT_IN = ["cooperation", "diffusion", "feed", "opinion", "public_goods", "town"]


def imports_of(path: Path) -> set[str]:
    """Every module a file imports, at any depth (inside functions and `if TYPE_CHECKING:` too)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_every_built_in_scenario_is_a_registered_folder_with_its_rule_and_params() -> None:
    assert [n for n in scenario_names() if n in BUILT_IN] == BUILT_IN
    for name in BUILT_IN:
        folder = ROOT / "scenarios" / name
        assert {"__init__.py", "scenario.py", "rule.py", "params.py"} <= {p.name for p in folder.glob("*.py")}, name
        spec = scenario_spec(name)
        assert spec.target.__module__ == f"societies.scenarios.{name}", "registered where the scenario is defined"
        assert spec.options is not None and spec.options.__module__ == f"societies.scenarios.{name}.params"
        assert SocietyRunConfig.model_fields[name].annotation is spec.options, "the config field is the same model"


@pytest.mark.parametrize("module", ["state", "queries", "recommender", "ranking", "recommenders", "params"])
def test_the_feeds_recommender_side_never_imports_the_scenario(module: str) -> None:
    above = {f"societies.scenarios.feed.{m}" for m in ("scenario", "text", "rule")} | {"societies.scenarios.feed"}
    found = imports_of(ROOT / "scenarios" / "feed" / f"{module}.py") & above
    assert not found, f"feed/{module}.py imports {sorted(found)}: the recommenders must sit below the scenario"


def test_the_generic_rule_module_imports_no_scenario() -> None:
    found = {m for m in imports_of(ROOT / "rules.py") if m.startswith("societies.scenarios")}
    assert not found, f"societies/rules.py imports {sorted(found)}; each scenario's rules live in its folder"
