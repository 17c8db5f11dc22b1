"""BabyAI: AgentGym's task index, the view in words, primitives and `go to`, BabyAIBot as the expert.

The contract itself runs for every registered env in tests/test_contract.py; here the env's own
rules. The bot is compared with minigrid's BabyAIBot driving the raw level: same rewards.
"""

from __future__ import annotations

import gymnasium as gym
import minigrid  # noqa: F401  (registers the BabyAI levels)
import pytest
from minigrid.utils.baby_ai_bot import BabyAIBot

import envs
from envs.babyai.env import BabyAIEnv
from envs.babyai.levels import AGENTGYM_LEVELS, episode_of, eval_index
from envs.babyai.view import visible
from envs.contract import HasExpert, Snapshottable, check_text_env

UNSOLVED_BY_THE_BOT = {"BabyAI-OpenDoorsOrderN4Debug-v0", "BabyAI-PutNextS7N4Carrying-v0", "BabyAI-KeyInBox-v0"}


@pytest.fixture(scope="module")
def env() -> BabyAIEnv:
    return BabyAIEnv()


def test_registered_with_a_step_limit() -> None:
    spec = gym.spec("agentsim/BabyAI-v0")
    assert envs.ENVS["babyai"][0] == spec.id and spec.max_episode_steps == envs.MAX_EPISODE_STEPS["babyai"]


@pytest.mark.parametrize("seed", [1, 17, 45])
def test_contract_on_more_seeds(seed: int) -> None:
    check_text_env(gym.make("agentsim/BabyAI-v0"), seed=seed)


def test_task_index_is_agentgyms_data_idx(env: BabyAIEnv) -> None:
    assert len(AGENTGYM_LEVELS) == 40 and all(level in gym.registry for level in AGENTGYM_LEVELS)
    assert episode_of(83) == (AGENTGYM_LEVELS[3], 2)
    for index in (0, 7, 83):
        level, level_seed = episode_of(index)
        raw = gym.make(level).unwrapped
        raw.reset(seed=level_seed)
        obs, info = env.reset(seed=index)
        assert obs.startswith(f"Your goal: {raw.mission}\n") and info["level"] == level.removeprefix("BabyAI-")
        assert env.reset(options={"data_idx": index})[0] == obs
    with pytest.raises(ValueError, match="must be an int >= 0"):
        env.reset(options={"data_idx": -1})


def test_one_level_by_name() -> None:
    one = BabyAIEnv(level="BabyAI-GoToRedBall-v0")
    assert {one.reset(seed=s)[1]["level"] for s in range(3)} == {"GoToRedBall-v0"}
    with pytest.raises(ValueError, match="unknown BabyAI level"):
        BabyAIEnv(level="BabyAI-Nope-v0")


def test_view_words_and_actions(env: BabyAIEnv) -> None:
    obs, info = env.reset(seed=0)
    assert "There is a red ball 1 4 steps in front of you and 3 steps to your right." in obs
    assert obs.endswith("You are not carrying anything.") and "You are facing a grey wall" in obs
    assert info["available_actions"][:3] == ["turn left", "turn right", "move forward"]
    assert "go to red ball 1" in info["available_actions"] and "pick up" not in info["available_actions"]
    assert isinstance(env, Snapshottable) and isinstance(env, HasExpert)


def test_go_to_ends_facing_the_object_and_counts_once(env: BabyAIEnv) -> None:
    env.reset(seed=0)
    obs, reward, terminated, _, info = env.step("go to red ball 1")
    assert terminated and reward > 0 and info["success"] and obs.endswith("The task is completed.")
    assert info["steps"] == 1 and info["primitive_steps"] > 1


@pytest.mark.parametrize(
    "actions, says",
    [
        (["go to grey key 1", "move forward"], "you cannot move forward: a grey key is in front of you"),
        (["drop"], "you cannot drop: you are not carrying anything"),
        (["pick up"], "nothing in front of you to pick up"),
        (["toggle"], "nothing in front of you to toggle"),
        (["go to purple ball 9"], "you cannot see 'purple ball 9'; you can see: grey key 1, grey ball 1"),
        (["dance"], "'dance' is not an action"),
        (["go to grey key 1", "pick up", "pick up"], "already carrying a grey key"),
        (["go to grey key 1", "go to grey key 1"], "already facing the grey key 1"),
    ],
)
def test_no_op_actions_are_refused(env: BabyAIEnv, actions: list[str], says: str) -> None:
    env.reset(seed=0)
    for a in actions[:-1]:
        assert "error" not in env.step(a)[4], a
    before = env.state_key()
    obs, reward, terminated, truncated, info = env.step(actions[-1])
    assert says in info["error"] and obs == info["error"] and (reward, terminated, truncated) == (0.0, False, False)
    assert env.state_key() == before


def test_a_locked_door_needs_its_key() -> None:
    env = BabyAIEnv(level="BabyAI-UnlockLocal-v0")
    env.reset(seed=6)
    door = next(a for a in env.available_actions() if a.startswith("go to") and "locked door" in a)
    env.step(door)
    info = env.step("toggle")[4]
    assert "the red locked door needs a red key to open" in info["error"]


def _raw_bot_reward(level: str, level_seed: int) -> float:
    game = gym.make(level).unwrapped
    game.reset(seed=level_seed)
    bot = BabyAIBot(game)
    for _ in range(game.max_steps):
        _, reward, terminated, truncated, _ = game.step(bot.replan())
        if terminated or truncated:
            return float(reward)
    return 0.0


def test_the_expert_is_babyaibot_step_for_step(env: BabyAIEnv) -> None:
    """On AgentGym's 40 levels (seed 0) the expert through our words earns what the bot earns on the raw level."""
    for index in range(40):
        level, level_seed = episode_of(index)
        if level in UNSOLVED_BY_THE_BOT:
            continue
        env.reset(seed=index)
        reward = 0.0
        for _ in range(envs.MAX_EPISODE_STEPS["babyai"]):
            _, reward, terminated, truncated, info = env.step(env.expert_action())
            assert "error" not in info, (level, info["error"])
            if terminated or truncated:
                break
        assert reward > 0 and reward == pytest.approx(_raw_bot_reward(level, level_seed)), level


def test_the_expert_recovers_after_the_agent_wanders(env: BabyAIEnv) -> None:
    env.reset(seed=5)  # GoToObjMazeS7: rooms and doors
    for a in ("turn left", "turn left", "move forward", "turn right"):
        env.step(a)
    for _ in range(200):
        _, reward, terminated, truncated, info = env.step(env.expert_action())
        if terminated or truncated:
            break
    assert info["success"] and not info["expert_lost"]


def test_snapshot_restore_replays_the_expert(env: BabyAIEnv) -> None:
    env.reset(seed=11)  # Open-v0
    for _ in range(3):
        env.step(env.expert_action())
    snap = env.snapshot()
    first = [env.step(env.expert_action())[:4] for _ in range(6)]
    env.reset(seed=2)
    env.restore(snap)
    assert [env.step(env.expert_action())[:4] for _ in range(6)] == first


def test_agentgyms_object_actions() -> None:
    """pick up / toggle and go through / go through, each several primitives in one step; check lists actions."""
    env = BabyAIEnv(level="BabyAI-Open-v0")
    _, info = env.reset(seed=0)
    assert "pick up yellow key 1" in info["available_actions"]
    obs, _, _, _, info = env.step("check available actions")
    assert obs == "You can take the following actions: " + ", ".join(info["available_actions"])
    assert env.step("pick up yellow key 1")[0].endswith("You are carrying a yellow key.")
    assert "pick up" not in " ".join(env.available_actions())  # hands full
    door = env._game.grid.get(*next(s.pos for s in visible(env._game)[0] if s.name == "red closed door 1"))
    _, _, _, _, info = env.step("toggle and go through red closed door 1")
    assert "error" not in info and door.is_open and tuple(env._game.agent_pos) == tuple(door.cur_pos)
    bad = env.step("go through yellow ball 1")[4]["error"]
    assert "cannot see" in bad or "not an open door" in bad


def test_eval_split_is_90_fixed_episodes_over_every_level() -> None:
    ev = BabyAIEnv(split="eval")
    seen = [ev.reset(seed=i)[1] for i in range(90)]
    assert {(i["level"], i["level_seed"]) for i in seen} == {
        (episode_of(eval_index(k))[0].removeprefix("BabyAI-"), episode_of(eval_index(k))[1]) for k in range(90)
    }
    assert len({(i["level"], i["level_seed"]) for i in seen}) == 90 and len({i["level"] for i in seen}) == 40
    assert min(i["level_seed"] for i in seen) == 1000  # training seeds (task index < 40,000) never reach it
    assert ev.reset(seed=90)[0] == ev.reset(seed=0)[0]
    with pytest.raises(ValueError, match="unknown split"):
        BabyAIEnv(split="test")


def test_a_cycling_bot_gives_up_instead_of_hanging() -> None:
    """BabyAIBot cycles between subgoals on UnlockToUnlock seed 1001 (eval episode 68): the expert is lost, the env steps on."""
    env = gym.make("agentsim/BabyAI-v0", split="eval")
    _, info = env.reset(seed=68)
    assert info["level"] == "UnlockToUnlock-v0" and info["level_seed"] == 1001
    for _ in range(envs.MAX_EPISODE_STEPS["babyai"]):
        _, _, terminated, truncated, info = env.step(env.unwrapped.expert_action())
        if terminated or truncated:
            break
    assert truncated and info["expert_lost"] and not info.get("success")


def test_a_solved_level_is_a_success_though_its_reward_is_below_one() -> None:
    """minigrid pays 1 - 0.9 * steps / max_steps: success is the env's word (`info["success"]`), not reward >= 1,
    unless a run sets `env.success_threshold` itself."""
    from agents.brains.scripted import ScriptedBrain
    from agents.core import Agent, run_episode

    env = gym.make("agentsim/BabyAI-v0", split="eval")
    rec = run_episode(env, Agent(ScriptedBrain(), mode="choose"), seed=0)
    assert rec.outcome.terminated and 0.0 < rec.outcome.reward < 1.0 and rec.outcome.success
    strict = run_episode(env, Agent(ScriptedBrain(), mode="choose"), seed=0, success_threshold=1.0)
    assert strict.outcome.reward == rec.outcome.reward and not strict.outcome.success
    env.close()
