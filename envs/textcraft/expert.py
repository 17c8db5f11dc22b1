"""TextCraft's scripted expert: a recipe planner that replans from the current inventory every step.

Why replan each step instead of replaying a fixed script: the agents' `scripted` brain adds
epsilon noise and search branches from any state, so the expert must act well from wherever the
agent left it (items fetched in the wrong amount, an intermediate crafted twice). The plan is a
depth-first expansion of the goal: each item comes from the inventory if enough is free, else
from its shallowest recipe (a tag ingredient from an item of that tag already held, else the
tag's shallowest member), else from `get`. Deterministic: ties break on sorted names.
"""

from __future__ import annotations

import math
from collections import Counter

from envs.textcraft.recipes import Ingredient, Recipe, RecipeBook, display

MAX_GET = 64  # one Minecraft stack: the most a single `get` may fetch


class NoPlan(RuntimeError):
    """The goal cannot be reached from this inventory with the book's recipes (never for shipped goals)."""


def best_recipe(book: RecipeBook, item: str) -> Recipe:
    """The item's shallowest recipe (its first one on ties)."""
    depth = book.depth
    rs = book.recipes[item]
    return min(rs, key=lambda r: max(depth.get(i.name, 0) for i in r.inputs))


def concrete_item(book: RecipeBook, ing: Ingredient, free: Counter[str], need: int) -> str:
    """The item that fills `ing`: itself, or for a tag one held in enough number, else the shallowest member."""
    if not ing.is_tag:
        return ing.name
    members = book.members(ing.name)
    if not members:
        raise NoPlan(f"no craftable item carries tag {display(ing.name)}")
    held = [m for m in members if free[m] >= need]
    if held:
        return held[0]
    return min(members, key=lambda m: (book.depth.get(m, 0), m))


def craft_text(recipe: Recipe, used: list[tuple[str, int]]) -> str:
    """The `craft` action for one application of `recipe` with concrete inputs."""
    return f"craft {recipe.count} {display(recipe.output)} using " + ", ".join(f"{c} {display(n)}" for n, c in used)


class _Planner:
    def __init__(self, book: RecipeBook, inventory: dict[str, int]) -> None:
        self.book = book
        self.have: Counter[str] = Counter(inventory)
        self.reserved: Counter[str] = Counter()
        self.plan: list[str] = []

    def free(self) -> Counter[str]:
        return Counter({k: v - self.reserved[k] for k, v in self.have.items() if v > self.reserved[k]})

    def acquire(self, item: str, n: int, depth: int = 0) -> None:
        """Append the actions that leave `n` free `item` in the inventory, then reserve them."""
        if depth > 64:
            raise NoPlan("the recipe tree is deeper than 64 levels")
        missing = n - (self.have[item] - self.reserved[item])
        if missing > 0:
            if self.book.fetchable(item):
                for start in range(0, missing, MAX_GET):  # one `get` fetches at most a stack
                    self.plan.append(f"get {min(MAX_GET, missing - start)} {display(item)}")
                self.have[item] += missing
            elif item in self.book.recipes:
                self.craft(item, missing, depth)
            else:
                raise NoPlan(f"{display(item)} can be neither crafted nor fetched")
        self.reserved[item] += n

    def craft(self, item: str, missing: int, depth: int) -> None:
        recipe = best_recipe(self.book, item)
        times = math.ceil(missing / recipe.count)
        used: list[tuple[str, int]] = []
        for ing in recipe.inputs:
            name = concrete_item(self.book, ing, self.free(), ing.count * times)
            self.acquire(name, ing.count * times, depth + 1)
            used.append((name, ing.count))
        for _ in range(times):
            self.plan.append(craft_text(recipe, used))
        for name, count in used:
            self.reserved[name] -= count * times
            self.have[name] -= count * times
        self.have[item] += recipe.count * times


def plan(book: RecipeBook, goal: str, inventory: dict[str, int]) -> list[str]:
    """The expert's actions from `inventory` until `goal` is crafted (the last one crafts it)."""
    planner = _Planner(book, inventory)
    planner.craft(goal, 1, 0)  # crafting the goal ends the episode, even if one is already held
    return planner.plan


def expert_action(book: RecipeBook, goal: str, inventory: dict[str, int]) -> str:
    """The expert's next action: the first step of a fresh plan from `inventory`."""
    return plan(book, goal, inventory)[0]
