"""Bad actions: message in obs and info, what is allowed listed, state unchanged, never raise."""

from __future__ import annotations

import gymnasium as gym
import pytest

from envs.webshop.env import WebShopEnv

BAD_ON_SEARCH_PAGE = [
    ("click[buy now]", "not clickable"),
    ("buy the red one", "not of the form"),
    ("search[]", "no letters or digits"),
    ("search[!!! ???]", "no letters or digits"),
    ("search[" + "x" * (1 << 20) + "]", "at most 1,000"),
    ("click[\x00buy now]", "control character"),
    ("search[shoes\u200b]", "invisible formatting character"),
    ("search[\u202eshoes]", "invisible formatting character"),
    ("search[\ud800]", "lone surrogate"),
    ("search[\ue000]", "private-use"),
    ("click[]", "names nothing"),
    (12345, "must be a string"),
    (None, "must be a string"),
]


def _state(env: WebShopEnv):
    s = env.snapshot()
    return s.state, s.goal_index, s.breakdown


@pytest.mark.parametrize("action, words", BAD_ON_SEARCH_PAGE)
def test_bad_action_on_search_page(env, action, words):
    env.reset(options={"goal_index": 0})
    before = _state(env)
    obs, r, term, trunc, info = env.step(action)
    assert "error" in info and words in info["error"], info.get("error")
    assert info["error"].startswith("Invalid action:") and "search[...]" in info["error"]
    assert obs.startswith(info["error"]) and "Instruction:" in obs
    assert (r, term, trunc) == (0.0, False, False)
    assert _state(env) == before


def test_search_without_search_bar_and_unknown_click(env):
    env.reset(options={"goal_index": 0})
    env.step("search[quality]")
    before = _state(env)
    _, _, _, _, info = env.step("search[shoes]")
    assert "no search bar" in info["error"] and "click[back to search]" in info["error"]
    assert _state(env) == before
    _, _, _, _, info = env.step("click[B000NOTHERE]")
    assert "not clickable" in info["error"] and "click[next >]" in info["error"]
    assert _state(env) == before


def test_fullwidth_and_case_are_normalised(env):
    env.reset(options={"goal_index": 0})
    _, _, _, _, info = env.step("ＳＥＡＲＣＨ［Quality］")
    assert "error" not in info and info["page"] == "results"
    item = next(a for a in info["available_actions"] if a.startswith("click[b0"))
    _, _, _, _, info = env.step(item.upper())
    assert "error" not in info and info["page"] == "item"


def test_step_limit_truncates(small_kwargs):
    """Bad actions count towards the limit, which is Gymnasium's TimeLimit (max_episode_steps)."""
    env = gym.make("agentsim/WebShop-v0", max_episode_steps=3, **small_kwargs)
    env.reset(seed=0)
    outs = [env.step("nonsense") for _ in range(3)]
    assert [o[3] for o in outs] == [False, False, True] and not any(o[2] for o in outs)


def test_deprecated_max_steps_still_truncates(small_kwargs):
    """Kept for direct constructions (web app, PRM scripts) until they use TimeLimit."""
    with pytest.warns(DeprecationWarning, match="max_episode_steps"):
        env = WebShopEnv(max_steps=3, **small_kwargs)
    env.reset(seed=0)
    outs = [env.step("nonsense") for _ in range(3)]
    assert [o[3] for o in outs] == [False, False, True] and not any(o[2] for o in outs)


def test_random_actions_never_raise(env):
    env.reset(seed=0)
    env.action_space.seed(0)
    for _ in range(300):
        _, _, term, trunc, info = env.step(env.action_space.sample())
        assert "error" in info
        if term or trunc:
            env.reset()
