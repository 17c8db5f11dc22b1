"""Slot filling is generic: English stopwords, plus the words an env names in `info["slot_stopwords"]`."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("AGENTSIM_CACHE", tempfile.mkdtemp(prefix="agentsim-slot-tests-"))

from agents.brains.scripted import ScriptedBrain
from agents.core import Agent
from agents.slots import STOPWORDS, expand_templates

TASK = "i want to buy a red mug, and price lower than 20 dollars"

# The one list slot filling used before env words moved behind the contract: WebShop must see exactly it.
BEFORE = frozenset(
    "a an the i im i'm am is are be been being me my we our you your it its this that these those to of in on at by "
    "for from with and or but so as if then than too very can could would should will shall may might must do does did "
    "have has had want wanted need needs needed like looking look find buy get purchase shopping shop please "
    "which what who whom whose price priced lower less under below dollars dollar up cost costs costing no more "
    "around about between within also some any".split()
)
# added since: task verbs ("search for ...", "can you help me find ...") made `search[search]`, which looped
TASK_VERBS = frozenset({"search", "help", "show"})


def test_generic_filling_knows_no_shop_words():
    """A coding env's `bash[...]` slot keeps "buy" and "price": they may be what the task is about."""
    assert {"buy", "price", "dollars", "shopping"}.isdisjoint(STOPWORDS)
    filled = expand_templates(["bash[...]"], "buy more disk and price the build")
    assert filled[0] == "bash[buy disk price build]"


def test_an_envs_stopwords_leave_its_slots():
    filled = expand_templates(["search[...]"], TASK, stopwords=["buy", "price", "dollars"])
    assert filled == ["search[red mug]"]
    assert expand_templates(["search[...]", "click[back]"], "") == ["search[...]", "click[back]"]


def test_webshop_names_its_words_with_its_templates_and_fills_as_before():
    from envs.webshop.env import SLOT_STOPWORDS, WebShopEnv

    assert STOPWORDS | set(SLOT_STOPWORDS) == BEFORE | TASK_VERBS
    env = WebShopEnv(num_products=2_000, split="test")
    _, info = env.reset(seed=0, options={"goal_index": 0})
    assert info["action_templates"] == ["search[...]"] and info["slot_stopwords"] == list(SLOT_STOPWORDS)
    agent = Agent(ScriptedBrain(), mode="choose")
    agent.reset(info["instruction"])
    args = agent._choose_args(info)
    spans = [a for a in args if a.startswith("search[")]
    want = expand_templates(["search[...]"], info["instruction"], stopwords=BEFORE | TASK_VERBS)
    assert spans == want and spans
    _, _, _, _, info = env.step(env.expert_action())  # a results page: no template, no stopwords
    assert not info["action_templates"] and "slot_stopwords" not in info


def test_a_template_the_env_lists_concretely_is_not_filled_from_the_task():
    """Fault trees list concrete checks and diagnoses: `check[<task words>]` would be a short, likely, wrong choice."""
    listed = ["check[Power cord fault]", "diagnose[Blown fuse]"]
    filled = expand_templates(["check[...]", "ask[...]", "diagnose[...]"], TASK, listed=listed)
    assert filled and all(f.startswith("ask[") for f in filled)


def test_fault_tree_choices_are_its_listed_actions_and_task_filled_questions():
    import gymnasium as gym

    import envs  # noqa: F401  (registers the envs)

    env = gym.make("agentsim/FaultTree-v0", split="test")
    _, info = env.reset(seed=0)
    agent = Agent(ScriptedBrain(), mode="choose")
    agent.reset(info["instruction"])
    args = agent._choose_args(info)
    listed = info["available_actions"]
    assert any(a.startswith("check[") for a in listed) and any(a.startswith("diagnose[") for a in listed)
    assert [a for a in args if a.startswith(("check[", "diagnose["))] == listed
    assert any(a.startswith("ask[") for a in args)  # no concrete questions are listed: the task fills them
    env.close()


def test_textcraft_choices_are_its_listed_gets_and_crafts_not_task_words():
    """TextCraft's templates are space-separated (`get ...`): listed `get 1 bone` covers them, so the ranked choice
    is among the env's concrete actions, never `get crafting commands craft white dye ...` cut from the task."""
    import gymnasium as gym

    import envs  # noqa: F401  (registers the envs)

    env = gym.make("agentsim/TextCraft-v0", split="eval")
    _, info = env.reset(seed=0)
    assert info["action_templates"] == ["get ...", "craft ..."]
    agent = Agent(ScriptedBrain(), mode="choose")
    agent.reset(info["instruction"])
    assert agent._choose_args(info) == info["available_actions"]
    # a template none of whose instances is listed is still filled from the task
    filled = expand_templates(["get ...", "search[...]"], TASK, listed=["get 1 bone"])
    assert filled and all(f.startswith("search[") for f in filled)
    env.close()
