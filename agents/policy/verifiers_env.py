"""Any registered text env as a verifiers environment, so prime-rl-style trainers load it by name (docs/adapters.md).

verifiers (>= 0.3.1, < 0.4: its classic stack, `import verifiers as vf`) finds an environment by importing a
module and calling its `load_environment(**args)`; this module is one for every env registered here:

    import verifiers as vf
    env = vf.load_environment("agents.policy.verifiers_env", env="textcraft", num_examples=64)

It is a `vf.MultiTurnEnv`: each dataset row is one seed; a rollout resets a fresh copy of the Gymnasium env
with that seed (the prompt is the task and the first observation, as reset gives them), each model turn is
parsed for one action (a ReAct `Action:` line, or a bare action; `agents.action.parse_react`) and stepped,
and `env_response` answers with the next observation, the env's error for a refused action, and the actions
allowed now. The episode ends where the env ends it (terminated, or its `TimeLimit`): the last observation
is the final env response. The rubric's reward is the episode's return (the sum of the env's rewards);
`success` (the episode ended with a positive return) and the env-step count are metrics. Against
llama-cpp-python's server, roll out with `agents.policy.llama_cpp_chat_client.LlamaCppChatClient`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import verifiers as vf
from datasets import Dataset

import envs  # noqa: F401  (registers the project's envs and installed plugins)
from agents.action import REACT_FORMAT, parse_react
from envs.registry import env_id as resolve_env_id

STATE_KEY = "agentsim"  # the rollout state's entry holding the episode's bookkeeping
MAX_LISTED = 30  # actions listed in a turn's message (WebShop pages can list many more)
SYSTEM_PROMPT = (
    "You act in a text environment. Each turn you see an observation and the actions allowed now. " + REACT_FORMAT
)


def episode_return(state: vf.State) -> float:
    """The rubric's reward: the sum of the env's rewards over the episode."""
    return float(state.get(STATE_KEY, {}).get("return", 0.0))


def success(state: vf.State) -> float:
    """1.0 when the episode ended (not cut off) with a positive return."""
    book = state.get(STATE_KEY, {})
    return float(bool(book.get("terminated")) and book.get("return", 0.0) > 0)


def env_steps(state: vf.State) -> float:
    """Actions the env accepted or refused (turns whose reply had no action are not env steps)."""
    return float(state.get(STATE_KEY, {}).get("steps", 0))


def turn_text(observation: str, info: Mapping[str, Any], first: bool = False) -> str:
    """What the model reads each turn: the task (first turn), the observation, the env's error, the actions."""
    parts = []
    instruction = str(info.get("instruction") or "")
    if first and instruction and instruction not in observation:
        parts.append(f"Task: {instruction}")
    if info.get("error"):
        parts.append(f"Your action was refused: {info['error']}")
    parts.append(f"Observation:\n{observation}")
    actions = list(info.get("available_actions") or [])
    templates = list(info.get("action_templates") or [])
    if actions or templates:
        shown = templates + actions[:MAX_LISTED]
        more = f" (and {len(actions) - MAX_LISTED} more)" if len(actions) > MAX_LISTED else ""
        parts.append("Allowed actions: " + ", ".join(shown) + more)
    return "\n\n".join(parts)


def _text(message: Any) -> str:
    """A message's text (a verifiers message or a plain dict; a string or a list of content parts)."""
    content = message.get("content") if isinstance(message, Mapping) else getattr(message, "content", None)
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(str(getattr(p, "text", None) or (p.get("text", "") if isinstance(p, dict) else "")) for p in content)


@dataclass
class Live:
    """A rollout's env and the info of its last reset or step (the actions allowed now)."""

    env: gym.Env
    info: dict[str, Any] = field(default_factory=dict)


class TextEnvironment(vf.MultiTurnEnv):
    """A registered Gymnasium text env behind verifiers' multi-turn protocol (one env copy per rollout)."""

    def __init__(self, gym_id: str, env_kwargs: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.gym_id, self.env_kwargs = gym_id, dict(env_kwargs or {})
        self._live: dict[str, Live] = {}  # trajectory id -> its env, closed at the rollout's cleanup

    def make(self) -> gym.Env:
        return gym.make(self.gym_id, **self.env_kwargs)

    async def setup_state(self, state: vf.State) -> vf.State:
        seed = int(state["info"]["seed"])
        live = Live(await asyncio.to_thread(self.make))
        self._live[state["trajectory_id"]] = live
        _, live.info = await asyncio.to_thread(live.env.reset, seed=seed)
        state[STATE_KEY] = {"seed": seed, "return": 0.0, "steps": 0, "terminated": False, "truncated": False}
        return state

    async def env_response(self, messages: vf.Messages, state: vf.State, **kwargs: Any) -> vf.Messages:
        live = self._live[state["trajectory_id"]]
        book = state[STATE_KEY]
        reply = _text(messages[-1]) if messages else ""
        parsed = parse_react(reply, live.info.get("available_actions"), live.info.get("action_templates"))
        if not parsed.ok:  # no env step: the model is told what form an action takes
            return [{"role": "user", "content": str(parsed.error)}]
        obs, reward, terminated, truncated, info = await asyncio.to_thread(live.env.step, parsed.action)
        live.info = info
        book["return"] += float(reward)
        book["steps"] += 1
        book["terminated"], book["truncated"] = bool(terminated), bool(truncated)
        message = [{"role": "user", "content": turn_text(str(obs), info)}]
        if terminated or truncated:
            state["final_env_response"] = message
        return message

    @vf.cleanup
    async def close_env(self, state: vf.State) -> None:
        live = self._live.pop(state.get("trajectory_id", ""), None)
        if live is not None:
            await asyncio.to_thread(live.env.close)


def seed_rows(gym_id: str, env_kwargs: Mapping[str, Any], seeds: list[int], system_prompt: str) -> Dataset:
    """One row per seed: the prompt is the system turn and the task with the first observation of that seed."""
    env = gym.make(gym_id, **env_kwargs)
    prompts, infos = [], []
    try:
        for seed in seeds:
            obs, info = env.reset(seed=seed)
            user = turn_text(str(obs), info, first=True)
            prompts.append([{"role": "system", "content": system_prompt}, {"role": "user", "content": user}])
            infos.append({"seed": seed})
    finally:
        env.close()
    return Dataset.from_dict({"prompt": prompts, "answer": [""] * len(seeds), "info": infos})


def load_environment(
    env: str = "textcraft",
    num_examples: int = 32,
    seed: int = 0,
    env_kwargs: Mapping[str, Any] | None = None,
    max_turns: int = -1,
    system_prompt: str = SYSTEM_PROMPT,
    **kwargs: Any,
) -> vf.Environment:
    """verifiers' entry: the env registered as `env` (a short name such as `textcraft`, `babyai`, `webshop`,
    `faulttree`, a plugin's, or a Gymnasium id) over seeds `seed .. seed + num_examples - 1`.

    `max_turns` bounds model turns (those without a parsable action included); -1 leaves the bound to
    the env's own step limit. Other keyword arguments go to `vf.MultiTurnEnv` (e.g. `timeout_seconds`)."""
    if not 1 <= num_examples <= 1_000_000:
        raise ValueError(f"num_examples={num_examples}: give 1 to 1,000,000 seeds")
    if seed < 0:
        raise ValueError(f"seed={seed}: seeds are non-negative (gymnasium seeds numpy)")
    gym_id = resolve_env_id(env)
    try:
        gym.spec(gym_id)
    except gym.error.Error:
        known = ", ".join(sorted(envs.ENVS))
        raise ValueError(f"env={env!r} is not a registered env; registered: {known} (or a Gymnasium id)") from None
    rows = seed_rows(gym_id, env_kwargs or {}, list(range(seed, seed + num_examples)), system_prompt)
    rubric = vf.Rubric(funcs=[episode_return], weights=[1.0])
    rubric.add_metric(success)
    rubric.add_metric(env_steps)
    return TextEnvironment(
        gym_id, env_kwargs, dataset=rows, rubric=rubric, max_turns=max_turns, env_args={"env": env}, **kwargs
    )
