"""`python -m societies.run scenario=<opinion|diffusion|cooperation> agents=N rounds=R seed=S out=DIR`.

Runs a rule society on the fast path (vectorised moves, no text for agents nobody records) and
writes, in `out`:

- `events.sqlite` (or `events.parquet`): one row per move (round, agent, action, value), and the
  metrics per round;
- `metrics.json`: the metric time series (`societies.metrics.MetricSeries`);
- `metrics.png`, `network.png` (the network coloured by each agent's final state), and for
  opinions `opinions.png` (sampled agents' opinion paths);
- `trajectories.jsonl`: one `EpisodeRecord` per recorded agent (agents 0..trajectory_agents-1 that
  acted at least once), in the project's trajectory schema, so the exports and the PRM read them:
  a step per round the agent acted; its observation is what the agent saw at its next decision;
- `summary.json`: config, rounds, final metrics, timings.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agents.cli import hydra_command
from agents.config import validate_config
from agents.core.loop import episode_summary
from agents.trajectories.schema import EpisodeRecord, StepRecord
from agents.trajectories.store import TRAJECTORIES, TrajectoryStore, atomic_write_text
from societies.config import SocietyRunConfig, build
from societies.env import RoundResult, SocietyEnv, agent_id
from societies.metrics import MetricSeries
from societies.rules import Rule

log = logging.getLogger("societies.run")
PATH_AGENTS = 100  # agents whose state is kept every round for the paths plot
OUTPUT_KEYS = {"out", "log_level", "plots", "event_log", "trajectory_agents"}  # keys that change no agent's behaviour


@dataclass
class _Track:
    """One recorded agent's episode in the making."""

    initial_observation: str = ""
    steps: list[StepRecord] = field(default_factory=list)
    pending: dict[str, Any] | None = None  # the last step, waiting for the agent's next observation
    started_at: float = 0.0


class TrajectoryRecorder:
    """Per-agent episodes in the trajectory schema for agents 0..k-1 (text is rendered only for them)."""

    def __init__(self, env: SocietyEnv, k: int) -> None:
        self.env = env
        self.k = min(k, env.scenario.n)
        self.tracks = [_Track(started_at=time.time()) for _ in range(self.k)]

    def before(self) -> np.ndarray:
        """Render the current observation of the recorded agents about to act; returns them."""
        sc = self.env.scenario
        acting = sc.active[sc.active < self.k]
        for i in acting:
            tr, obs = self.tracks[i], sc.observe(int(i))
            if tr.pending is not None:
                self._close(tr, obs, terminated=False, truncated=False)
            elif not tr.steps:
                tr.initial_observation = obs
        return acting

    def after(self, acting: np.ndarray, result: RoundResult) -> None:
        """Open a step for each recorded agent that moved; add rewards to open steps."""
        sc = self.env.scenario
        acting_set = set(acting.tolist())
        moved = dict(zip(result.moved.idx.tolist(), zip(result.moved.code.tolist(), result.moved.values().tolist())))
        for i, tr in enumerate(self.tracks):
            if tr.pending is not None and i not in acting_set:
                tr.pending["reward"] += float(result.rewards[i])
        for i in acting.tolist():
            code, value = moved.get(i, (0, float("nan")))
            text = sc.move_text(i, code, value)
            self.tracks[i].pending = {
                "action": text,
                "reward": float(result.rewards[i]),
                "info": {"round": result.round - 1, "error": result.errors.get(i)},
            }

    def _close(self, tr: _Track, obs: str, terminated: bool, truncated: bool) -> None:
        p = tr.pending
        assert p is not None
        error = p["info"].pop("error", None)
        tr.steps.append(
            StepRecord(
                index=len(tr.steps),
                raw_output=p["action"],
                action=p["action"],
                env_error=error,
                observation=obs,
                reward=p["reward"],
                terminated=terminated,
                truncated=truncated,
                info=p["info"],
            )
        )
        tr.pending = None

    def finish(self, cfg: SocietyRunConfig, rule: Rule, terminated: bool, truncated: bool) -> list[EpisodeRecord]:
        """Close every open step with the final observation and build the records (agents that never acted are skipped)."""
        sc = self.env.scenario
        chash = hashlib.sha256(cfg.model_dump_json(exclude=OUTPUT_KEYS).encode()).hexdigest()[
            :12
        ]  # what shapes behaviour only
        out = []
        now = time.time()
        for i, tr in enumerate(self.tracks):
            if tr.pending is not None:
                self._close(tr, sc.observe(i), terminated, truncated)
            if not tr.steps:
                continue
            reward, success = sc.agent_outcome(i)
            outcome, stats = episode_summary(
                tr.steps,
                last_reward=reward,
                terminated=terminated,
                truncated=truncated,
                truncation_reason="max_steps" if truncated else None,
                success_threshold=float("inf"),
                wall_time_s=now - tr.started_at,
            )
            outcome.success = success
            out.append(
                EpisodeRecord(
                    episode_id=f"{cfg.scenario}-{cfg.seed}-{agent_id(i)}",
                    env=f"society-{cfg.scenario}",
                    env_id=f"societies/{cfg.scenario}-v0",
                    env_kwargs={"agents": cfg.agents, "rounds": cfg.rounds},
                    seed=cfg.seed,
                    instruction=sc.instruction(i),
                    initial_observation=tr.initial_observation,
                    brain=f"rule:{rule.name}",
                    config_hash=chash,
                    steps=tr.steps,
                    outcome=outcome,
                    stats=stats,
                    started_at=tr.started_at,
                    finished_at=now,
                    meta={"agent": agent_id(i), "scenario": cfg.scenario, "society_size": cfg.agents},
                )
            )
        return out


class EventLog:
    """Every move and every round's metrics, in SQLite (written per round) or Parquet (written at the end)."""

    def __init__(self, out: Path, kind: str, move_names: list[str]) -> None:
        self.kind = kind
        self.names = np.array(move_names, dtype=object)
        self.path = out / f"events.{kind}"
        self.path.unlink(missing_ok=True)
        self._chunks: list[dict[str, np.ndarray]] = []
        self._metrics: list[tuple[int, str, float]] = []
        if kind == "sqlite":
            self.db = sqlite3.connect(self.path)
            self.db.execute("CREATE TABLE events (round INTEGER, agent INTEGER, action TEXT, value REAL)")
            self.db.execute("CREATE TABLE metrics (round INTEGER, name TEXT, value REAL)")

    def add(self, round: int, result: RoundResult | None, metrics: dict[str, float]) -> None:
        rows = [(round, k, float(v)) for k, v in metrics.items()]
        if self.kind == "sqlite":
            if result is not None and result.moved.idx.size:
                m = result.moved
                vals = [None if np.isnan(v) else v for v in m.values().tolist()]
                self.db.executemany(
                    "INSERT INTO events VALUES (?, ?, ?, ?)",
                    zip([round - 1] * m.idx.size, m.idx.tolist(), self.names[m.code].tolist(), vals),
                )
            self.db.executemany("INSERT INTO metrics VALUES (?, ?, ?)", rows)
            self.db.commit()
        else:
            if result is not None and result.moved.idx.size:
                m = result.moved
                self._chunks.append(
                    {"round": np.full(m.idx.size, round - 1), "agent": m.idx, "code": m.code, "value": m.values()}
                )
            self._metrics.extend(rows)

    def close(self) -> None:
        if self.kind == "sqlite":
            self.db.close()
            return
        import pyarrow as pa
        import pyarrow.parquet as pq

        cols = {
            k: np.concatenate([c[k] for c in self._chunks]) if self._chunks else np.empty(0)
            for k in ("round", "agent", "code", "value")
        }
        table = pa.table(
            {
                "round": cols["round"].astype(np.int64),
                "agent": cols["agent"].astype(np.int64),
                "action": self.names[cols["code"].astype(np.int64)].tolist(),
                "value": cols["value"].astype(np.float64),
            }
        )
        pq.write_table(table, self.path)
        r, n, v = zip(*self._metrics) if self._metrics else ((), (), ())
        pq.write_table(
            pa.table({"round": list(r), "name": list(n), "value": list(v)}), self.path.with_name("metrics.parquet")
        )


def run_society(cfg: SocietyRunConfig) -> dict[str, Any]:
    """Run one society and write its outputs; returns the summary."""
    t0 = time.perf_counter()
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    env, rule = build(cfg)
    sc = env.scenario
    t_build = time.perf_counter() - t0
    env.start(cfg.seed)
    rng = np.random.default_rng([cfg.seed, 0xB7])  # the rules' own stream
    series = MetricSeries(scenario=cfg.scenario, meta={"agents": sc.n, "seed": cfg.seed})
    events = EventLog(out, cfg.event_log, sc.move_names())
    recorder = TrajectoryRecorder(env, cfg.trajectory_agents)
    path_idx = np.linspace(0, sc.n - 1, min(PATH_AGENTS, sc.n)).astype(int)
    paths = [sc.node_state()[path_idx]]
    first = sc.metrics()
    series.add(0, first)
    events.add(0, None, first)
    result: RoundResult | None = None
    every = max(1, cfg.rounds // 10)
    while True:
        acting = recorder.before()
        moves = rule.decide(sc, sc.active, rng)
        result = env.step_moves(moves)
        recorder.after(acting, result)
        m = sc.metrics()
        series.add(result.round, m)
        events.add(result.round, result, m)
        paths.append(sc.node_state()[path_idx])
        if result.round % every == 0 or result.terminated or result.truncated:
            log.info("round %d: %s", result.round, ", ".join(f"{k}={v:.4g}" for k, v in m.items()))
        if result.terminated or result.truncated:
            break
    t_run = time.perf_counter() - t0 - t_build
    events.close()
    records = recorder.finish(cfg, rule, result.terminated, result.truncated)
    (out / TRAJECTORIES).unlink(missing_ok=True)
    (out / TRAJECTORIES).touch()  # present even when no recorded agent acted (a cascade that died at once)
    store = TrajectoryStore(out / TRAJECTORIES)
    for rec in records:
        store.append(rec)
    series.write(out / "metrics.json")
    plots = []
    if cfg.plots:
        from societies.plots import plot_metrics, plot_network, plot_paths

        plots.append(plot_metrics(series, out / "metrics.png").name)
        if hasattr(sc, "graph") or cfg.scenario == "cooperation":
            from societies.graphs import complete_graph

            graph = getattr(sc, "graph", None) or complete_graph(sc.n)
            plots.append(
                plot_network(graph, sc.node_state(), out / "network.png", f"{cfg.scenario}: final state", cfg.seed).name
            )
        if cfg.scenario == "opinion":
            plots.append(
                plot_paths(series.rounds, np.array(paths), out / "opinions.png", "opinions of sampled agents").name
            )
    summary = {
        "config": cfg.model_dump(),
        "rounds_played": result.round,
        "terminated": result.terminated,
        "truncated": result.truncated,
        "final_metrics": series.last(),
        "trajectories": len(records),
        "plots": plots,
        "build_s": round(t_build, 3),
        "run_s": round(t_run, 3),
        "wall_s": round(time.perf_counter() - t0, 3),
    }
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=1, default=str))
    log.info("%s: %d rounds, %d trajectories, outputs in %s", cfg.scenario, result.round, len(records), out)
    return summary


def job(plain: dict[str, Any]) -> int:
    """`python -m societies.run` after Hydra."""
    run_society(validate_config(SocietyRunConfig, plain))
    return 0


main = hydra_command(str(Path(__file__).parent / "conf"), "run", job, schemas={"society_schema": SocietyRunConfig})


if __name__ == "__main__":
    main()
