"""Brain-driven agents in a society's seats: one `agents.core.agent.Agent` per seat the brain plays.

`BrainSeats` gives each chosen seat an Agent (brain from `agents.core.factory.build_brain`, memory
from `build_memory`, the persona in the instruction), and per round:

1. `prompts(idx)`: each active seat's text observation and info (`available_actions`, templates);
2. `decide(...)`: the seats' decisions gathered with asyncio under a semaphore (`max_concurrency`),
   through `achoose` / `acomplete` where the brain has them (sync brains run in worker threads);
   `brain_pool` brain instances serve the calls, seat k always on instance k % pool (each
   instance has its own llama.cpp context, so two local instances decode at the same time);
3. `observe(...)`: each seat's agent records its action and what it saw next (its memory).

The rest of the society keeps the vectorised rule, so LLM and rule agents mix (`llm_fraction`).
`brain=scripted` plays the society's own rule for a seat through the Agent machinery (`SeatView`
is its `HasExpert` env): a cheap, deterministic brain for tests.

Every call goes through the run's `societies.cache.CallCache`; `state()` / `load_state()` carry
the agents' and memories' states through a checkpoint; `interview()` asks a seat a question
without writing to its memory.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from agents.brains.base import Brain, EnvBoundBrain, ForkableBrain, writes_text
from agents.brains.registry import brain_spec
from agents.config import AgentConfig, BrainConfig, MemoryConfig
from agents.core.agent import Agent, Decision
from agents.core.factory import build_agent, build_brain, build_memory
from agents.resolve import resolve_agent, resolve_brain
from societies.cache import CallCache, cached
from societies.env import SocietyEnv, agent_id
from societies.rules import Rule

log = logging.getLogger(__name__)
INTERVIEW_PROMPT = (
    "An interviewer asks you a question about yourself and this society. Answer in one or two sentences, "
    "in your own voice. This is not a move in the society."
)


class SeatView:
    """One seat as the `HasExpert` env a scripted brain binds to: the society's rule for that seat.

    Decided with a generator seeded by (run seed, round, seat), so asking changes nothing else."""

    def __init__(self, env: SocietyEnv, rule: Rule, i: int, seed: int) -> None:
        self.env, self.rule, self.i, self.seed = env, rule, i, seed

    @property
    def unwrapped(self) -> SeatView:
        return self

    def expert_action(self) -> str:
        sc = self.env.scenario
        rng = np.random.default_rng([self.seed, sc.round, self.i, 0x5E])
        moves = self.rule.decide(sc, np.array([self.i]), rng)
        if moves.idx.size == 0:
            return sc.available(self.i)[0]
        return sc.move_text(self.i, int(moves.code[0]), float(moves.values()[0]))


@dataclass
class Turn:
    """One seat's decision this round: what it saw, and what it will send (None = output did not parse)."""

    observation: str
    info: dict[str, Any]
    decision: Decision

    @property
    def action(self) -> str | None:
        return self.decision.parsed.action


def choose_seats(n: int, fraction: float, count: int | None, seed: int) -> np.ndarray:
    """The seats a brain plays: `count` (or round(fraction * n)) agents drawn by the seed, sorted."""
    k = min(n, count if count is not None else int(round(fraction * n)))
    if k >= n:
        return np.arange(n)
    return np.sort(np.random.default_rng([seed, 0x5EA7]).choice(n, size=k, replace=False))


def build_brains(brain_cfg: BrainConfig, pool: int) -> list[Brain]:
    """`pool` brain instances; an in-process model's threads (`n_threads`) are split between them."""
    opts = dict(brain_cfg.options)
    spec = brain_spec(brain_cfg.name)
    if (
        pool > 1
        and spec.in_process
        and "n_threads" in spec.options_model().model_fields
        and opts.get("n_threads") is None
    ):
        opts["n_threads"] = max(1, (os.cpu_count() or 1) // pool)
    resolved = resolve_brain(BrainConfig(name=brain_cfg.name, **opts))  # no env: `adapter=auto` is the default's
    return [build_brain(resolved) for _ in range(pool)]


class BrainSeats:
    """The Agents of the seats a brain plays, and their per-round decisions."""

    def __init__(
        self,
        env: SocietyEnv,
        rule: Rule,
        seats: np.ndarray,
        brains: list[Brain],
        cache: CallCache,
        *,
        agent_cfg: AgentConfig | None = None,
        memory_cfg: MemoryConfig | None = None,
        seed: int = 0,
        max_concurrency: int = 8,
    ) -> None:
        if not brains:
            raise ValueError("BrainSeats needs at least one brain")
        self.env, self.rule, self.cache = env, rule, cache
        self.seats = np.asarray(seats, dtype=np.int64)
        self.is_seat = np.zeros(env.scenario.n, dtype=bool)
        self.is_seat[self.seats] = True
        self.max_concurrency = max_concurrency
        self.seed = seed
        self.brains = brains
        self.agents: dict[int, Agent] = {}
        self.brain_label = f"{brains[0].name}:{brains[0].model}"
        sc = env.scenario
        resolved_agent = resolve_agent(agent_cfg)
        for k, i in enumerate(self.seats.tolist()):
            brain = brains[k % len(brains)]
            if isinstance(brain, EnvBoundBrain) and isinstance(brain, ForkableBrain):
                brain = brain.fork(seed * 1_000_003 + i)  # reads its env (the scripted expert): one per seat
            if isinstance(brain, EnvBoundBrain):
                brain.bind_env(SeatView(env, rule, i, seed))
            seat_brain = cached(brain, cache)  # a memory's own calls (reflections, summaries) are cached too
            memory = build_memory(memory_cfg, seat_brain) if memory_cfg is not None else None
            agent = build_agent(seat_brain, resolved_agent, memory, seed=self.agent_seed(i))
            agent.reset(sc.instruction(i), seed=self.agent_seed(i))
            self.agents[i] = agent

    def agent_seed(self, i: int) -> int:
        """Seat i's agent seed; its per-step seeds (seed * 1000 + step) stay below 2**32 for llama.cpp."""
        return (self.seed * 7919 + i) % 1_000_000

    def active(self) -> list[int]:
        """The seats active this round."""
        sc = self.env.scenario
        return [int(i) for i in sc.active[self.is_seat[sc.active]]]

    def rule_idx(self) -> np.ndarray:
        """The active agents the rule decides for this round."""
        sc = self.env.scenario
        return sc.active[~self.is_seat[sc.active]]

    # -- deciding --------------------------------------------------------------------------------
    async def decide(self, idx: list[int], max_concurrency: int | None = None) -> dict[int, Turn]:
        """Every seat in `idx` decides, at most `max_concurrency` brain calls in flight."""
        sem = asyncio.Semaphore(max_concurrency or self.max_concurrency)
        views = {i: (self.env.scenario.observe(i), self.env.info(agent_id(i))) for i in idx}

        async def one(i: int) -> tuple[int, Turn]:
            obs, info = views[i]
            async with sem:
                decision = await self.agents[i].adecide(obs, info)
            return i, Turn(obs, info, decision)

        return dict(await asyncio.gather(*(one(i) for i in idx)))

    def decide_sync(self, idx: list[int]) -> dict[int, Turn]:
        """One seat after another with the sync path (the baseline the bench compares against)."""
        out = {}
        for i in idx:
            obs, info = self.env.scenario.observe(i), self.env.info(agent_id(i))
            out[i] = Turn(obs, info, self.agents[i].decide(obs, info))
        return out

    def observe(self, turns: dict[int, Turn], rewards: np.ndarray, errors: dict[int, str]) -> None:
        """After the round: each seat that decided records its action and its next observation."""
        sc = self.env.scenario
        for i, t in turns.items():
            feedback = errors.get(i) if t.action is not None else (t.decision.parsed.error or "unparsable reply")
            self.agents[i].observe(
                t.action, sc.observe(i), float(rewards[i]), self.env.info(agent_id(i)), feedback=feedback
            )

    def end(self, outcomes: dict[int, dict[str, Any]]) -> None:
        """The society's episode is over: each seat's memory gets its outcome (a reflective memory reflects)."""
        for i, agent in self.agents.items():
            agent.end(outcomes[i])

    def reflections(self) -> dict[int, dict[str, Any]]:
        """Each seat's reflections so far: how many, and the lessons they wrote (reflective memories only)."""
        out = {}
        for i, agent in self.agents.items():
            parts = getattr(agent.memory, "parts", [agent.memory])
            for part in parts:
                if part is not None and hasattr(part, "reflections") and hasattr(part, "lessons"):
                    out[i] = {"reflections": int(part.reflections), "lessons": [l.text for l in part.lessons]}
        return out

    # -- checkpoints -----------------------------------------------------------------------------
    def state(self) -> dict[int, dict[str, Any]]:
        """Each seat's agent state (instruction, step, pending feedback, seed, transcript, memory) as plain data."""
        return {
            i: {**a.save_state(), "memory": a.memory.save_state() if a.memory is not None else None}
            for i, a in self.agents.items()
        }

    def load_state(self, state: dict[int, dict[str, Any]]) -> None:
        for i, s in state.items():
            a = self.agents[i]
            a.load_state(s)
            if a.memory is not None and s["memory"] is not None:
                a.memory.load_state(s["memory"])

    # -- interviews ------------------------------------------------------------------------------
    def interview(self, i: int, question: str, max_tokens: int = 96) -> str:
        """Agent i's answer to `question`; its memory and agent state are left exactly as they were.

        The prompt holds the persona and instruction, what the memory recalls for the question (read
        from a copy, so even retrieval bookkeeping is not written), the agent's current view, and the
        question. A brain that writes no text (scripted) answers from the state instead."""
        agent = self.agents[i]
        sc = self.env.scenario
        observation = sc.observe(i)
        recalled = ""
        if agent.memory is not None:
            # the copy shares the seat's brain (a memory that reflects holds it; a model is not copyable)
            recalled = copy.deepcopy(agent.memory, {id(agent.brain): agent.brain}).build_context(
                question, agent.memory_budget_tokens, agent.brain.count_tokens
            )
        if not writes_text(agent.brain):
            return f"{sc.persona(i)} {observation}"
        user = f"What you see now: {observation}\n"
        if recalled:
            user += f"What you remember:\n{recalled}\n"
        user += f"Interviewer: {question}\nYou:"
        messages = [
            {"role": "system", "content": f"{agent.instruction}\n{INTERVIEW_PROMPT}"},
            {"role": "user", "content": user},
        ]
        return agent.brain.complete(messages, temperature=0.0, max_tokens=max_tokens).text.strip()
