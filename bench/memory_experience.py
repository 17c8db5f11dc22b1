"""Experiential memory: the same tasks repeated with the same (embedded) brain, with and without reflective memory.

Reflexion's setting: one memory object is kept across the attempts at a task, so the lessons derived after
attempt n are in the prompt of attempt n+1. The control has the same working memory and no lessons. Each
attempt gets its own agent seed (the same seeds in both conditions), so without memory the attempts are
independent samples of the policy and any difference between the conditions is the lessons' doing.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from rich.table import Table

from agents.config import BrainConfig, EnvConfig
from agents.core import run_episode
from agents.core.factory import build_agent, build_brain, make_env
from agents.memory import make_memory
from agents.resolve import resolve_agent, resolve_brain, resolve_env

log = logging.getLogger(__name__)
ENVS = {
    "faulttree": {"name": "faulttree", "id": "agentsim/FaultTree-v0", "kwargs": {}},
    "webshop": {"name": "webshop", "id": "agentsim/WebShop-v0", "kwargs": {"num_products": 2000, "split": "test"}},
}
CONDITIONS = {"working": "working", "working+reflective": "working+reflective"}


def run_experience(
    quick: bool = False,
    seeds: tuple[int, ...] = (0, 1, 2),
    reps: int = 4,
    max_steps: int = 10,
    brain_cfg: dict[str, Any] | None = None,
    env: str = "webshop",
    reflector: str = "rule",
    agent_cfg: dict[str, Any] | None = None,
) -> dict[str, Any]:
    if quick:
        seeds, reps, max_steps = seeds[:1], 2, 6
    import envs  # noqa: F401  (registers the envs)

    env_cfg = ENVS[env]
    brain = build_brain(resolve_brain(BrainConfig.model_validate(brain_cfg or {"name": "local"})))
    agent_cfg = agent_cfg or {"slot_fill": "task"}
    out: dict[str, Any] = {
        "env": env,
        "brain": brain.name,
        "model": brain.model,
        "seeds": list(seeds),
        "reps": reps,
        "max_steps": max_steps,
        "reflector": reflector,
        "conditions": {},
    }
    for cond, mem_name in CONDITIONS.items():
        per_rep = [{"success": 0, "reward": 0.0, "steps": 0, "invalid": 0, "lessons_injected": 0} for _ in range(reps)]
        t0 = time.perf_counter()
        memory = None
        for seed in seeds:
            opts = {"reflective": {"reflector": reflector}} if "reflective" in mem_name else {}
            memory = make_memory(mem_name, brain=brain, **opts)  # one memory per task, kept over its attempts
            for rep in range(reps):
                agent = build_agent(
                    brain,
                    resolve_agent({"memory_budget_tokens": 512, **dict(agent_cfg)}),
                    memory,
                    seed=seed * 1000 + rep,
                )
                e = make_env(resolve_env(EnvConfig.model_validate(env_cfg)))
                try:
                    rec = run_episode(
                        e, agent, seed=seed, max_steps=max_steps, max_invalid=5, env_name=env, success_threshold=1.0
                    )
                finally:
                    e.close()
                r = per_rep[rep]
                r["success"] += int(rec.outcome.success)
                r["reward"] += rec.outcome.reward
                r["steps"] += rec.stats.steps
                r["invalid"] += rec.stats.invalid_actions + rec.stats.parse_failures
                injected = _lessons_in_prompt(memory)
                r["lessons_injected"] += injected
                log.info(
                    "experience %s task=%d attempt=%d: success=%s reward=%.2f steps=%d lessons=%d",
                    cond,
                    seed,
                    rep + 1,
                    rec.outcome.success,
                    rec.outcome.reward,
                    rec.stats.steps,
                    injected,
                )
        n = len(seeds)
        out["conditions"][cond] = {
            "wall_s": time.perf_counter() - t0,
            "by_repetition": [{k: v / n for k, v in r.items()} for r in per_rep],
        }
        lessons = getattr(_part(memory, "reflective"), "lessons", None)
        if lessons:
            out["example_lessons"] = [l.text for l in lessons[:5]]
    return out


def _part(memory: Any, name: str) -> Any:
    if memory is None:
        return None
    if getattr(memory, "name", "") == name:
        return memory
    return next((p for p in getattr(memory, "parts", []) if getattr(p, "name", "") == name), None)


def _lessons_in_prompt(memory: Any) -> int:
    part = _part(memory, "reflective")
    injected = getattr(part, "last_injected", "") if part is not None else ""
    return max(0, len(injected.splitlines()) - 1)


def experience_table(exp: dict[str, Any]) -> Table:
    t = Table(
        title=f"Repeated {exp.get('env', 'faulttree')} tasks, brain={exp['brain']} ({len(exp['seeds'])} tasks x "
        f"{exp['reps']} attempts; lessons by the {exp.get('reflector', 'auto')} reflector)"
    )
    for c in ["memory", "attempt", "success", "reward", "steps", "invalid", "lessons in prompt"]:
        t.add_column(c, justify="right")
    for cond, data in exp["conditions"].items():
        for i, r in enumerate(data["by_repetition"]):
            t.add_row(
                cond,
                str(i + 1),
                f"{r['success']:.2f}",
                f"{r['reward']:.2f}",
                f"{r['steps']:.1f}",
                f"{r['invalid']:.1f}",
                f"{r['lessons_injected']:.1f}",
            )
    return t
