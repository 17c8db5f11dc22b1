"""Experiential memory: the same fault-tree tasks repeated with the same (embedded) brain, with and without
reflective memory. One memory object is kept across the repetitions of a task, so lessons from attempt n
are in the prompt of attempt n+1; the no-memory run is the control.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from rich.table import Table

from agents.core import run_episode
from agents.core.factory import build_agent, build_brain, make_env
from agents.memory import make_memory

log = logging.getLogger(__name__)
ENV = {"name": "faulttree", "id": "agentsim/FaultTree-v0", "kwargs": {}}


def run_experience(quick: bool = False, seeds: tuple[int, ...] = (0, 1, 2), reps: int = 4, max_steps: int = 10,
                   brain_cfg: dict[str, Any] | None = None) -> dict[str, Any]:
    if quick:
        seeds, reps, max_steps = seeds[:1], 2, 6
    import envs  # noqa: F401  (registers the envs)

    brain = build_brain(brain_cfg or {"name": "local"})
    out: dict[str, Any] = {"brain": brain.name, "model": brain.model, "seeds": list(seeds), "reps": reps,
                           "max_steps": max_steps, "conditions": {}}
    for cond in ("none", "reflective"):
        per_rep = [{"success": 0, "reward": 0.0, "steps": 0, "invalid": 0, "lessons_injected": 0} for _ in range(reps)]
        t0 = time.perf_counter()
        for seed in seeds:
            memory = make_memory("reflective", brain=brain) if cond == "reflective" else None
            for rep in range(reps):
                agent = build_agent(brain, {}, memory, 512, seed=seed)
                env = make_env(ENV)
                try:
                    rec = run_episode(env, agent, seed=seed, max_steps=max_steps, max_invalid=5, env_name="faulttree",
                                      success_threshold=1.0)
                finally:
                    env.close()
                r = per_rep[rep]
                r["success"] += int(rec.outcome.success)
                r["reward"] += rec.outcome.reward
                r["steps"] += rec.stats.steps
                r["invalid"] += rec.stats.invalid_actions + rec.stats.parse_failures
                injected = memory.last_injected if memory is not None else ""
                r["lessons_injected"] += max(0, len(injected.splitlines()) - 1)
                log.info("experience %s seed=%d rep=%d: success=%s reward=%.2f steps=%d", cond, seed, rep,
                         rec.outcome.success, rec.outcome.reward, rec.stats.steps)
        n = len(seeds)
        out["conditions"][cond] = {"wall_s": time.perf_counter() - t0, "by_repetition": [
            {k: v / n for k, v in r.items()} for r in per_rep]}
        if cond == "reflective" and memory is not None:
            out["example_lessons"] = [l.text for l in memory.lessons[:5]]
    return out


def experience_table(exp: dict[str, Any]) -> Table:
    t = Table(title=f"Repeated fault-tree episodes, brain={exp['brain']} ({len(exp['seeds'])} tasks x {exp['reps']})")
    for c in ["memory", "attempt", "success", "reward", "steps", "invalid", "lessons in prompt"]:
        t.add_column(c, justify="right")
    for cond, data in exp["conditions"].items():
        for i, r in enumerate(data["by_repetition"]):
            t.add_row(cond, str(i + 1), f"{r['success']:.2f}", f"{r['reward']:.2f}", f"{r['steps']:.1f}",
                      f"{r['invalid']:.1f}", f"{r['lessons_injected']:.1f}")
    return t
