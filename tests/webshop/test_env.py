"""The env through the Gymnasium API: pages, paging, snapshots, modes, the step limit.

The contract (Gymnasium's checker, determinism, bad actions, snapshot round trip, the after-end
rule, the action cap) is checked for every registered env in tests/test_contract.py.
"""

from __future__ import annotations

import gymnasium as gym
import pytest
from gymnasium.wrappers import TimeLimit

from envs.contract import HasExpert, Snapshottable
from envs.webshop.env import WebShopEnv
from envs.webshop.shop import PAGE_SIZE

from .conftest import run_expert


def test_make_with_zero_config():
    env = gym.make("agentsim/WebShop-v0")
    obs, info = env.reset(seed=0)
    assert "Instruction:" in obs and info["action_templates"] == ["search[...]"]
    assert isinstance(env.unwrapped, Snapshottable) and isinstance(env.unwrapped, HasExpert)
    assert isinstance(env, TimeLimit) and env.spec.max_episode_steps == 15  # the registered step limit


def test_seeds_pick_different_goals(small_kwargs):
    env = WebShopEnv(**small_kwargs)
    instructions = {env.reset(seed=s)[1]["instruction"] for s in range(10)}
    assert len(instructions) > 5


def test_goal_index_option_and_bounds(env):
    _, info = env.reset(options={"goal_index": 3})
    assert info["goal_index"] == 3 and info["instruction"] == env.goals[3].instruction
    with pytest.raises(ValueError):
        env.reset(options={"goal_index": len(env.goals)})


def test_pages_and_paging(env):
    env.reset(options={"goal_index": 0})
    obs, r, term, trunc, info = env.step("search[quality]")
    assert info["page"] == "results" and "Page 1 (Total results: 50)" in obs
    assert "click[next >]" in info["available_actions"] and "click[< prev]" not in info["available_actions"]
    page1 = [a for a in info["available_actions"] if a.startswith("click[b0")]
    assert len(page1) == PAGE_SIZE
    seen = set(page1)
    for n in range(2, 6):
        obs, *_, info = env.step("click[next >]")
        assert f"Page {n} (Total results: 50)" in obs
        items = [a for a in info["available_actions"] if a.startswith("click[b0")]
        assert len(items) == PAGE_SIZE and not seen & set(items)
        seen |= set(items)
    assert len(seen) == 50 and "click[next >]" not in info["available_actions"]
    _, *_, info = env.step("click[< prev]")
    assert "Page 4" in env._last_obs
    item = next(a for a in info["available_actions"] if a.startswith("click[b0"))
    obs, *_, info = env.step(item)
    assert info["page"] == "item"
    assert {"click[buy now]", "click[description]", "click[features]", "click[reviews]", "click[< prev]"} <= set(
        info["available_actions"]
    )
    for detail in ("description", "features", "reviews"):
        _, *_, info = env.step(f"click[{detail}]")
        assert info["page"] == "detail"
        _, *_, info = env.step("click[< prev]")
        assert info["page"] == "item"
    _, *_, info = env.step("click[< prev]")
    assert info["page"] == "results" and "Page 4" in env._last_obs
    _, *_, info = env.step("click[back to search]")
    assert info["page"] == "search" and info["action_templates"] == ["search[...]"]


def test_option_choice_shows_in_text_rich_and_counts(small_kwargs):
    env = WebShopEnv(observation_mode="text_rich", split="test", **small_kwargs)
    gi = next(i for i in range(len(env.goals)) if env.goals[i].goal_options)
    r, actions, info = run_expert(env, gi)
    assert r == 1.0 and info["success"] and info["reward_breakdown"]["num_option_matches"] >= 1
    env.reset(options={"goal_index": gi})
    for a in actions[:-1]:
        obs, *_ = env.step(a)
    assert "[clicked button]" in obs and "[button] Buy Now [button_]" in obs


def test_html_mode_buttons_carry_actions(small_kwargs):
    env = WebShopEnv(observation_mode="html", **small_kwargs)
    obs, _ = env.reset(seed=5)
    assert 'name="query"' in obs and 'value="search[...]"' in obs
    obs, *_, info = env.step(env.expert_action())
    for a in info["available_actions"]:
        assert f'value="{a.replace(">", "&gt;").replace("<", "&lt;")}"' in obs


def test_snapshot_restore_branches(env):
    env.reset(options={"goal_index": 1})
    env.step(env.expert_action())  # search
    snap = env.snapshot()
    obs_at_snap = env._last_obs
    path = []
    while True:
        a = env.expert_action()
        path.append(a)
        obs, r, term, trunc, info = env.step(a)
        if term or trunc:
            break
    first = (obs, r)
    env.restore(snap)
    assert env.snapshot() == snap
    # a different branch, then back again and replay: same outcome
    env.step("click[next >]")
    env.restore(snap)
    assert env.snapshot().state == snap.state
    for a in path:
        obs, r, term, trunc, info = env.step(a)
    assert (obs, r) == first and term
    env.restore(snap)
    assert current_obs(env) == obs_at_snap


def current_obs(env: WebShopEnv) -> str:
    return env._observe()


def test_reward_only_at_buy_and_info_breakdown(env):
    r, actions, info = run_expert(env, 2)
    assert actions[-1] == "click[buy now]"
    bd = info["reward_breakdown"]
    assert set(bd) >= {
        "reward",
        "r_type",
        "r_att",
        "r_option",
        "r_price",
        "title_score",
        "attribute_hits",
        "option_hits",
    }
    assert bd["reward"] == r


def test_shared_resources(small_kwargs):
    envs_ = [WebShopEnv(**small_kwargs) for _ in range(8)]
    assert all(e.catalog is envs_[0].catalog and e.index is envs_[0].index for e in envs_)


def test_ansi_render_and_bad_render_mode(small_kwargs):
    env = WebShopEnv(render_mode="ansi", **small_kwargs)
    obs, _ = env.reset(seed=0)
    assert env.render() == obs
    with pytest.raises(ValueError):
        WebShopEnv(render_mode="human", **small_kwargs)
