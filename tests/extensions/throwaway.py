"""A throwaway env, brain, memory and society scenario, each declared by its decorator in this one module.

Nothing else in the repository names them: importing this module is all it takes for `agents.run`,
`agents.collect` and `societies.run` to use them (tests/extensions/test_one_module.py).
"""

from __future__ import annotations

import re
from typing import Any

import gymnasium as gym
import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from agents.brains.base import BrainOutput, CandidateScore, Message, SyncBrainMixin, approx_tokens
from agents.brains.registry import register_brain
from agents.memory.base import MemoryItem, MemoryStateError, TokenCounter
from agents.memory.registry import register_memory
from envs.contract import action_problem, episode_over_message, excerpt, invalid_action_message
from envs.registry import register_env
from envs.serving import ClientKwargs, ServerEntry
from envs.spaces import FreeText
from societies.env import Moves, Scenario, SocietyEnv
from societies.personas import Persona
from societies.scenarios import register_scenario

ACTIONS = ["inc[1]", "stop[]"]
TALLY_STEPS = 7


class TallyKwargs(ClientKwargs):
    """What an env-server client may set: the largest target."""

    max_target: int = Field(3, ge=1, le=5)


@register_env("tally", max_episode_steps=TALLY_STEPS, server=ServerEntry(TallyKwargs))
class TallyEnv(gym.Env):
    """Count up to a seeded target with `inc[1]`, then `stop[]`; reward 1 if the count is right."""

    def __init__(self, max_target: int = 3) -> None:
        self.max_target = max_target
        self.observation_space, self.action_space = FreeText(1024), FreeText(256)
        self.count = self.target = 0
        self.done = False

    def _info(self, error: str | None = None) -> dict[str, Any]:
        info: dict[str, Any] = {
            "instruction": f"Count to {self.target}, then stop.",
            "available_actions": [] if self.done else list(ACTIONS),
            "action_templates": [],
        }
        return {**info, "error": error} if error else info

    def _obs(self) -> str:
        return f"The tally shows {self.count} of {self.target}."

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """A target from the seed; the tally at 0."""
        super().reset(seed=seed)
        self.target = int(self.np_random.integers(1, self.max_target + 1))
        self.count, self.done = 0, False
        return self._obs(), self._info()

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """`inc[1]` adds one, `stop[]` ends; anything else is refused with the state unchanged."""
        if self.done:
            return self._obs(), 0.0, True, False, self._info(episode_over_message("the tally was stopped"))
        problem = action_problem(action)
        if problem is None and action == "inc[1]":
            self.count += 1
            return self._obs(), 0.0, False, False, self._info()
        if problem is None and action == "stop[]":
            self.done = True
            return self._obs(), float(self.count == self.target), True, False, self._info()
        msg = invalid_action_message(problem or f"{excerpt(action)} is not an action", ACTIONS)
        return msg, 0.0, False, False, self._info(msg)

    def expert_action(self) -> str:
        """Count to the target, then stop."""
        return "inc[1]" if self.count < self.target else "stop[]"


class TallyBrainOptions(BaseModel):
    """The brain's options: whether it stops one short (a wrong answer on purpose)."""

    model_config = ConfigDict(extra="forbid")
    short_by: int = 0


@register_brain("tally_reader", options=TallyBrainOptions)
class TallyReader(SyncBrainMixin):
    """Reads `N of T` off the last observation: `inc[1]` while N + short_by < T, then `stop[]`."""

    name = "tally_reader"
    can_write_text = False

    def __init__(self, short_by: int = 0) -> None:
        self.short_by, self.model = short_by, f"tally_reader(short_by={short_by})"

    def count_tokens(self, text: str) -> int:
        """Approximate: this brain has no tokenizer."""
        return approx_tokens(text)

    def choose(
        self,
        messages: list[Message],
        candidates: list[str],
        *,
        temperature: float = 0.0,
        prefix: str = "",
        seed: int | None = None,
    ) -> BrainOutput:
        """The action the last tally calls for."""
        found = re.findall(r"tally shows (\d+) of (\d+)", " ".join(m["content"] for m in messages))
        n, t = map(int, found[-1]) if found else (0, 1)
        pick = "inc[1]" if n + self.short_by < t and "inc[1]" in candidates else candidates[-1]
        scores = [CandidateScore(c, 0.0 if c == pick else -1.0, 1, float(c == pick)) for c in candidates]
        return BrainOutput(text=prefix + pick, candidates=scores, model=self.model)

    def complete(self, messages: list[Message], **_: Any) -> BrainOutput:
        """Free text is not this brain's job."""
        return BrainOutput(text="Action: stop[]", model=self.model)


@register_memory("tally_log", carries_state=True)
class TallyLog:
    """Counts the episodes it has seen, across episodes (so a run carries its state)."""

    name = "tally_log"

    def __init__(self, keep: int = 3) -> None:
        self.keep, self.episodes, self.last_injected = keep, 0, ""

    def add(self, item: MemoryItem) -> None:
        """Nothing per step."""

    def retrieve(self, query: str, k: int = 5) -> list[MemoryItem]:
        """One note: how many episodes came before."""
        return [MemoryItem(f"episodes before this one: {self.episodes}", kind="note")][:k]

    def build_context(self, query: str, budget_tokens: int, count_tokens: TokenCounter) -> str:
        """The note, if it fits."""
        note = self.retrieve(query)[0].text
        self.last_injected = note if count_tokens(note) <= budget_tokens else ""
        return self.last_injected

    def on_episode_start(self, instruction: str) -> None:
        """Nothing to do."""

    def on_episode_end(self, outcome: dict[str, Any]) -> None:
        """One more episode seen."""
        self.episodes += 1

    def save_state(self) -> dict[str, Any]:
        """The count, JSON-able."""
        return {"kind": "tally_log", "version": 1, "episodes": self.episodes}

    def load_state(self, state: dict[str, Any]) -> None:
        """Restore a count saved by `save_state`."""
        if not isinstance(state, dict) or state.get("kind") != "tally_log":
            raise MemoryStateError(f"tally_log: not a tally_log state: {str(state)[:80]}")
        self.episodes = int(state["episodes"])

    def clear(self) -> None:
        """Forget the count."""
        self.episodes = 0


class VoteParams(BaseModel):
    """The vote's parameter: each agent's chance of voting yes in a round."""

    model_config = ConfigDict(extra="forbid")
    p_yes: float = Field(0.5, ge=0, le=1)


class VoteScenario(Scenario):
    """Every round each active agent votes yes or no; the metric is the share of yes votes."""

    name = "vote"
    actions = ("yes", "no")

    def reset(self, rng: np.random.Generator) -> None:
        """No votes yet."""
        self.votes = np.zeros(self.n, dtype=np.int8)

    def apply(self, moves: Moves, rng: np.random.Generator) -> np.ndarray:
        """Record the votes; no rewards."""
        self.votes[moves.idx] = moves.code
        self.round += 1
        return np.zeros(self.n)

    def instruction(self, i: int) -> str:
        return "Vote yes or no."

    def observe(self, i: int) -> str:
        return f"Round {self.round}: {int((self.votes == 1).sum())} voted yes."

    def metrics(self) -> dict[str, float]:
        return {"yes_share": float((self.votes == 1).mean())}

    def node_state(self) -> np.ndarray:
        return (self.votes == 1).astype(np.float64)


class VoteRule:
    """Yes with probability p_yes."""

    name = "vote_rule"

    def __init__(self, p_yes: float) -> None:
        self.p_yes = p_yes

    def decide(self, sc: Scenario, idx: np.ndarray, rng: np.random.Generator) -> Moves:
        code = np.where(rng.random(idx.size) < self.p_yes, 1, 2).astype(np.int8)
        return Moves(idx.astype(np.int64), code)


@register_scenario("vote", params=VoteParams)
def build_vote(cfg: Any, params: VoteParams, personas: list[Persona] | None) -> tuple[SocietyEnv, VoteRule]:
    """A vote among `agents` agents for `rounds` rounds."""
    return SocietyEnv(VoteScenario(cfg.agents, personas=personas), cfg.rounds), VoteRule(params.p_yes)
