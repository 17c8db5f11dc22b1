"""EnvGroup: N copies reset on one task, stepped together, each step's info keyed by a hashable state key."""

from __future__ import annotations

import pytest

from envs.batched import EnvGroup, state_key
from tests.toy_env import ENV_ID as CORRIDOR_ID


def test_copies_start_equal_split_on_different_actions_and_meet_again() -> None:
    with EnvGroup("textcraft", 3) as group:
        starts = group.reset(seed=0, options={"goal": "crafting table"})
        assert len({hash(info["state_key"]) for _, info in starts}) == 1 and len(group.groups()) == 1
        steps = group.step(["get 1 oak logs", "get 2 oak logs", "inventory"])
        keys = [s[4]["state_key"] for s in steps if s is not None]
        assert keys[0] != keys[1] and keys[2] == starts[0][1]["state_key"]  # inventory changes nothing
        group.step(["get 1 oak logs", None, "get 2 oak logs"])  # copy 0 and 2 now hold 2 logs, reached differently
        assert sorted(group.groups().values()) == [[0, 1, 2]]
        out = group.step(["craft 4 oak planks using 1 oak logs", None, None])
        assert out[1] is None and out[2] is None and sorted(group.groups().values()) == [[0], [1, 2]]


def test_babyai_turning_around_returns_to_the_start_key() -> None:
    with EnvGroup("babyai", 2) as group:
        (_, first), _ = group.reset(seed=0)
        group.step(["turn left", "turn right"])
        assert group.keys[0] != group.keys[1]
        group.step(["turn right", "turn left"])
        assert group.keys[0] == group.keys[1] == first["state_key"]


def test_a_group_plays_to_the_end_and_ended_copies_are_refused() -> None:
    with EnvGroup("textcraft", 2) as group:
        group.reset(seed=4)
        while not group.all_done:
            acts = [None if done else env.unwrapped.expert_action() for env, done in zip(group.envs, group.done)]
            group.step(acts)
        again = group.step(["inventory", None])[0]
        assert again is not None and "episode is over" in again[4]["error"] and again[2] is True


def test_envs_without_a_state_key_use_their_snapshot() -> None:
    with EnvGroup(CORRIDOR_ID, 2) as group:
        (_, a), (_, b) = group.reset(seed=1)
        assert a["state_key"][0] == "snapshot" and a["state_key"] == b["state_key"]
        env = group.envs[0]
        assert state_key(env, "x", {}) == a["state_key"]


def test_bad_arguments_say_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="at least one copy"):
        EnvGroup("textcraft", 0)
    with EnvGroup("textcraft", 2) as group:
        group.reset(seed=0)
        with pytest.raises(ValueError, match=r"one action per copy \(2\), got 1"):
            group.step(["inventory"])
