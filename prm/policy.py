"""A policy for search and Monte Carlo labels: sample M actions at a state, step from a snapshot, roll out.

Works with any brain that can sample: a brain that ranks the env's listed actions (`choose` at a
temperature: local llama.cpp, scripted expert with epsilon noise) or one that writes text
(`complete` at a temperature: OpenAI-compatible endpoints). With `history=True` the agent acts as it
does in `python -m agents.run`: every draw at a node starts from the agent state saved along the
node's path (its transcript of earlier turns), and the child of a chosen action carries that state
plus the turn just taken. With `history=False` each sample sees only the instruction and the
current observation (the memoryless sampler older tables were measured with).

A `Node` is a search state: the env snapshot plus the steps that led there, as `StepRecord`s,
so a finished node becomes an ordinary trajectory record.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import gymnasium as gym

from agents.brains.base import Brain, EnvBoundBrain
from agents.core.agent import Agent, PendingTurn
from agents.core.loop import episode_summary, step_record
from agents.trajectories.schema import EpisodeRecord, StepRecord
from envs.contract import EnvSnapshot, restore_env, snapshot_env
from envs.util import to_jsonable
from prm.episodes import BRANCH_OUTPUTS, Compactor, env_compactor, unchanged


@dataclass(frozen=True)
class Sample:
    """One action drawn from the policy, or its unparsable output, with what drawing it cost."""

    action: str | None  # None: the output did not parse into an action
    raw_output: str
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    error: str | None = None  # why it did not parse
    # the agent state after this draw is acted on: (action taken, observation, reward, info, feedback) -> state;
    # None: the sampler keeps no history (the child starts from a fresh agent)
    after: Callable[[str | None, str, float, dict[str, Any], str | None], dict[str, Any]] | None = field(
        default=None, repr=False, compare=False
    )


UNPARSED = "Your reply could not be parsed."  # the feedback `agents.run` gives a reply without a reason
AgentState = dict[str, Any]  # `Agent.save_state()`: the episode so far as the policy reads it


class ActionSampler(Protocol):
    """A policy search and MC labels can draw actions from.

    A sampler that keeps the path's history sets `history = True`; it is then called with `state=` (the node's
    `agent_state`, None at the root) and may give each `Sample` an `after`. One without history (no attribute, or
    False) is called as below and ignores how the search reached the state."""

    def sample(
        self, env: gym.Env, instruction: str, observation: str, info: dict[str, Any], n: int, seed: int
    ) -> list[Sample]:
        """`n` actions for the state (`observation`, `info`) of `env`, reproducible from `seed`. The env must stand
        at that state (a brain bound to it reads the live env): draw through `sample_at`, or right after `apply`."""
        ...


class BrainSampler:
    """Draws `n` actions from a brain at a temperature (one seed per draw) through the agent `agents.run` builds.

    `history=True`: every draw at a node starts from the node's agent state, so the policy reads the transcript
    of the path's earlier turns, as it does in a run (all draws at a node share one prompt: a local brain ranks
    once). `history=False`: a memoryless agent, reset before each draw (one-turn prompts)."""

    def __init__(
        self,
        brain: Brain,
        temperature: float = 1.0,
        agent_cfg: dict[str, Any] | None = None,
        history: bool = False,
    ) -> None:
        from agents.core.factory import build_agent
        from agents.resolve import resolve_agent

        cfg = dict(agent_cfg or {})
        cfg["temperature"] = temperature
        self.brain = brain
        self.history = history
        self.agent: Agent = build_agent(brain, resolve_agent(cfg), None)

    def _begin(self, instruction: str, state: AgentState | None, seed: int) -> None:
        """Put the agent at the node: the path's saved state (history) or a fresh episode, reseeded for this draw."""
        if self.history and state is not None:
            self.agent.load_state(state)
            self.agent.seed = seed
        else:
            self.agent.reset(instruction, seed=seed)

    def sample(
        self,
        env: gym.Env,
        instruction: str,
        observation: str,
        info: dict[str, Any],
        n: int,
        seed: int,
        state: AgentState | None = None,
    ) -> list[Sample]:
        """`n` decisions at this state, one seed each, from the node's agent `state` (history) or a fresh agent."""
        if isinstance(self.brain, EnvBoundBrain):
            self.brain.bind_env(env)
        out = []
        for i in range(n):
            self._begin(instruction, state, seed * 1009 + i)
            d = self.agent.decide(observation, info)
            o = d.output
            after = None
            if self.history:  # the agent as `decide` left it (transcript fitted, the turn pending)
                decided, pending = self.agent.save_state(), self.agent.pending_turn
                after = _Observed(self.agent, decided, pending)
            out.append(
                Sample(
                    d.parsed.action if d.parsed.ok else None,
                    o.text,
                    o.tokens_in,
                    o.tokens_out,
                    o.latency_s,
                    None if d.parsed.ok else (d.parsed.error or UNPARSED),
                    after=after,
                )
            )
        return out

    def advance(
        self,
        state: AgentState | None,
        instruction: str,
        observation: str,
        info: dict[str, Any],
        sample: Sample,
        result: tuple[str | None, str, float, dict[str, Any], str | None],
    ) -> AgentState | None:
        """The agent state after `sample` was taken at a node whose state is `state`, for a sample this sampler did
        not draw (a branch, a replayed step): the node's prompt is rebuilt (no brain call) and the taken action
        becomes its reply, as a run records a decision the agent did not make."""
        if not self.history:
            return None
        self._begin(instruction, state, 0)
        self.agent.adopt_decision(observation, info, sample.raw_output, sample.action)
        return _Observed(self.agent, self.agent.save_state(), self.agent.pending_turn)(*result)


class _Observed:
    """The agent state after a decision was acted on: what `Agent.observe` makes of it, so the transcript is the
    one `agents.run` would hold (a different action than decided is recorded as the reply, as in a run)."""

    def __init__(self, agent: Agent, decided: AgentState, pending: PendingTurn | None) -> None:
        self.agent, self.decided, self.pending = agent, decided, pending

    def __call__(
        self, action: str | None, observation: str, reward: float, info: dict[str, Any], feedback: str | None
    ) -> AgentState:
        self.agent.load_state(self.decided)
        self.agent.pending_turn = self.pending
        self.agent.observe(action, observation, reward, info, feedback=feedback)
        return self.agent.save_state()


@dataclass
class Node:
    """A state reached by a sequence of steps; `observations[t]` is what step t acted in."""

    snapshot: EnvSnapshot  # `envs.contract.snapshot_env`: the env's state and its step-limit counter
    observation: str
    info: dict[str, Any]
    instruction: str
    initial_observation: str
    observations: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    steps: list[StepRecord] = field(default_factory=list)
    terminated: bool = False
    truncated: bool = False
    last_reward: float = 0.0
    score: float | None = None  # PRM promise of the last step
    compact: Compactor = field(default=unchanged, repr=False, compare=False)  # the env's compact_observation
    # `Agent.save_state()` after the path's last step, for a sampler with history; None: a fresh agent (the root)
    agent_state: AgentState | None = field(default=None, repr=False, compare=False)

    def prm_item(self) -> tuple[str, list[str], list[str]]:
        """(instruction, states as the PRM reads them, actions): what `PRMScorer` scores."""
        return self.instruction, [self.compact(o) for o in self.observations], self.actions

    @property
    def done(self) -> bool:
        """The episode is over here: really ended, or cut."""
        return self.terminated or self.truncated

    def outcome(self) -> float:
        """The benchmark's view: the reward at a real end; a cut is a failure."""
        return self.last_reward if self.terminated else 0.0


def _snapshot(env: gym.Env) -> EnvSnapshot:
    try:
        return snapshot_env(env)
    except TypeError as e:
        raise TypeError(f"search and MC labels need an env with snapshot()/restore(): {e}") from e


def start(env: gym.Env, seed: int | None = None, options: dict[str, Any] | None = None) -> Node:
    """The root node: `env` reset with `seed` and `options`, snapshotted."""
    obs, info = env.reset(seed=seed, options=options)
    return Node(_snapshot(env), obs, info, str(info.get("instruction", "")), obs, compact=env_compactor(env))


def apply(env: gym.Env, node: Node, sample: Sample, max_steps: int, sampler: ActionSampler | None = None) -> Node:
    """The child of `node` after `sample` (the env is restored to `node` first; it is left at the child).

    The child's `agent_state` is what the sample's `after` makes of the step (a sampler with history); for a sample
    no such sampler drew (a branch, a replayed step) `sampler`'s `advance` builds it, if it has one; else None."""
    common: dict[str, Any] = dict(
        index=len(node.steps),
        raw_output=sample.raw_output,
        tokens_in=sample.tokens_in,
        tokens_out=sample.tokens_out,
        latency_s=sample.latency_s,
    )
    if sample.action is None:
        feedback = sample.error or UNPARSED
        step = step_record(None, None, feedback=feedback, **common)
        child = replace(
            node,
            observations=node.observations + [node.observation],
            actions=node.actions + [f"(unparsed output) {sample.raw_output[:120]}"],
            steps=node.steps + [step],
            score=None,
            agent_state=_after(node, sample, sampler, (None, node.observation, 0.0, node.info, feedback)),
        )
    else:
        restore_env(env, node.snapshot)
        result = env.step(sample.action)
        obs, reward, terminated, truncated, info = result
        child = Node(
            _snapshot(env),
            obs,
            info,
            node.instruction,
            node.initial_observation,
            node.observations + [node.observation],
            node.actions + [sample.action],
            node.steps + [step_record(sample.action, result, **common)],
            bool(terminated),
            bool(truncated),
            float(reward) if reward else node.last_reward,
            compact=node.compact,
            agent_state=_after(node, sample, sampler, (sample.action, obs, float(reward or 0.0), info, None)),
        )
    if not child.done and len(child.steps) >= max_steps:
        child.truncated = True
        child.steps[-1] = child.steps[-1].model_copy(update={"truncated": True})
    return child


def _after(
    node: Node,
    sample: Sample,
    sampler: ActionSampler | None,
    result: tuple[str | None, str, float, dict[str, Any], str | None],
) -> AgentState | None:
    """The agent state of `node`'s child after `sample` led to `result` (None: the sampler keeps no history)."""
    if sample.after is not None:
        return sample.after(*result)
    advance = getattr(sampler, "advance", None) if getattr(sampler, "history", False) else None
    return advance(node.agent_state, node.instruction, node.observation, node.info, sample, result) if advance else None


def _draw(env: gym.Env, sampler: ActionSampler, node: Node, n: int, seed: int) -> list[Sample]:
    """`sampler.sample` at `node`, given the node's agent state when the sampler keeps history."""
    if getattr(sampler, "history", False):
        return sampler.sample(  # type: ignore[call-arg]
            env, node.instruction, node.observation, node.info, n, seed, state=node.agent_state
        )
    return sampler.sample(env, node.instruction, node.observation, node.info, n, seed)


def sample_at(env: gym.Env, sampler: ActionSampler, node: Node, n: int, seed: int) -> list[Sample]:
    """`n` actions at `node`. The env is put at the node first: a brain that reads the live env (the scripted
    expert, any `EnvBoundBrain`) must act on this state, not on whichever node was stepped last."""
    restore_env(env, node.snapshot)
    return _draw(env, sampler, node, n, seed)


def rollout(
    env: gym.Env, sampler: ActionSampler, node: Node, *, seed: int, max_steps: int, path: list[Node] | None = None
) -> tuple[Node, int]:
    """Follow the policy from `node` to the end; returns the final node and the number of sampled steps.
    `path`, if given, receives every node after `node` (the states a branch can start from)."""
    n = 0
    restore_env(env, node.snapshot)  # then `apply` leaves the env at each next node
    while not node.done:
        s = _draw(env, sampler, node, 1, seed * 131 + len(node.steps))[0]
        node = apply(env, node, s, max_steps, sampler)
        if path is not None:
            path.append(node)
        n += 1
    return node, n


def to_episode(
    node: Node,
    *,
    episode_id: str,
    env_name: str,
    env_id: str,
    seed: int,
    brain: str,
    model: str = "",
    env_kwargs: dict[str, Any] | None = None,
    meta: dict[str, Any] | None = None,
    success_threshold: float | None = None,
    started_at: float | None = None,
) -> EpisodeRecord:
    """A finished node as a trajectory record (the same schema `agents.run` writes)."""
    reason = None if node.terminated else ("max_steps" if node.truncated else None)
    outcome, stats = episode_summary(
        node.steps,
        last_reward=node.last_reward,
        terminated=node.terminated,
        truncated=node.truncated,
        truncation_reason=reason,
        success_threshold=success_threshold,
        wall_time_s=0.0,
        last_info=node.info,
    )
    now = time.time()
    return EpisodeRecord(
        episode_id=episode_id,
        env=env_name,
        env_id=env_id,
        env_kwargs=to_jsonable(env_kwargs or {}),
        seed=seed,
        instruction=node.instruction,
        initial_observation=node.initial_observation,
        brain=brain,
        model=model,
        steps=node.steps,
        outcome=outcome,
        stats=stats,
        started_at=started_at or now,
        finished_at=now,
        meta=to_jsonable(meta or {}),
    )


def branch_points(path: list[Node]) -> list[int]:
    """Indices of the states on a finished path where a branch can leave it: a listed action to take instead."""
    return [i for i, n in enumerate(path[:-1]) if n.info.get("available_actions")]


def branch_rollouts(
    env: gym.Env, base: ActionSampler, cont: ActionSampler, root: Node, *, branches: int, seed: int, max_steps: int
) -> tuple[list[Node], int]:
    """Trajectories that leave a `base`-policy path at a random state with a random listed action, then follow `cont`.

    Why: independent policy trajectories rarely contain two different actions at the same state, yet that is
    what beam search and reranking ask a PRM to compare (WebShop: a premature `click[buy now]` next to the right
    option). Each branch shares the path's prefix, so its TD targets contrast the sibling actions. Returns the final
    nodes (the base path first) and the number of sampled steps.
    """
    rng = random.Random(seed)
    path = [root]
    end, steps = rollout(env, base, root, seed=seed, max_steps=max_steps, path=path)
    ends = [end]
    states = branch_points(path)
    for b in range(branches if states else 0):
        i = rng.choice(states)
        at, taken = path[i], path[i + 1].actions[-1]
        options = [a for a in at.info["available_actions"] if a != taken] or list(at.info["available_actions"])
        child = apply(env, at, Sample(rng.choice(options), BRANCH_OUTPUTS[0]), max_steps, cont)
        end, n = rollout(env, cont, child, seed=seed * 7919 + b, max_steps=max_steps)
        ends.append(end)
        steps += 1 + n
    return ends, steps


def sibling_rollouts(
    env: gym.Env,
    base: ActionSampler,
    cont: ActionSampler,
    root: Node,
    *,
    states: int,
    max_siblings: int,
    seed: int,
    max_steps: int,
) -> tuple[list[Node], int]:
    """Sibling sets: at `states` random states of a `base`-policy path, every listed action (at most `max_siblings`,
    the path's own one always among them) is stepped and each child is followed by `cont` to the end.

    Why: beam search and reranking ask a PRM to order the actions listed at one state, and their values differ by
    little under a noisy behaviour policy (a wrong choice that policy later repairs costs one step). Continued by a
    low-noise `cont`, each sibling's targets estimate what the action is worth to a policy that acts well afterwards,
    which is what a search that keeps the best child is. Returns the final nodes (the base path first) and the number
    of sampled and stepped actions.
    """
    rng = random.Random(seed)
    path = [root]
    end, steps = rollout(env, base, root, seed=seed, max_steps=max_steps, path=path)
    ends = [end]
    points = branch_points(path)
    for i in sorted(rng.sample(points, min(states, len(points)))):
        at, taken = path[i], path[i + 1].actions[-1]
        others = [a for a in at.info["available_actions"] if a != taken]
        picked = [taken, *rng.sample(others, min(len(others), max(0, max_siblings - 1)))]
        for j, a in enumerate(picked):
            child = apply(env, at, Sample(a, BRANCH_OUTPUTS[1]), max_steps, cont)
            end, n = rollout(env, cont, child, seed=seed * 7919 + i * 131 + j, max_steps=max_steps)
            ends.append(end)
            steps += 1 + n
    return ends, steps


def ending_branches(
    env: gym.Env, path: list[Node], *, branches: int, seed: int, max_steps: int, tries: int = 8
) -> tuple[list[Node], int]:
    """One-step trajectories that end the episode at a state of `path` where the path itself went on.

    Why: a policy that ends an episode (WebShop's `click[buy now]`) mostly does so at the right moment, so a PRM
    trained on its trajectories learns "ending is good" and rates a premature end highly -- the sibling a beam or
    a reranker then picks. Each state's listed actions are stepped once from its snapshot; an action that really
    ends the episode there (and is not what the path did next) becomes a trajectory whose label is exact: its own
    outcome, no rollout needed. Returns the nodes and the number of env steps spent probing.
    """
    rng = random.Random(seed)
    states = branch_points(path)
    barren: set[int] = set()  # states already probed that have no ending action: not stepped again
    out: list[Node] = []
    probed = 0
    for _ in range(tries if states else 0):
        if len(out) == branches:
            break
        i = rng.choice(states)
        if i in barren:
            continue
        at, taken = path[i], path[i + 1].actions[-1]
        ends = []
        for a in at.info["available_actions"]:
            if a == taken:
                continue
            child = apply(env, at, Sample(a, BRANCH_OUTPUTS[2]), max_steps)
            probed += 1
            if child.terminated:
                ends.append(child)
        if not ends:
            barren.add(i)
        else:
            out.append(rng.choice(ends))
            states.remove(i)
            if not states:
                break
    return out, probed
