"""Run PRM-guided search episodes and write them as trajectories (with per-step promise/progress).

`python -m prm.search` runs `main` below (through `prm/search/__main__.py`, so the library
`prm.search` never imports its driver); `run_search` holds the work so tests can call it with a plain dict.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import Field
from rich.console import Console
from rich.table import Table

from agents.cli import hydra_command
from agents.config import SEED_MAX, AgentInEnvConfig, ConfigError, LogLevel, validate_config
from agents.core.factory import build_brain, make_env
from agents.core.loop import is_success
from agents.engine import metric_table
from agents.resolve import brain_with_defaults, resolve_brain, resolve_env, resolve_perception
from agents.trajectories.store import TRAJECTORIES, TrajectoryStore
from envs.util import atomic_write_text
from prm.dense import annotate
from prm.model import PRMModel
from prm.policy import BrainSampler, Node, to_episode
from prm.scoring import PRMScorer
from prm.search import SearchResult, beam_search, best_of_n, rerank

log = logging.getLogger(__name__)


class SearchConfig(AgentInEnvConfig):
    """`python -m prm.search` keys: the PRM, the strategy and its budget, the env / brain / agent groups."""

    model: str | None = None  # a saved PRM; None only for strategy=random
    strategy: Literal["beam", "bon", "rerank", "random", "vote"] = "beam"  # vote: per step, the most drawn of m
    n: int = Field(4, ge=1)  # beams kept (beam) / trajectories (bon, random)
    m: int = Field(4, ge=1)  # actions sampled per node (beam, rerank)
    # beam, rerank: + prior * log share of the m draws that proposed a child; 0.3 was chosen on validation goals and
    # beats Best-of-N random at 4x4 and 8x8 where the PRM alone loses at 8x8 (docs/prm.md); prior=0 = the paper's
    prior: float = Field(0.3, ge=0.0)
    temperature: float = Field(0.7, ge=0.0)  # the paper samples at 0.7 at test time
    # true: every draw reads the transcript of the path's earlier turns, as the policy does in agents.run;
    # false: a memoryless one-turn prompt per draw (the sampler tables before issue 42 were measured with)
    history: bool = True
    episodes: int = Field(5, ge=1)  # episode i resets with seed = seed + i
    seed: int = Field(0, ge=0, le=SEED_MAX)
    max_steps: int | None = Field(None, ge=1)  # None = env.max_steps
    out: str
    batch_size: int = Field(16, ge=1)  # PRM scoring batch
    # true: keep the episodes `out` already holds (same ids: strategy and seed) and play only the missing ones; a
    # rerun whose other keys differ from `out/search.json` is refused (two searches would mix in one folder)
    resume: bool = False
    log_level: LogLevel = "INFO"


MANIFEST = "search.json"
NOT_PINNED = {"episodes", "resume", "log_level", "batch_size"}  # keys a resumed search may change


def pin_config(c: SearchConfig) -> set[str]:
    """Write `out/search.json` (the keys that shape the episodes) on a first run; on `resume=true` refuse other keys
    and return the episode ids already stored. Without `resume`, an `out` that holds episodes is refused."""
    out = Path(c.out)
    plain = {k: v for k, v in c.model_dump(mode="json").items() if k not in NOT_PINNED}
    stored = {ep.episode_id for ep in TrajectoryStore(out / TRAJECTORIES).read()}
    path = out / MANIFEST
    if stored and not c.resume:
        raise ConfigError(
            f"{out} already holds {len(stored)} searched episodes; resume=true plays only the missing ones, "
            "or choose another out=..."
        )
    if c.resume and path.exists():
        try:
            before = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            raise ConfigError(f"{path} is corrupt ({e}); restore it, or delete it to adopt this config") from None
        changed = sorted(k for k in set(before) | set(plain) if before.get(k) != plain.get(k))
        if changed:
            raise ConfigError(
                f"{out} holds a search made with other settings (changed: {', '.join(changed)}); rerun with the "
                "original settings to resume it, or choose another out=..."
            )
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(plain, indent=2, default=str))
    return stored


def run_search(cfg: dict[str, Any] | SearchConfig, console: Console | None = None) -> list[SearchResult]:
    """Run `episodes` searches, write each chosen trajectory (PRM-annotated) to `out`, print a summary table."""
    c: SearchConfig = validate_config(SearchConfig, cfg)
    console = console or Console(stderr=True)
    if c.strategy not in ("random", "vote") and not c.model:
        raise ConfigError(f"strategy={c.strategy} needs model=<a PRM saved by python -m prm.train>")
    scorer = PRMScorer(PRMModel.from_pretrained(c.model), batch_size=c.batch_size) if c.model else None
    env_cfg = resolve_env(c.env)  # the step limit, the adapter and the prompt resolved once, as a run's
    max_steps = c.max_steps or env_cfg.max_steps
    env = make_env(env_cfg, max_episode_steps=max_steps)
    env_name = env_cfg.name or env_cfg.id
    brain_cfg = brain_with_defaults(c.brain)
    agent = resolve_perception(c.agent, brain_cfg, env_name)
    brain = build_brain(resolve_brain(brain_cfg, env_name, agent.perception.turn_style))
    agent_cfg = agent.model_dump(exclude={"temperature"})
    sampler = BrainSampler(brain, temperature=c.temperature, agent_cfg=agent_cfg, history=c.history)
    stored = pin_config(c)
    store = TrajectoryStore(Path(c.out) / TRAJECTORIES)
    results = []
    for i in range(c.episodes):
        seed = c.seed + i
        if f"{env_name}-{c.strategy}-{seed}" in stored:
            continue  # resume=true: searched by an earlier run
        t0 = time.time()
        kw: dict[str, Any] = dict(seed=seed, max_steps=max_steps, reset_seed=seed)
        if c.strategy == "beam":
            assert scorer is not None  # beam and rerank need model= (checked above)
            res = beam_search(env, sampler, scorer, n=c.n, m=c.m, prior=c.prior, **kw)
        elif c.strategy == "rerank":
            assert scorer is not None
            res = rerank(env, sampler, scorer, m=c.m, prior=c.prior, **kw)
        elif c.strategy == "vote":  # unguided: no PRM, the policy's most frequent proposal
            res = rerank(env, sampler, None, m=c.m, prior=1.0, **kw)
        else:
            res = best_of_n(env, sampler, scorer if c.strategy == "bon" else None, n=c.n, **kw)
        ep = to_episode(
            res.best,
            episode_id=f"{env_name}-{c.strategy}-{seed}",
            env_name=env_name,
            env_id=c.env.id,
            seed=seed,
            brain=brain.name,
            model=brain.model,
            env_kwargs=dict(c.env.kwargs),
            meta={
                "search": res.meta
                | {"samples": res.samples, "env_steps": res.env_steps, "scored": res.scored, "history": c.history}
            },
            success_threshold=c.env.success_threshold,
            started_at=t0,
        )
        if scorer is not None:
            ep = annotate(scorer, [ep])[0]
        store.append(ep)
        results.append(res)
        log.info(
            "episode %d: reward %.3f after %d steps (%d samples)",
            seed,
            res.best.outcome(),
            len(res.best.steps),
            res.samples,
        )
    env.close()
    console.print(_table(c, results))
    console.print(f"trajectories: {Path(c.out) / TRAJECTORIES}")
    return results


def solved(node: Node, c: SearchConfig) -> bool:
    """The runner's success rule (`is_success`) at a real end; a cut is a failure."""
    return node.terminated and is_success(node.outcome(), node.info, c.env.success_threshold)


def _table(c: SearchConfig, results: list[SearchResult]) -> Table:
    n = max(1, len(results))
    return metric_table(
        f"{c.strategy} (n={c.n}, m={c.m}) over {len(results)} episodes",
        [
            ("success rate", f"{sum(solved(r.best, c) for r in results) / n:.1%}"),
            ("mean score", f"{sum(r.best.outcome() for r in results) / n:.3f}"),
            ("policy samples / episode", f"{sum(r.samples for r in results) / n:.1f}"),
            ("PRM-scored nodes / episode", f"{sum(r.scored for r in results) / n:.1f}"),
        ],
    )


def job(plain: dict[str, Any]) -> int:
    """`python -m prm.search` after Hydra."""
    run_search(plain)
    return 0


AGENT_CONF = Path(__file__).resolve().parents[1] / "agents" / "conf"  # the env / brain / agent groups of agents.run
main = hydra_command(
    str(Path(__file__).resolve().parent / "conf"),
    "search",
    job,
    model=SearchConfig,
    schemas={"search_schema": SearchConfig},
    search_path=[AGENT_CONF],
)
