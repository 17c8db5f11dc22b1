"""A policy for search and Monte Carlo labels: sample M actions at a state, step from a snapshot, roll out.

Works with any brain that can sample: a brain that ranks the env's listed actions (`choose` at a
temperature: local llama.cpp, scripted expert with epsilon noise) or one that writes text
(`complete` at a temperature: OpenAI-compatible endpoints). The agent used here has no memory:
each sample sees the instruction and the current observation, so samples at one state are
independent of how the search reached it.

A `Node` is a search state: the env snapshot plus the steps that led there, as `StepRecord`s,
so a finished node becomes an ordinary trajectory record.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import gymnasium as gym

from agents.brains.base import Brain, EnvBoundBrain
from agents.core.agent import Agent
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


class ActionSampler(Protocol):
    """A policy search and MC labels can draw actions from."""

    def sample(
        self, env: gym.Env, instruction: str, observation: str, info: dict[str, Any], n: int, seed: int
    ) -> list[Sample]:
        """`n` actions for the state (`observation`, `info`) of `env`, reproducible from `seed`. The env must stand
        at that state (a brain bound to it reads the live env): draw through `sample_at`, or right after `apply`."""
        ...


class BrainSampler:
    """Draws `n` independent actions from a brain at a temperature (one seed per draw)."""

    def __init__(self, brain: Brain, temperature: float = 1.0, agent_cfg: dict[str, Any] | None = None) -> None:
        from agents.core.factory import build_agent
        from agents.resolve import resolve_agent

        cfg = dict(agent_cfg or {})
        cfg["temperature"] = temperature
        self.brain = brain
        self.agent: Agent = build_agent(brain, resolve_agent(cfg), None)

    def sample(
        self, env: gym.Env, instruction: str, observation: str, info: dict[str, Any], n: int, seed: int
    ) -> list[Sample]:
        """`n` independent decisions of a memoryless agent at this state, one seed each."""
        if isinstance(self.brain, EnvBoundBrain):
            self.brain.bind_env(env)
        out = []
        for i in range(n):
            self.agent.reset(instruction, seed=seed * 1009 + i)
            d = self.agent.decide(observation, info)
            o = d.output
            out.append(
                Sample(
                    d.parsed.action if d.parsed.ok else None,
                    o.text,
                    o.tokens_in,
                    o.tokens_out,
                    o.latency_s,
                    None if d.parsed.ok else (d.parsed.error or "unparsable output"),
                )
            )
        return out


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


def apply(env: gym.Env, node: Node, sample: Sample, max_steps: int) -> Node:
    """The child of `node` after `sample` (the env is restored to `node` first; it is left at the child)."""
    common: dict[str, Any] = dict(
        index=len(node.steps),
        raw_output=sample.raw_output,
        tokens_in=sample.tokens_in,
        tokens_out=sample.tokens_out,
        latency_s=sample.latency_s,
    )
    if sample.action is None:
        step = step_record(None, None, feedback=sample.error or "Your reply could not be parsed.", **common)
        child = replace(
            node,
            observations=node.observations + [node.observation],
            actions=node.actions + [f"(unparsed output) {sample.raw_output[:120]}"],
            steps=node.steps + [step],
            score=None,
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
        )
    if not child.done and len(child.steps) >= max_steps:
        child.truncated = True
        child.steps[-1] = child.steps[-1].model_copy(update={"truncated": True})
    return child


def sample_at(env: gym.Env, sampler: ActionSampler, node: Node, n: int, seed: int) -> list[Sample]:
    """`n` actions at `node`. The env is put at the node first: a brain that reads the live env (the scripted
    expert, any `EnvBoundBrain`) must act on this state, not on whichever node was stepped last."""
    restore_env(env, node.snapshot)
    return sampler.sample(env, node.instruction, node.observation, node.info, n, seed)


def rollout(
    env: gym.Env, sampler: ActionSampler, node: Node, *, seed: int, max_steps: int, path: list[Node] | None = None
) -> tuple[Node, int]:
    """Follow the policy from `node` to the end; returns the final node and the number of sampled steps.
    `path`, if given, receives every node after `node` (the states a branch can start from)."""
    n = 0
    restore_env(env, node.snapshot)  # then `apply` leaves the env at each next node
    while not node.done:
        s = sampler.sample(env, node.instruction, node.observation, node.info, 1, seed * 131 + len(node.steps))[0]
        node = apply(env, node, s, max_steps)
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
    success_threshold: float = 1.0,
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
        child = apply(env, at, Sample(rng.choice(options), BRANCH_OUTPUTS[0]), max_steps)
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
            child = apply(env, at, Sample(a, BRANCH_OUTPUTS[1]), max_steps)
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
