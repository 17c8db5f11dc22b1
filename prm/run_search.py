"""Run PRM-guided search episodes and write them as trajectories (with per-step promise/progress).

`python -m prm.search` runs `main` below (through `prm/search/__main__.py`, so the library
`prm.search` never imports its driver); `run_search` holds the work so tests can call it with a plain dict.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from rich.console import Console
from rich.table import Table

from agents.core.factory import build_brain, make_env
from agents.trajectories.store import TRAJECTORIES, TrajectoryStore
from prm.dense import annotate
from prm.model import PRMModel
from prm.policy import BrainSampler, to_episode
from prm.scoring import PRMScorer
from prm.search import SearchResult, beam_search, best_of_n, rerank

log = logging.getLogger(__name__)


class SearchConfig(BaseModel):
    """`python -m prm.search` keys: the PRM, the strategy and its budget, the env / brain / agent groups."""

    model_config = ConfigDict(extra="allow")

    model: str | None = None  # a saved PRM; None only for strategy=random
    strategy: Literal["beam", "bon", "rerank", "random"] = "beam"
    n: int = Field(4, ge=1)  # beams kept (beam) / trajectories (bon, random)
    m: int = Field(4, ge=1)  # actions sampled per node (beam, rerank)
    temperature: float = 0.7  # the paper samples at 0.7 at test time
    episodes: int = Field(5, ge=1)
    seed: int = 0
    max_steps: int | None = None
    out: str
    batch_size: int = 16
    env: dict[str, Any]
    brain: dict[str, Any]
    agent: dict[str, Any] = Field(default_factory=dict)


def run_search(cfg: dict[str, Any], console: Console | None = None) -> list[SearchResult]:
    """Run `episodes` searches, write each chosen trajectory (PRM-annotated) to `out`, print a summary table."""
    c = SearchConfig.model_validate(cfg)
    console = console or Console(stderr=True)
    if c.strategy != "random" and not c.model:
        raise ValueError(f"strategy={c.strategy} needs model=<a PRM saved by python -m prm.train>")
    scorer = PRMScorer(PRMModel.from_pretrained(c.model), batch_size=c.batch_size) if c.model else None
    env = make_env(c.env)
    brain = build_brain(c.brain)
    agent_cfg = {k: v for k, v in c.agent.items() if k != "temperature"}
    sampler = BrainSampler(brain, temperature=c.temperature, agent_cfg=agent_cfg)
    max_steps = int(c.max_steps or c.env.get("max_steps", 30))
    store = TrajectoryStore(Path(c.out) / TRAJECTORIES)
    env_name = c.env.get("name") or c.env["id"]
    results = []
    for i in range(c.episodes):
        seed = c.seed + i
        t0 = time.time()
        kw = dict(seed=seed, max_steps=max_steps, reset_seed=seed)
        if c.strategy == "beam":
            res = beam_search(env, sampler, scorer, n=c.n, m=c.m, **kw)
        elif c.strategy == "rerank":
            res = rerank(env, sampler, scorer, m=c.m, **kw)
        else:
            res = best_of_n(env, sampler, scorer if c.strategy == "bon" else None, n=c.n, **kw)
        ep = to_episode(res.best, episode_id=f"{env_name}-{c.strategy}-{seed}", env_name=env_name, env_id=c.env["id"],
                        seed=seed, brain=brain.name, model=brain.model, env_kwargs=dict(c.env.get("kwargs") or {}),
                        meta={"search": res.meta | {"samples": res.samples, "env_steps": res.env_steps, "scored": res.scored}},
                        success_threshold=float(c.env.get("success_threshold", 1.0)), started_at=t0)
        if scorer is not None:
            ep = annotate(scorer, [ep])[0]
        store.append(ep)
        results.append(res)
        log.info("episode %d: reward %.3f after %d steps (%d samples)", seed, res.best.outcome(), len(res.best.steps), res.samples)
    env.close()
    console.print(_table(c, results))
    console.print(f"trajectories: {Path(c.out) / TRAJECTORIES}")
    return results


def _table(c: SearchConfig, results: list[SearchResult]) -> Table:
    t = Table(title=f"{c.strategy} (n={c.n}, m={c.m}) over {len(results)} episodes")
    t.add_column("metric")
    t.add_column("value", justify="right")
    n = max(1, len(results))
    rows = [("success rate", f"{sum(r.best.outcome() >= 1.0 for r in results) / n:.1%}"),
            ("mean score", f"{sum(r.best.outcome() for r in results) / n:.3f}"),
            ("policy samples / episode", f"{sum(r.samples for r in results) / n:.1f}"),
            ("PRM-scored nodes / episode", f"{sum(r.scored for r in results) / n:.1f}")]
    for k, v in rows:
        t.add_row(k, v)
    return t


def main() -> None:
    """`python -m prm.search ...` (Hydra; see prm/conf/search.yaml)."""
    import sys

    import hydra
    from omegaconf import DictConfig, OmegaConf

    @hydra.main(version_base="1.3", config_path=str(Path(__file__).resolve().parent / "conf"), config_name="search")
    def _run(cfg: DictConfig) -> None:
        from agents.brains.base import BrainError
        from agents.core.factory import ConfigError

        plain = OmegaConf.to_container(cfg, resolve=True)
        plain.pop("log_level", None)  # type: ignore[union-attr]
        try:
            run_search(plain)  # type: ignore[arg-type]
        except (ConfigError, BrainError, ValueError, FileNotFoundError) as e:
            print(f"error: {e}", file=sys.stderr)
            sys.exit(2)

    import agents

    conf = Path(agents.__file__).resolve().parent / "conf"
    if not any(a.startswith("hydra.searchpath") for a in sys.argv[1:]):
        sys.argv.append(f"hydra.searchpath=[file://{conf}]")
    _run()
