"""Scripted expert brain: the env's own expert policy, plus an epsilon of random valid actions.

Deterministic for a seed. For tests, baselines and cheap data. The env supplies the policy
through `expert_action()` (see `envs.contract.HasExpert`); the brain adds the noise so every
env gets the same epsilon semantics.
"""

from __future__ import annotations

import random
import time
from typing import Any

import gymnasium as gym

from agents.brains.base import BrainError, BrainOutput, CandidateScore, Message, SyncBrainMixin, approx_tokens
from agents.brains.registry import register_brain
from envs.capabilities import HasAsyncExpert, HasCandidateExpert
from envs.contract import SLOT, HasExpert


@register_brain("scripted")
class ScriptedBrain(SyncBrainMixin):
    """The env's expert with epsilon noise: a cheap, deterministic baseline and data source (no language model)."""

    name = "scripted"
    can_write_text = False  # its text is a policy's, not a model's: memories use their rule-based versions

    def __init__(
        self, epsilon: float = 0.0, seed: int = 0, within_candidates: bool = False, settle: float | None = None
    ) -> None:
        """`within_candidates`: pick among the candidates a ranked-choice agent was offered where the env can say
        which it prefers (`HasCandidateExpert`), so demonstrations and DAgger labels are actions a student can take."""
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], got {epsilon}")
        self.epsilon = epsilon
        self.within_candidates = within_candidates
        if settle is not None and not 0.0 <= settle <= 1.0:
            raise ValueError(f"settle must be a reward in [0, 1] (or None: the expert's own choice), got {settle}")
        self.settle = settle  # within candidates: keep to what is in view when its best buy scores this much
        self.model = f"expert(eps={epsilon}{', within candidates' if within_candidates else ''})"
        self._rng = random.Random(seed)
        self._env: Any = None

    def fork(self, seed: int) -> ScriptedBrain:
        """A fresh instance for one episode: the brain holds the env it is bound to."""
        return ScriptedBrain(self.epsilon, seed, self.within_candidates, self.settle)

    def bind_env(self, env: gym.Env) -> None:
        """Follow this env's expert; raises BrainError if it has none."""
        base = env.unwrapped
        if not isinstance(base, HasExpert):
            raise BrainError(
                f"brain=scripted needs an env with an expert policy (expert_action()); {type(base).__name__} has none"
            )
        self._env = base

    def count_tokens(self, text: str) -> int:
        """Approximate count: there is no tokenizer, only budgets to respect."""
        return approx_tokens(text)

    def _expert(self, candidates: list[str] | None = None) -> str:
        if self._env is None:
            raise BrainError("scripted brain is not bound to an env: the episode loop calls bind_env(env) first")
        if candidates is not None and self.within_candidates and isinstance(self._env, HasCandidateExpert):
            return self._env.expert_choice(candidates, self.settle)
        return self._env.expert_action()

    def _noise(self, candidates: list[str], seed: int | None) -> str | None:
        """With probability epsilon, a random concrete candidate; otherwise None (follow the expert)."""
        rng = random.Random(seed) if seed is not None else self._rng
        concrete = [c for c in candidates if SLOT not in c]
        return rng.choice(concrete) if concrete and rng.random() < self.epsilon else None

    def _output(self, action: str, candidates: list[str], prefix: str, t0: float) -> BrainOutput:
        scores = [
            CandidateScore(text=c, logprob=0.0 if c == action else -1e9, n_tokens=0, score=1.0 if c == action else 0.0)
            for c in candidates
            if SLOT not in c
        ]
        return BrainOutput(
            text=prefix + action, latency_s=time.perf_counter() - t0, candidates=scores, model=self.model
        )

    def choose(
        self,
        messages: list[Message],
        candidates: list[str],
        *,
        temperature: float = 0.0,
        prefix: str = "",
        seed: int | None = None,
    ) -> BrainOutput:
        """The expert's action, or with probability epsilon a random concrete candidate."""
        t0 = time.perf_counter()
        return self._output(self._noise(candidates, seed) or self._expert(candidates), candidates, prefix, t0)

    async def achoose(
        self,
        messages: list[Message],
        candidates: list[str],
        *,
        temperature: float = 0.0,
        prefix: str = "",
        seed: int | None = None,
    ) -> BrainOutput:
        """Async path: a remote env's expert is an HTTP call, which must not block the event loop."""
        t0 = time.perf_counter()
        action = self._noise(candidates, seed)
        if action is None:
            action = (
                await self._env.aexpert_action() if isinstance(self._env, HasAsyncExpert) else self._expert(candidates)
            )
        return self._output(action, candidates, prefix, t0)

    def complete(self, messages: list[Message], **_: Any) -> BrainOutput:
        """The expert's action in ReAct form, for agents in generate mode."""
        t0 = time.perf_counter()
        return BrainOutput(
            text=f"Thought: follow the expert policy.\nAction: {self._expert()}",
            latency_s=time.perf_counter() - t0,
            model=self.model,
        )
