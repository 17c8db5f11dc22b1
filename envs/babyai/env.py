"""BabyAIEnv: minigrid's BabyAI levels in words, with BabyAIBot as the scripted expert.

Registered as `agentsim/BabyAI-v0`. Task i (the seed, or `options={"data_idx": i}`) is AgentGym's
`data_idx` i: level `i % 40` of AgentGym's level list played with minigrid seed `i // 40`
(`levels.py`); `level=` in the constructor plays one level with the seed as its minigrid seed;
`split="eval"` plays the fixed 90-episode evaluation set (seed i: its episode i % 90).
The observation describes what the agent sees (`view.py`, AgentGym's wording); the actions are
minigrid's primitives (`turn left`, `turn right`, `move forward`, `pick up`, `drop`, `toggle`)
plus AgentGym's object actions for a visible object with a visible path, several primitives in
one step (`go to <object> <n>`, `pick up <object> <n>`, `go through <open door> <n>`,
`toggle and go through <door> <n>`) and its `check available actions`. A primitive that would change nothing (walking into a wall, picking
up air) is a bad action. Reward and ending are minigrid's: `1 - 0.9 * steps / max_steps` when
the mission is done (terminated), 0 when a Debug level fails it (terminated) or the level's own
step budget runs out (truncated). The expert is minigrid's BabyAIBot, kept in step with every
primitive the agent takes so it advises from any state (DAgger style).
"""

from __future__ import annotations

import contextlib
import copy
import io
import re
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from envs.babyai.levels import AGENTGYM_LEVELS, episode_of, eval_index
from envs.babyai.serving import SERVER
from envs.babyai.view import (
    DROP,
    FORWARD,
    LEFT,
    PICKUP,
    RIGHT,
    TOGGLE,
    describe,
    grid_key,
    macro_problem,
    path_to_face,
    primitive_problem,
    visible,
)
from envs.contract import MAX_ACTION_CHARS, action_problem, episode_over_message, excerpt, invalid_action_message
from envs.registry import register_env
from envs.spaces import FreeText

MAX_OBS_CHARS = 8_192
PRIMITIVES: dict[str, int] = {
    "turn left": LEFT,
    "turn right": RIGHT,
    "move forward": FORWARD,
    "pick up": PICKUP,
    "drop": DROP,
    "toggle": TOGGLE,
}
ALIASES = {"pickup": "pick up", "forward": "move forward", "left": "turn left", "right": "turn right"}
NAMES = {v: k for k, v in PRIMITIVES.items()}
CHECK = "check available actions"  # AgentGym's informational action: lists the actions, changes nothing
_MACROS = {  # AgentGym's object actions: several primitives in one step
    verb: re.compile(verb + r" (?:the |a )?(.+)")
    for verb in ("go to", "pick up", "go through", "toggle and go through")
}


class ActionError(ValueError):
    """A bad action; the message says what was wrong."""


@dataclass
class _Episode:
    """What changes during an episode besides the minigrid game and the bot (what `snapshot` copies)."""

    level: str
    level_seed: int
    mission: str
    steps: int = 0  # agent actions taken (a `go to` counts once)
    invalid: int = 0
    reward: float = 0.0
    done: bool = False
    ending: tuple[bool, bool] = (False, False)
    suggestion: int | None = None  # the bot's advice now; None once the bot gave up
    last_obs: str = ""


class BotStuck(RuntimeError):
    """BabyAIBot replanned without end (it can cycle between subgoals on some maps, e.g. UnlockToUnlock seed 1001)."""


class _BoundedStack(list):
    """BabyAIBot's subgoal stack with a budget of pushes and pops per `replan`, so a cycling bot gives up
    instead of hanging the env (its replan loop has no bound of its own)."""

    budget = 0

    def append(self, item: Any) -> None:
        self._spend()
        super().append(item)

    def pop(self, index: Any = -1) -> Any:
        self._spend()
        return super().pop(index)

    def _spend(self) -> None:
        self.budget -= 1
        if self.budget < 0:
            raise BotStuck("BabyAIBot exceeded its replanning budget")


REPLAN_BUDGET = 2_000  # stack operations per replan; the bot's plans on AgentGym's levels need well under 100


def _quiet(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Call minigrid code that prints its level-sampling retries to stdout, without the noise."""
    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*args, **kwargs)


# step limit: primitive moves; BabyAIBot's longest plans on AgentGym's 40 levels take ~210
@register_env("babyai", id="agentsim/BabyAI-v0", max_episode_steps=256, server=SERVER)
class BabyAIEnv(gym.Env):
    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(self, *, split: str = "train", level: str | None = None, render_mode: str | None = None) -> None:
        import minigrid  # noqa: F401  (registers the BabyAI levels with gymnasium)

        if level is not None and level not in gym.registry:
            raise ValueError(f"unknown BabyAI level {level!r}; e.g. one of {list(AGENTGYM_LEVELS[:5])}")
        if split not in ("train", "eval"):
            raise ValueError(f"unknown split {split!r}; choose from ['train', 'eval']")
        if split == "eval" and level is not None:
            raise ValueError("split='eval' plays the fixed 90-episode set over AgentGym's levels; leave level unset")
        self.split = split
        self.level = level
        self.render_mode = render_mode
        self.observation_space = FreeText(MAX_OBS_CHARS)
        self.action_space = FreeText(MAX_ACTION_CHARS, min_length=1)
        self._games: dict[str, Any] = {}
        self._game: Any = None
        self._bot: Any = None
        self._ep: _Episode | None = None

    # --- episode setup ---------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        from minigrid.utils.baby_ai_bot import BabyAIBot

        options = options or {}
        index = options.get("data_idx")
        if index is None and seed is not None:
            index = eval_index(seed) if self.split == "eval" else seed
        if index is None:
            index = int(self.np_random.integers(2**31 - 1))
        if not isinstance(index, int) or index < 0:
            raise ValueError(f"the task index (seed or options['data_idx']) must be an int >= 0, got {index!r}")
        level, level_seed = (self.level, index) if self.level else episode_of(index)
        if level not in self._games:
            self._games[level] = _quiet(gym.make, level).unwrapped
        self._game = self._games[level]
        _quiet(self._game.reset, seed=level_seed)
        self._bot = BabyAIBot(self._game)
        self._bot.stack = _BoundedStack(self._bot.stack)
        mission = str(self._game.mission)
        self._ep = _Episode(level=level, level_seed=level_seed, mission=mission)
        self._ep.suggestion = self._advise(None)
        seen, _ = visible(self._game)
        self._ep.last_obs = f"Your goal: {mission}\n" + describe(self._game, seen)
        return self._ep.last_obs, self._info()

    @property
    def instruction(self) -> str:
        ep = self._require_episode()
        return (
            f"Your goal: {ep.mission}. You are in a grid world and see only ahead of you. Act with: "
            "turn left, turn right, move forward, pick up, drop, toggle (the door or box in front of you), "
            "or, for an object you can see: go to <object> <n>, pick up <object> <n>, go through <open door> <n>, "
            "toggle and go through <closed or locked door> <n> (a locked door needs its colour's key)."
        )

    # --- stepping -------------------------------------------------------------------------------
    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        ep = self._require_episode()
        if ep.done:
            info = self._info()
            how = "the mission ended" if ep.ending[0] else "the level's step budget ran out"
            info["error"] = msg = episode_over_message(how)
            return msg, 0.0, ep.ending[0], ep.ending[1], info
        try:
            moves = self._parse(action)
        except ActionError as exc:
            ep.invalid += 1
            info = self._info()
            info["error"] = msg = invalid_action_message(str(exc), info["available_actions"])
            return msg, 0.0, False, False, info
        ep.steps += 1
        if not moves:  # "check available actions"
            ep.last_obs = "You can take the following actions: " + ", ".join(self.available_actions())
            return ep.last_obs, 0.0, False, False, self._info()
        reward, terminated, truncated = 0.0, False, False
        for move in moves:
            _, r, terminated, truncated, _ = self._game.step(move)
            ep.suggestion = self._advise(move)
            reward = float(r)
            if terminated or truncated:
                break
        seen, _ = visible(self._game)
        obs = describe(self._game, seen)
        if terminated or truncated:
            ep.done, ep.ending, ep.reward = True, (bool(terminated), bool(truncated and not terminated)), reward
            obs += " The task is completed." if reward > 0 else " The task is over without success."
        ep.last_obs = obs
        return obs, reward, ep.ending[0], ep.ending[1], self._info()

    def _parse(self, action: object) -> list[int]:
        """The primitive moves `action` stands for (raises ActionError, changing nothing)."""
        problem = action_problem(action)
        if problem is not None:
            raise ActionError(problem)
        assert isinstance(action, str)
        text = " ".join(action.strip().lower().split()).rstrip(".")
        text = ALIASES.get(text, text)
        if text in PRIMITIVES:
            move = PRIMITIVES[text]
            if (why := primitive_problem(self._game, move)) is not None:
                raise ActionError(why)
            return [move]
        if text == CHECK:
            return []
        for verb, pattern in _MACROS.items():
            if m := pattern.fullmatch(text):
                return self._macro(verb, m.group(1))
        raise ActionError(f"{excerpt(action)} is not an action")

    def _macro(self, verb: str, name: str) -> list[int]:
        """The primitives of `<verb> <object> <n>` for a visible object (raises ActionError if impossible now)."""
        seen, cells = visible(self._game)
        target = next((s for s in seen if s.name == name), None)
        if target is None:
            names = ", ".join(s.name for s in seen) or "nothing"
            raise ActionError(f"you cannot see {excerpt(name)}; you can see: {names}")
        if (why := macro_problem(self._game, verb, target.name)) is not None:
            raise ActionError(why)
        path = path_to_face(self._game, target.pos, cells)
        if path is None:
            raise ActionError(f"there is no path you can see to the {target.name}")
        if verb == "go to":
            if not path:
                raise ActionError(f"you are already facing the {target.name}")
            return path
        return path + {"pick up": [PICKUP], "go through": [FORWARD], "toggle and go through": [TOGGLE, FORWARD]}[verb]

    def _advise(self, taken: int | None) -> int | None:
        """Tell the bot what was done (None: its own advice) and take its next advice; None once it gives up."""
        ep = self._require_episode()
        if taken is not None and ep.suggestion is None:
            return None
        self._bot.stack.budget = REPLAN_BUDGET
        try:
            return int(self._bot.replan(None if taken == ep.suggestion else taken))
        except (
            Exception
        ):  # BabyAIBot cannot solve some levels (KeyInBox, PutNext...Carrying) or recover from all states
            return None

    # --- actions, expert -----------------------------------------------------------------------------
    def available_actions(self) -> list[str]:
        """Primitives that would change something, then `go to` each visible object with a visible path."""
        ep = self._require_episode()
        if ep.done:
            return []
        actions = [name for name, move in PRIMITIVES.items() if primitive_problem(self._game, move) is None]
        seen, cells = visible(self._game)
        reachable = [s for s in seen if path_to_face(self._game, s.pos, cells) is not None]
        for verb in _MACROS:
            actions += [
                f"{verb} {s.name}"
                for s in reachable
                if macro_problem(self._game, verb, s.name) is None
                and not (verb == "go to" and path_to_face(self._game, s.pos, cells) == [])
            ]
        return actions

    def expert_action(self) -> str:
        """BabyAIBot's advice now as an action; once the bot gave up, the first available action."""
        ep = self._require_episode()
        if ep.suggestion is not None and ep.suggestion in NAMES:
            name = NAMES[ep.suggestion]
            if primitive_problem(self._game, ep.suggestion) is None:
                return name
        actions = self.available_actions()
        return actions[0] if actions else "turn left"

    def state_key(self) -> tuple[Any, ...]:
        """A hashable key equal for equal game states (for grouping states across rollouts)."""
        ep = self._require_episode()
        return (ep.level, ep.level_seed, ep.done, grid_key(self._game))

    # --- info, snapshot, render ----------------------------------------------------------------------
    def _info(self) -> dict[str, Any]:
        ep = self._require_episode()
        info: dict[str, Any] = {
            "instruction": self.instruction,
            "available_actions": self.available_actions(),
            "action_templates": [],
            "level": ep.level.removeprefix("BabyAI-"),
            "level_seed": ep.level_seed,
            "steps": ep.steps,
            "primitive_steps": int(self._game.step_count),
            "invalid_actions": ep.invalid,
            "expert_lost": ep.suggestion is None,
        }
        if ep.done:
            info["success"] = ep.reward > 0
        return info

    def snapshot(self) -> dict[str, Any]:
        ep = self._require_episode()
        game, bot, ep_copy = copy.deepcopy((self._game, self._bot, ep))  # one deepcopy: the bot keeps its game
        return {"game": game, "bot": bot, "episode": ep_copy}

    def restore(self, snapshot: dict[str, Any]) -> None:
        self._game, self._bot, self._ep = copy.deepcopy((snapshot["game"], snapshot["bot"], snapshot["episode"]))

    def render(self) -> str | None:
        return self._ep.last_obs if self.render_mode == "ansi" and self._ep else None

    def _require_episode(self) -> _Episode:
        if self._ep is None or self._game is None:
            raise RuntimeError("call reset() first")
        return self._ep
