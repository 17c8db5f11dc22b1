"""The multi-agent text env: PettingZoo's Parallel API over a vectorised scenario core.

Two layers, so one env serves both LLM agents and 100k rule agents:

- a `Scenario` holds the society's state in numpy arrays and implements the model's dynamics
  on arrays of moves (`apply`), plus the text an agent sees (`observe`, `instruction`,
  `available`, `templates`) and how its text action maps to a move (`parse`);
- `SocietyEnv` is the `pettingzoo.ParallelEnv`: `reset(seed, options) -> (obs, infos)`,
  `step(actions) -> (obs, rewards, terminations, truncations, infos)`, dicts keyed by agent id.
  Each agent's info keeps the single-agent contract (`envs/contract.py`): `instruction`,
  `available_actions`, `action_templates`, and on a bad action `error` (never raised; that
  agent makes no move this round). `step_moves` is the fast path for vectorised rule brains:
  the same dynamics without rendering any text.

Rounds: at the end of `reset` and of every step the scenario prepares the next round
(`begin_round`: partners, exposures, the active agents under sparse activation); observations
describe that decision. Agents outside the active set see only `wait`; agents left out of an
actions dict make no move (so a runner asks only the active ones). PettingZoo has no TimeLimit,
so `max_rounds` truncates here (the one place a step limit lives in a society); the scenario's
own end (cascade over, tournament played) terminates. Everyone ends together, after which
`agents` is empty and any further step is refused with an error per agent. Same seed + same
actions = same run.
"""

from __future__ import annotations

import copy
import logging
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pettingzoo import ParallelEnv

from envs.contract import MAX_ACTION_CHARS, SLOT, action_problem, episode_over_message, excerpt, invalid_action_message
from envs.spaces import FreeText
from societies.personas import Persona, activity_array

log = logging.getLogger(__name__)

WAIT = "wait"  # the one action of an agent that is not active this round
OBS_CHARS = 8192  # an observation's cap (text lists are truncated well before it)
NOOP = 0  # move code 0 is "no move" in every scenario


def agent_id(i: int) -> str:
    """The agent id PettingZoo dicts use for agent index i."""
    return f"agent_{i}"


@dataclass
class Moves:
    """A batch of moves for one round: agent indices, an integer code each, and an optional value."""

    idx: np.ndarray  # int64 agent indices, unique
    code: np.ndarray  # int8 move codes (meaning per scenario; 0 = no move)
    value: np.ndarray | None = None  # float64 argument per move (an opinion), or None

    @staticmethod
    def empty() -> Moves:
        return Moves(np.empty(0, np.int64), np.empty(0, np.int8), np.empty(0, np.float64))

    @staticmethod
    def concat(parts: list[Moves]) -> Moves:
        parts = [p for p in parts if p.idx.size]
        if not parts:
            return Moves.empty()
        values = [p.value if p.value is not None else np.full(p.idx.size, np.nan) for p in parts]
        return Moves(
            np.concatenate([p.idx for p in parts]), np.concatenate([p.code for p in parts]), np.concatenate(values)
        )

    def values(self) -> np.ndarray:
        return self.value if self.value is not None else np.full(self.idx.size, np.nan)


@dataclass
class RoundResult:
    """What one round did, as arrays (the fast path's answer)."""

    round: int
    rewards: np.ndarray  # float64 per agent (all n)
    moved: Moves  # the moves that were applied
    terminated: bool
    truncated: bool
    errors: dict[int, str] = field(default_factory=dict)  # agent index -> error, from the text path


class Scenario(ABC):
    """A social model's state and dynamics on arrays; subclasses are the scenarios."""

    name: str = "scenario"
    actions: tuple[str, ...] = ()  # move code k (k >= 1) is written actions[k - 1]
    extra_moves: tuple[str, ...] = ()  # names of the codes after `actions` (template moves, e.g. "opinion")

    def __init__(self, n: int, personas: list[Persona] | None = None) -> None:
        if n < 2:
            raise ValueError(f"a society needs at least 2 agents, got {n}")
        self.n = n
        self.personas = personas
        self.activity = activity_array(personas, n)
        self.round = 0
        self.active = np.arange(n)  # indices deciding this round (sorted)
        self.is_active = np.ones(n, dtype=bool)

    # -- lifecycle --------------------------------------------------------------------------
    @abstractmethod
    def reset(self, rng: np.random.Generator) -> None:
        """Build the initial state (round 0)."""

    def begin_round(self, rng: np.random.Generator) -> None:
        """Prepare the next decision: who is active (sparse activation by persona activity)."""
        if np.all(self.activity >= 1.0):
            self.active = np.arange(self.n)
        else:
            self.active = np.flatnonzero(rng.random(self.n) < self.activity)
        self.is_active = np.zeros(self.n, dtype=bool)
        self.is_active[self.active] = True

    @abstractmethod
    def apply(self, moves: Moves, rng: np.random.Generator) -> np.ndarray:
        """Apply one round's moves (valid ones only, by active agents); return each agent's reward."""

    def done(self) -> bool:
        """The scenario's own end (terminated), checked after `begin_round`."""
        return False

    # -- text -------------------------------------------------------------------------------
    def persona(self, i: int) -> str:
        return self.personas[i].describe() if self.personas else f"You are {agent_id(i)}."

    @abstractmethod
    def instruction(self, i: int) -> str:
        """Agent i's goal in words."""

    @abstractmethod
    def observe(self, i: int) -> str:
        """What agent i sees now (the current round's decision)."""

    def available(self, i: int) -> list[str]:
        """Agent i's complete valid actions now."""
        return list(self.actions) if self.is_active[i] else [WAIT]

    def templates(self, i: int) -> list[str]:
        """Agent i's free-text action forms now (one `...` slot each)."""
        return []

    def choices(self, i: int) -> list[str]:
        """Concrete actions standing in for agent i's templates when seats choose by rank (`SocietyEnv.offer_choices`):
        a discrete set of values for a free slot (`opinion[0.0]` .. `opinion[1.0]`). Empty: the templates stay free.

        A small model ranks a listed number reliably but cannot be trusted to write one (it copies the example)."""
        return []

    def parse(self, i: int, text: str) -> tuple[int, float] | str:
        """Agent i's text action as (code, value), or what is wrong with it."""
        act = text.strip()
        if not self.is_active[i]:
            if act == WAIT:
                return NOOP, np.nan
            return f"agent_{i} is not active this round; only {WAIT!r} is allowed"
        if act in self.actions:
            return self.actions.index(act) + 1, np.nan
        return f"unknown action {excerpt(text)}"

    def move_text(self, i: int, code: int, value: float) -> str:
        """The text action for a move (how a rule brain's choice is written in trajectories)."""
        return WAIT if code == NOOP else self.actions[code - 1]

    def move_names(self) -> list[str]:
        """Name of every move code, code 0 first (the event log stores these)."""
        return [WAIT, *self.actions, *self.extra_moves]

    # -- measurement -------------------------------------------------------------------------
    @abstractmethod
    def metrics(self) -> dict[str, float]:
        """This round's metrics (time series points)."""

    state_name = "state"  # what `node_state` means, for legends (the event log's `states` table keeps it per round)

    @abstractmethod
    def node_state(self) -> np.ndarray:
        """One number per agent for colouring the network (opinion, adopted, cooperation rate)."""

    def agent_outcome(self, i: int) -> tuple[float, bool]:
        """(final reward, success) of agent i's episode in its trajectory record."""
        return 0.0, False

    def report(self) -> dict[str, Any]:
        """What the run did in words, for `report.json` (e.g. the town's utterances); empty = no report."""
        return {}


class SocietyEnv(ParallelEnv):
    """A scenario as a PettingZoo Parallel env with text observations and actions."""

    metadata = {"name": "society_v0", "render_modes": [], "is_parallelizable": True}

    def __init__(self, scenario: Scenario, max_rounds: int = 50, offer_choices: bool = False) -> None:
        """`offer_choices`: list each agent's `Scenario.choices` among its `available_actions` and drop the templates
        they cover, so a ranking brain picks a value instead of writing one (the parser still takes any value)."""
        if max_rounds < 1:
            raise ValueError(f"max_rounds must be >= 1, got {max_rounds}")
        self.scenario = scenario
        self.max_rounds = max_rounds
        self.offer_choices = offer_choices
        self.possible_agents = [agent_id(i) for i in range(scenario.n)]
        self.agents: list[str] = []
        self.render_mode = None
        self._index = {a: i for i, a in enumerate(self.possible_agents)}
        self._obs_space = FreeText(OBS_CHARS)
        self._act_space = FreeText(MAX_ACTION_CHARS)
        self._rng = np.random.default_rng()
        self._ended: tuple[bool, bool] | None = None
        self._last_live: list[str] = []
        self.metadata = {**self.metadata, "name": f"society_{scenario.name}_v0"}

    # -- spaces (one object per env, as PettingZoo wants the same object every call) -----------
    def observation_space(self, agent: str) -> FreeText:
        return self._obs_space

    def action_space(self, agent: str) -> FreeText:
        return self._act_space

    @property
    def round(self) -> int:
        return self.scenario.round

    @property
    def np_random(self) -> np.random.Generator:
        return self._rng

    def index(self, agent: str) -> int:
        return self._index[agent]

    # -- text views --------------------------------------------------------------------------
    def observe(self, agent: str) -> str:
        return self.scenario.observe(self._index[agent])

    def info(self, agent: str, error: str | None = None) -> dict[str, Any]:
        """The contract's info for one agent."""
        i = self._index[agent]
        sc = self.scenario
        available, templates = sc.available(i), sc.templates(i)
        offered = sc.choices(i) if self.offer_choices and templates else []
        if offered:
            available = available + offered
            templates = [t for t in templates if not any(c.startswith(t.split(SLOT)[0]) for c in offered)]
        info: dict[str, Any] = {
            "instruction": sc.instruction(i),
            "available_actions": available,
            "action_templates": templates,
            "round": sc.round,
            "active": bool(sc.is_active[i]),
        }
        if error is not None:
            info["error"] = error
        return info

    # -- Parallel API ------------------------------------------------------------------------
    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
        """Start a society; same seed, same society. `options` is accepted and unused."""
        self.start(seed)
        return {a: self.observe(a) for a in self.agents}, {a: self.info(a) for a in self.agents}

    def start(self, seed: int | None = None) -> None:
        """`reset` without rendering any text (the fast path's reset: 100k observations cost more than a round)."""
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.scenario.round = 0
        self.scenario.reset(self._rng)
        self.scenario.begin_round(self._rng)
        self._ended = None
        self.agents = list(self.possible_agents)

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        """One round from text actions (missing agents make no move; bad actions get an `error`)."""
        if self._ended is not None:
            return self._refuse(actions)
        moves, errors = self.parse_actions(actions)
        result = self._advance(moves, errors)
        return self._answer(result)

    def step_moves(self, moves: Moves) -> RoundResult:
        """One round from a vectorised brain's moves: the same dynamics, no text (for scale)."""
        if self._ended is not None:
            raise RuntimeError(episode_over_message("the society's run ended"))
        return self._advance(self._valid(moves), {})

    def step_mixed(self, actions: dict[str, Any], moves: Moves) -> tuple[dict, dict, dict, dict, dict]:
        """Text actions for some agents (e.g. one LLM agent) and vectorised moves for the rest."""
        if self._ended is not None:
            return self._refuse(actions)
        return self._answer(self.advance_mixed(actions, moves))

    def advance_mixed(self, actions: dict[str, Any], moves: Moves) -> RoundResult:
        """`step_mixed` without rendering text: the agents in `actions` move by text, `moves` cover the rest."""
        if self._ended is not None:
            raise RuntimeError(episode_over_message("the society's run ended"))
        text_moves, errors = self.parse_actions(actions)
        taken = np.zeros(self.scenario.n, dtype=bool)
        taken[[self._index[a] for a in actions if a in self._index]] = True
        keep = ~taken[moves.idx]
        rest = Moves(moves.idx[keep], moves.code[keep], moves.values()[keep])
        return self._advance(Moves.concat([text_moves, self._valid(rest)]), errors)

    # -- internals ---------------------------------------------------------------------------
    def parse_actions(self, actions: dict[str, Any]) -> tuple[Moves, dict[int, str]]:
        """Text actions -> valid moves and per-agent errors (contract wording)."""
        sc = self.scenario
        idx, code, value, errors = [], [], [], {}
        for agent, action in actions.items():
            i = self._index.get(agent)
            if i is None:
                log.warning("ignoring an action for unknown agent %r", agent)
                continue
            problem = action_problem(action)
            parsed = problem if problem is not None else sc.parse(i, action)
            if isinstance(parsed, str):
                errors[i] = invalid_action_message(parsed, sc.available(i), sc.templates(i))
                continue
            c, v = parsed
            if c != NOOP:
                idx.append(i)
                code.append(c)
                value.append(v)
        return Moves(np.array(idx, np.int64), np.array(code, np.int8), np.array(value, np.float64)), errors

    def _valid(self, moves: Moves) -> Moves:
        """Drop no-moves and moves by inactive agents (a brain bug must not break the model)."""
        keep = (moves.code != NOOP) & self.scenario.is_active[moves.idx]
        if not np.all(keep[moves.code != NOOP]):
            log.warning("%d moves by inactive agents dropped", int((~keep & (moves.code != NOOP)).sum()))
        return Moves(moves.idx[keep], moves.code[keep], moves.values()[keep])

    def _advance(self, moves: Moves, errors: dict[int, str]) -> RoundResult:
        sc = self.scenario
        rewards = sc.apply(moves, self._rng)
        sc.round += 1
        sc.begin_round(self._rng)
        terminated = sc.done()
        truncated = not terminated and sc.round >= self.max_rounds
        if terminated or truncated:
            self._ended = (terminated, truncated)
            self._last_live, self.agents = self.agents, []
        return RoundResult(sc.round, rewards, moves, terminated, truncated, errors)

    def _answer(self, r: RoundResult) -> tuple[dict, dict, dict, dict, dict]:
        agents = self._last_live if (r.terminated or r.truncated) else self.agents
        obs = {a: self.observe(a) for a in agents}
        infos = {a: self.info(a, r.errors.get(self._index[a])) for a in agents}
        rewards = {a: float(r.rewards[self._index[a]]) for a in agents}
        terms = dict.fromkeys(agents, r.terminated)
        truncs = dict.fromkeys(agents, r.truncated)
        return obs, rewards, terms, truncs, infos

    def _refuse(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        terminated, truncated = self._ended or (False, False)
        how = "the scenario ended" if terminated else f"{self.max_rounds} rounds were played"
        keys = [a for a in actions if a in self._index]
        return (
            {a: self.observe(a) for a in keys},
            dict.fromkeys(keys, 0.0),
            dict.fromkeys(keys, terminated),
            dict.fromkeys(keys, truncated),
            {a: {**self.info(a), "error": episode_over_message(how)} for a in keys},
        )

    # -- branching (envs.contract.Snapshottable) ---------------------------------------------
    def snapshot(self) -> Any:
        """The whole society (arrays, round, generator state), enough to continue later."""
        return copy.deepcopy((self.scenario, self._rng, self._ended, list(self.agents)))

    def restore(self, snapshot: Any) -> None:
        scenario, rng, ended, agents = copy.deepcopy(snapshot)
        self.scenario, self._rng, self._ended, self.agents = scenario, rng, ended, agents

    def state(self) -> np.ndarray:
        """The global state PettingZoo's `state()` names: one number per agent."""
        return self.scenario.node_state()

    def close(self) -> None:
        pass
