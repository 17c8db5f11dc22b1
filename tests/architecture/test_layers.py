"""The layer rule of docs/architecture.md, held against every import of the code.

The rule lives in the doc's ```layers blocks (one floor a line, highest first; `|` between the rooms of a floor;
a room is one or more module prefixes). Every module under the project's packages is parsed with `ast`, and
every import in it (at module level, under TYPE_CHECKING, or inside a function) is checked: a module imports
from its own room or from a room on a lower floor. A failure names file:line, the import and the rule broken,
so the doc and the code cannot drift apart.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
PACKAGES = ("envs", "agents", "prm", "societies")
BLOCK = re.compile(r"^```layers(?: (?P<scope>[\w.]+))?\n(?P<body>.*?)^```", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Room:
    floor: int
    prefixes: tuple[str, ...]

    @property
    def name(self) -> str:
        return " ".join(self.prefixes)


@dataclass(frozen=True)
class Layers:
    """One ```layers block: the rooms of the modules under `scope` (None: the whole project)."""

    scope: str | None
    rooms: tuple[Room, ...]

    def covers(self, module: str) -> bool:
        return self.scope is None or within(module, self.scope)

    def room_of(self, module: str) -> Room | None:
        """The room whose prefix is the longest that holds `module`; a scope's own package is its floor."""
        best: tuple[int, Room] | None = None
        for room in self.rooms:
            for prefix in room.prefixes:
                if within(module, prefix) and (best is None or len(prefix) > best[0]):
                    best = (len(prefix), room)
        if best is None and module == self.scope:
            return Room(1, (module,))
        return best[1] if best else None


@dataclass(frozen=True)
class Import:
    file: Path
    line: int
    source: str  # the importing module
    target: str  # the imported module, resolved (relative imports made absolute)


def within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def parse_layers(text: str) -> list[Layers]:
    """Every ```layers block of the doc; a line is `<floor>: room | room`, a room `prefix prefix ...`."""
    blocks = []
    for m in BLOCK.finditer(text):
        rooms = []
        for raw in m["body"].splitlines():
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            floor, _, rest = line.partition(":")
            for part in rest.split("|"):
                rooms.append(Room(int(floor), tuple(part.split())))
        blocks.append(Layers(m["scope"], tuple(rooms)))
    return blocks


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_module(name: str, root: Path = ROOT) -> bool:
    base = root.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imports_of(path: Path, root: Path = ROOT) -> list[Import]:
    """Every import in the file, wherever it stands, with relative imports resolved against the module
    (`from pkg import mod` is an import of `pkg.mod` where that is a module)."""
    source = module_name(path, root)
    package = source.split(".") if path.name == "__init__.py" else source.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            subs = [f"{module}.{a.name}" for a in node.names if is_module(f"{module}.{a.name}", root)]
            targets = subs or [module]
        else:
            continue
        found += [Import(path, node.lineno, source, t) for t in targets if t.split(".")[0] in PACKAGES]
    return found


@cache
def project_files() -> tuple[Path, ...]:
    return tuple(sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")))


@cache
def doc_layers() -> tuple[Layers, ...]:
    return tuple(parse_layers(DOC.read_text(encoding="utf-8")))


def broken(layers: Layers, imp: Import) -> str | None:
    """Why `imp` breaks the rule of `layers`, or None when it keeps it (or the block does not cover it)."""
    if not layers.covers(imp.source) or not layers.covers(imp.target):
        return None
    src, dst = layers.room_of(imp.source), layers.room_of(imp.target)
    if src is None or dst is None or src == dst:
        return None
    where = f"{imp.file.relative_to(ROOT)}:{imp.line}: {imp.source} imports {imp.target}"
    if dst.floor > src.floor:
        return f"{where}: upward, from floor {src.floor} ({src.name}) to floor {dst.floor} ({dst.name})"
    if dst.floor == src.floor:
        return f"{where}: sideways, between the rooms {src.name!r} and {dst.name!r} of floor {src.floor}"
    return None


def test_the_doc_states_the_rule() -> None:
    blocks = doc_layers()
    assert [b.scope for b in blocks] == [None, "agents"], "docs/architecture.md lost a ```layers block"
    floors = [r.floor for b in blocks for r in b.rooms]
    assert all(f >= 1 for f in floors)


def test_every_room_of_the_doc_is_a_module() -> None:
    """A room that names no module is a doc that drifted from the code."""
    modules = {module_name(p) for p in project_files()}
    for block in doc_layers():
        for room in block.rooms:
            for prefix in room.prefixes:
                assert any(within(m, prefix) for m in modules), f"docs/architecture.md names {prefix}: no such module"


def test_every_module_has_a_place() -> None:
    """Each module a block covers stands in one of its rooms: a new module is placed in the doc, not guessed."""
    unplaced = [
        f"{p.relative_to(ROOT)} ({module_name(p)}) is on no floor of the ```layers {b.scope or ''} block"
        for b in doc_layers()
        for p in project_files()
        if b.covers(module_name(p)) and b.room_of(module_name(p)) is None
    ]
    assert not unplaced, "\n".join(unplaced)


def test_no_import_breaks_the_layer_rule() -> None:
    blocks = doc_layers()
    problems = [why for p in project_files() for imp in imports_of(p) for b in blocks if (why := broken(b, imp))]
    assert not problems, "imports that break docs/architecture.md's layer rule:\n" + "\n".join(problems)


RULE = """
```layers
2: top
1: low | side
```
"""


@pytest.mark.parametrize(
    ("source", "target", "verdict"),
    [
        ("top.a", "low.b", None),  # down
        ("low.a", "low.b", None),  # one room
        ("low.a", "top.b", "upward"),
        ("low.a", "side.b", "sideways"),
    ],
)
def test_the_checker_tells_up_from_down(source: str, target: str, verdict: str | None) -> None:
    """The checker itself: it refuses an upward and a sideways import, and lets a downward one pass."""
    (layers,) = parse_layers(RULE)
    why = broken(layers, Import(ROOT / "x.py", 3, source, target))
    assert (why is None) if verdict is None else (why is not None and verdict in why and "x.py:3" in why)


def test_function_level_and_relative_imports_are_read(tmp_path: Path) -> None:
    """An import inside a function counts as much as one at the top, and `from . import x` is resolved."""
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "__init__.py").write_text("")
    (tmp_path / "agents" / "config.py").write_text("")
    probe = tmp_path / "agents" / "probe.py"
    probe.write_text("def f():\n    from prm.model import PRMModel\n\nfrom . import config\n", encoding="utf-8")
    found = {(i.line, i.source, i.target) for i in imports_of(probe, tmp_path)}
    assert found == {(2, "agents.probe", "prm.model"), (4, "agents.probe", "agents.config")}
