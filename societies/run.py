"""`python -m societies.run scenario=<opinion|diffusion|cooperation|public_goods|...> agents=N rounds=R seed=S out=DIR`.

Runs a society: rule agents on the fast path (vectorised moves, no text for agents nobody records),
brain agents per seat through the Agent, and writes, in `out`:

- `events.sqlite` (or `events.parquet`): one row per move (round, agent, action, value), the
  metrics per round, and the scenario's state of agents 0..state_agents-1 after each round
  (`states`: round, agent, value: its `node_state`, e.g. an opinion or adopted 0/1; what the value
  means is the `meta` row `state`; Parquet: `states.parquet`);
- `metrics.json`: the metric time series (`societies.metrics.MetricSeries`);
- `metrics.png`, `network.png` (the network coloured by each agent's final state), and for
  opinions `opinions.png` (sampled agents' opinion paths);
- `trajectories.jsonl`: one `EpisodeRecord` per recorded agent (agents 0..trajectory_agents-1 that
  acted at least once), in the project's trajectory schema, so the exports and the PRM read them:
  a step per round the agent acted; its observation is what the agent saw at its next decision;
- `summary.json`: config, rounds, final metrics, timings (and the brain seats' agent-steps/s and cache counts);
- `report.json`: the scenario's own account when it has one (the town: who heard the news from whom,
  who came to the party, every utterance); `reflections.json`: brain seats' reflections and lessons
  (reflective memories; the end of the run is the end of their episode);
- `interviews.jsonl`: with `interview.questions=[...]`, each interviewed agent's answer to each
  question after every `interview.every` rounds and after the last (`societies.interviews`), and
  every interview a caller asks a `SocietyRun`;
- `llm_cache.sqlite`: every brain call of the seats (`societies.cache`), so a rerun replays it;
- `checkpoint.pkl` while running: the state after the last finished round (`societies.checkpoint`).

With `brain=<name>` (not `rule`), some seats are `agents.core.agent.Agent`s (`societies.seats`):
their decisions are gathered per round under a semaphore, the rule plays the rest. `SocietyRun`
steps a run round by round and interviews its agents; `resume=true` continues after `kill -9`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import agents
from agents.cli import hydra_command
from agents.config import ConfigError, validate_config
from agents.core.loop import decision_fields as core_decision_fields
from agents.core.loop import episode_summary
from agents.resolve import brain_with_defaults
from agents.trajectories.schema import EpisodeRecord, StepRecord
from agents.trajectories.store import TRAJECTORIES, TrajectoryStore
from envs.util import atomic_write_text
from societies.budget import check_memory, human
from societies.cache import CACHE_FILE, CallCache
from societies.checkpoint import clear_checkpoint, load_checkpoint, save_checkpoint
from societies.config import RULE, SocietyRunConfig, build
from societies.env import RoundResult, SocietyEnv, agent_id
from societies.interviews import MAX_ANSWER_CHARS, InterviewLog, InterviewRecord
from societies.metrics import MetricSeries
from societies.rules import Rule
from societies.seats import BrainSeats, Turn, build_brains, choose_seats

log = logging.getLogger("societies.run")
PATH_AGENTS = 100  # agents whose state is kept every round for the paths plot
OUTPUT_KEYS = {
    "out",
    "log_level",
    "plots",
    "event_log",
    "trajectory_agents",
    "interview",
    "state_agents",
}  # keys that change no agent's behaviour
STATIC_ATTRS = {"graph", "personas"}  # built from the config and seed: not in checkpoints (1M agents' edges)
RUN_KEYS = {"resume", "max_concurrency", "brain_pool", "cache", "checkpoint_every", "keep_messages"}  # nor do these


@dataclass
class _Track:
    """One recorded agent's episode in the making."""

    initial_observation: str = ""
    steps: list[StepRecord] = field(default_factory=list)
    pending: dict[str, Any] | None = None  # the last step, waiting for the agent's next observation
    started_at: float = 0.0


def decision_fields(turn: Turn, keep_messages: bool) -> dict[str, Any]:
    """A brain seat's decision as StepRecord fields, recorded as `agents.core.loop` records a step."""
    parsed = turn.decision.parsed
    return {
        **core_decision_fields(turn.decision, keep_messages),
        "parse_error": parsed.error if parsed.action is None else None,
    }


class TrajectoryRecorder:
    """Per-agent episodes in the trajectory schema for agents 0..k-1 and any `extra` agents (brain seats).

    Text is rendered only for them."""

    def __init__(self, env: SocietyEnv, k: int, extra: np.ndarray | None = None) -> None:
        self.env = env
        self.k = min(k, env.scenario.n)
        ids = np.arange(self.k) if extra is None else np.union1d(np.arange(self.k), np.asarray(extra, np.int64))
        self.ids = ids.astype(np.int64)
        self.recorded = np.zeros(env.scenario.n, dtype=bool)
        self.recorded[self.ids] = True
        now = time.time()
        self.tracks = {int(i): _Track(started_at=now) for i in self.ids}

    def before(self) -> np.ndarray:
        """Render the current observation of the recorded agents about to act; returns them."""
        sc = self.env.scenario
        acting = sc.active[self.recorded[sc.active]]
        for i in acting.tolist():
            tr, obs = self.tracks[i], sc.observe(i)
            if tr.pending is not None:
                self._close(tr, obs, terminated=False, truncated=False)
            elif not tr.steps:
                tr.initial_observation = obs
        return acting

    def after(self, acting: np.ndarray, result: RoundResult, turns: dict[int, Turn] | None = None,
              keep_messages: bool = False) -> None:  # fmt: skip
        """Open a step for each recorded agent that moved; add rewards to open steps.

        A brain seat's step (in `turns`) carries its decision: raw output, thought, candidates, tokens."""
        sc = self.env.scenario
        turns = turns or {}
        acting_set = set(acting.tolist())
        moved = dict(zip(result.moved.idx.tolist(), zip(result.moved.code.tolist(), result.moved.values().tolist())))
        for i, tr in self.tracks.items():
            if tr.pending is not None and i not in acting_set:
                tr.pending["reward"] += float(result.rewards[i])
        for i in acting.tolist():
            turn = turns.get(i)
            if turn is not None:
                fields = decision_fields(turn, keep_messages)
                text = turn.action
            else:
                code, value = moved.get(i, (0, float("nan")))
                text = sc.move_text(i, code, value)
                fields = {"raw_output": text}
            self.tracks[i].pending = {
                "action": text,
                "fields": fields,
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
                **p["fields"],
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

    def finish(
        self,
        cfg: SocietyRunConfig,
        rule: Rule,
        terminated: bool,
        truncated: bool,
        brains: dict[int, str] | None = None,
    ) -> list[EpisodeRecord]:
        """Close every open step with the final observation and build the records (agents that never acted are skipped).

        `brains[i]` names agent i's brain (a brain seat); the others are `rule:<name>`."""
        sc = self.env.scenario
        brains = brains or {}
        chash = config_hash(cfg)  # what shapes behaviour only
        out = []
        now = time.time()
        for i, tr in self.tracks.items():
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
                    brain=brains.get(i, f"rule:{rule.name}"),
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
    """Every move and every round's metrics, in SQLite (written per round) or Parquet (written at the end).

    `resume_round`: continue the log of a run resumed after that round (later rows are dropped;
    the Parquet buffer comes from the checkpoint)."""

    def __init__(
        self,
        out: Path,
        kind: str,
        move_names: list[str],
        resume_round: int | None = None,
        state_name: str = "state",
    ) -> None:
        self.kind = kind
        self.state_name = state_name
        self.names = np.array(move_names, dtype=object)
        self.path = out / f"events.{kind}"
        if resume_round is None or kind != "sqlite" or not self.path.exists():
            self.path.unlink(missing_ok=True)
            resume_round = None
        self._chunks: list[dict[str, np.ndarray]] = []
        self._metrics: list[tuple[int, str, float]] = []
        self._states: list[tuple[int, np.ndarray]] = []
        if kind == "sqlite":
            self.db = sqlite3.connect(self.path)
            self.db.execute("CREATE TABLE IF NOT EXISTS events (round INTEGER, agent INTEGER, action TEXT, value REAL)")
            self.db.execute("CREATE TABLE IF NOT EXISTS metrics (round INTEGER, name TEXT, value REAL)")
            self.db.execute("CREATE TABLE IF NOT EXISTS states (round INTEGER, agent INTEGER, value REAL)")
            self.db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('state', ?)", (state_name,))
            if resume_round is not None:  # rows of the round that was cut short (moves of round r are logged as r - 1)
                self.db.execute("DELETE FROM events WHERE round >= ?", (resume_round,))
                self.db.execute("DELETE FROM metrics WHERE round > ?", (resume_round,))
                self.db.execute("DELETE FROM states WHERE round > ?", (resume_round,))
            self.db.commit()

    def state(self) -> dict[str, Any]:
        """The Parquet buffer (SQLite rows are on disk already)."""
        return (
            {"chunks": self._chunks, "metrics": self._metrics, "states": self._states} if self.kind == "parquet" else {}
        )

    def load_state(self, state: dict[str, Any]) -> None:
        if self.kind == "parquet" and state:
            self._chunks, self._metrics = state["chunks"], state["metrics"]
            self._states = state.get("states", [])

    def add(
        self, round: int, result: RoundResult | None, metrics: dict[str, float], states: np.ndarray | None = None
    ) -> None:
        """Log a round: its moves (as round - 1), its metrics and `states` (agents 0..k-1's state after it)."""
        rows = [(round, k, float(v)) for k, v in metrics.items()]
        if states is not None and states.size:
            if self.kind == "sqlite":
                vals = [None if np.isnan(v) else v for v in np.asarray(states, np.float64).tolist()]
                self.db.executemany(
                    "INSERT INTO states VALUES (?, ?, ?)", zip([round] * len(vals), range(len(vals)), vals)
                )
            else:
                self._states.append((round, np.asarray(states, np.float64).copy()))
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
        rs = [np.full(v.size, r) for r, v in self._states]
        vs = [v for _, v in self._states]
        pq.write_table(
            pa.table(
                {
                    "round": np.concatenate(rs).astype(np.int64) if rs else np.empty(0, np.int64),
                    "agent": np.concatenate([np.arange(v.size) for v in vs]).astype(np.int64)
                    if vs
                    else np.empty(0, np.int64),
                    "value": np.concatenate(vs) if vs else np.empty(0),
                },
                metadata={"state": self.state_name},
            ),
            self.path.with_name("states.parquet"),
        )


def scenario_state(sc: Any) -> dict[str, Any]:
    """A scenario's changing state: its attributes but the static ones `build(cfg)` recreates (graph, personas)."""
    return {k: v for k, v in vars(sc).items() if k not in STATIC_ATTRS}


def config_hash(cfg: SocietyRunConfig) -> str:
    """Hash of the keys that shape behaviour (not where outputs go, how fast calls run, or whether to resume)."""
    # not `agents.resolve.resolve`/`run_hash`: they take a RunConfig (env, episodes), and existing checkpoints hold this
    # 12-character hash of the society config less OUTPUT_KEYS/RUN_KEYS; the brain's defaults come from the same helper
    # without seats the seats' keys shape nothing: left out, so rule runs keep the hashes they had before these keys
    seatless = {"seat_actions"} if cfg.brain.name == RULE else set()
    if cfg.brain.name != RULE:  # `brain=x` (its preset's defaults) and `{"name": "x"}` from code are one config
        cfg = cfg.model_copy(update={"brain": brain_with_defaults(cfg.brain)})
    return hashlib.sha256(cfg.model_dump_json(exclude=OUTPUT_KEYS | RUN_KEYS | seatless).encode()).hexdigest()[:12]


class SocietyRun:
    """One society run, round by round: the env, the rule, the brain seats, outputs and checkpoints.

    `run()` plays it to the end and writes the outputs (`run_society`). `interview(agent, question)`
    asks any agent a question, at any point, without writing to its memory. `SocietyRun(cfg)` with
    `cfg.resume` continues from the checkpoint in `cfg.out`."""

    def __init__(self, cfg: SocietyRunConfig) -> None:
        t0 = time.perf_counter()
        self.cfg = cfg
        self.out = Path(cfg.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.env, self.rule = build(cfg)
        self.sc = self.env.scenario
        self.seats: BrainSeats | None = None
        self.cache = CallCache(
            self.out / CACHE_FILE if cfg.brain.name != RULE else None, cfg.cache if cfg.brain.name != RULE else "off"
        )
        if cfg.brain.name != RULE:
            self.env.offer_choices = cfg.seat_actions == "ranked"
            seat_idx = choose_seats(self.sc.n, cfg.llm_fraction, cfg.llm_agents, cfg.seed)
            brains = build_brains(cfg.brain, cfg.brain_pool)
            self.seats = BrainSeats(
                self.env,
                self.rule,
                seat_idx,
                brains,
                self.cache,
                agent_cfg=cfg.agent,
                memory_cfg=cfg.memory,
                seed=cfg.seed,
                max_concurrency=cfg.max_concurrency,
            )
        self.t_build = time.perf_counter() - t0
        self._loop: asyncio.AbstractEventLoop | None = None
        self.brain_s = 0.0  # wall time of the brain seats' decisions
        self.brain_steps = 0
        self.brain_tokens = [0, 0]  # tokens in, out of the seats' decisions
        self.interviews_asked = 0  # answers appended to interviews.jsonl by this process
        self.resumed_from: int | None = None
        ck = load_checkpoint(self.out) if cfg.resume else None
        if ck is not None and ck["config_hash"] != config_hash(cfg):
            raise ConfigError(
                f"resume=true: the checkpoint in {self.out} is from another config; rerun with that config or another out"
            )
        if ck is None:
            clear_checkpoint(self.out)
        self._start(ck)

    # -- lifecycle -------------------------------------------------------------------------------
    def _start(self, ck: dict[str, Any] | None) -> None:
        cfg, sc = self.cfg, self.sc
        self.path_idx = np.linspace(0, sc.n - 1, min(PATH_AGENTS, sc.n)).astype(int)
        self.recorder = TrajectoryRecorder(self.env, cfg.trajectory_agents, self.seats.seats if self.seats else None)
        if ck is None:
            self.env.start(cfg.seed)
            self.rng = np.random.default_rng([cfg.seed, 0xB7])  # the rules' own stream
            self.series = MetricSeries(scenario=cfg.scenario, meta={"agents": sc.n, "seed": cfg.seed})
            self.events = EventLog(self.out, cfg.event_log, sc.move_names(), state_name=sc.state_name)
            state = sc.node_state()
            self.paths = [state[self.path_idx]]
            first = sc.metrics()
            self.series.add(0, first)
            self.events.add(0, None, first, state[: cfg.state_agents])
            self.interviews = InterviewLog(self.out)
            self.result: RoundResult | None = None
            return
        scenario_state, env_rng, ended, live = ck["env"]
        self.sc.__dict__.update(scenario_state)  # onto the freshly built scenario: the graph is rebuilt, not stored
        self.env._rng, self.env._ended, self.env.agents = env_rng, ended, live
        scenario = self.sc
        if self.seats is not None:
            self.seats.load_state(ck["seats"])
        self.rng = ck["rng"]
        self.series = ck["series"]
        self.paths = ck["paths"]
        self.recorder.tracks = ck["tracks"]
        self.result = ck["result"]
        self.brain_s, self.brain_steps, self.brain_tokens = ck["brain_s"], ck["brain_steps"], ck["brain_tokens"]
        self.events = EventLog(
            self.out, cfg.event_log, scenario.move_names(), resume_round=scenario.round, state_name=scenario.state_name
        )
        self.events.load_state(ck["events"])
        self.interviews = InterviewLog(self.out, resume_round=scenario.round)
        self.resumed_from = scenario.round
        log.info("resumed from the checkpoint after round %d", scenario.round)

    def _checkpoint(self) -> None:
        save_checkpoint(
            self.out,
            {
                "config_hash": config_hash(self.cfg),
                "env": (scenario_state(self.env.scenario), self.env._rng, self.env._ended, list(self.env.agents)),
                "rng": self.rng,
                "series": self.series,
                "paths": self.paths,
                "tracks": self.recorder.tracks,
                "result": self.result,
                "seats": self.seats.state() if self.seats is not None else None,
                "events": self.events.state(),
                "brain_s": self.brain_s,
                "brain_steps": self.brain_steps,
                "brain_tokens": self.brain_tokens,
            },
        )

    @property
    def done(self) -> bool:
        return self.result is not None and (self.result.terminated or self.result.truncated)

    def _run_async(self, coro: Any) -> Any:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(coro)

    def play_round(self) -> RoundResult:
        """One round: the brain seats decide (batched, bounded, async), the rule decides the rest, the env moves."""
        sc = self.env.scenario
        acting = self.recorder.before()
        turns: dict[int, Turn] = {}
        if self.seats is None:
            result = self.env.step_moves(self.rule.decide(sc, sc.active, self.rng))
        else:
            idx = self.seats.active()
            t = time.perf_counter()
            if self.cfg.max_concurrency == 1:  # one at a time, on the sync path (the baseline)
                turns = self.seats.decide_sync(idx)
            else:
                turns = self._run_async(self.seats.decide(idx)) if idx else {}
            self.brain_s += time.perf_counter() - t
            self.brain_steps += len(idx)
            for tr in turns.values():
                self.brain_tokens[0] += tr.decision.output.tokens_in
                self.brain_tokens[1] += tr.decision.output.tokens_out
            actions = {agent_id(i): tr.action for i, tr in turns.items() if tr.action is not None}
            result = self.env.advance_mixed(actions, self.rule.decide(sc, self.seats.rule_idx(), self.rng))
            self.seats.observe(turns, result.rewards, result.errors)
        self.recorder.after(acting, result, turns, self.cfg.keep_messages)
        m = sc.metrics()
        state = sc.node_state()
        self.series.add(result.round, m)
        self.events.add(result.round, result, m, state[: self.cfg.state_agents])
        self.paths.append(state[self.path_idx])
        self.result = result
        if self.cfg.interview.due(result.round, last=self.done):
            self.interview_all(self.cfg.interview.questions)
        every = self.cfg.checkpoint_rounds
        if every and (result.round % every == 0) and not (result.terminated or result.truncated):
            self._checkpoint()
        return result

    def run(self) -> dict[str, Any]:
        """Play to the end and write the outputs; returns the summary."""
        t0 = time.perf_counter()
        every = max(1, self.cfg.rounds // 10)
        while not self.done:
            r = self.play_round()
            if r.round % every == 0 or r.terminated or r.truncated:
                m = self.series.last()
                log.info("round %d: %s", r.round, ", ".join(f"{k}={v:.4g}" for k, v in m.items()))
        return self.finish(time.perf_counter() - t0)

    def finish(self, t_run: float = 0.0) -> dict[str, Any]:
        cfg, out = self.cfg, self.out
        result = self.result
        assert result is not None
        self.events.close()
        brains = {i: self.seats.brain_label for i in self.seats.agents} if self.seats else {}
        records = self.recorder.finish(cfg, self.rule, result.terminated, result.truncated, brains)
        (out / TRAJECTORIES).unlink(missing_ok=True)
        (out / TRAJECTORIES).touch()  # present even when no recorded agent acted (a cascade that died at once)
        store = TrajectoryStore(out / TRAJECTORIES)
        for rec in records:
            store.append(rec)
        self.series.write(out / "metrics.json")
        t_end = time.perf_counter()
        reflections = self._end_seats(result) if self.seats is not None else {}
        t_end = time.perf_counter() - t_end
        report = self.env.scenario.report()
        if report:
            atomic_write_text(out / "report.json", json.dumps(report, indent=1, default=str))
        plots = self._plots() if cfg.plots else []
        summary = {
            "config": cfg.model_dump(),
            "rounds_played": result.round,
            "terminated": result.terminated,
            "truncated": result.truncated,
            "final_metrics": self.series.last(),
            "trajectories": len(records),
            "plots": plots,
            "build_s": round(self.t_build, 3),
            "run_s": round(t_run, 3),
            "wall_s": round(self.t_build + t_run, 3),
            "resumed_from_round": self.resumed_from,
            "interviews": self.interviews_asked,
        }
        if self.seats is not None:
            summary["brain"] = {
                "seats": int(self.seats.seats.size),
                "agent_steps": self.brain_steps,
                "decide_s": round(self.brain_s, 3),
                "agent_steps_per_s": round(self.brain_steps / self.brain_s, 2) if self.brain_s else None,
                "tokens_in": self.brain_tokens[0],
                "tokens_out": self.brain_tokens[1],
                "cache": self.cache.stats(),
                "reflections": sum(r["reflections"] for r in reflections.values()),
                "end_s": round(t_end, 3),
            }
        atomic_write_text(out / "summary.json", json.dumps(summary, indent=1, default=str))
        clear_checkpoint(out)  # the run is complete: its outputs are the record now
        self.close()
        log.info("%s: %d rounds, %d trajectories, outputs in %s", cfg.scenario, result.round, len(records), out)
        return summary

    def _end_seats(self, result: RoundResult) -> dict[str, dict[str, Any]]:
        """End the seats' episode (a reflective memory reflects on the day) and write their lessons.

        The society is one long episode; like `agents.core.loop`, its end goes to each seat's memory."""
        assert self.seats is not None
        sc = self.env.scenario
        outcomes = {}
        for i in self.seats.agents:
            reward, success = sc.agent_outcome(i)
            outcomes[i] = {
                "reward": reward,
                "total_reward": float(sum(s.reward for s in self.recorder.tracks[i].steps)),
                "success": success,
                "terminated": result.terminated,
                "truncated": result.truncated,
                "truncation_reason": "max_steps" if result.truncated else None,
            }
        self.seats.end(outcomes)
        reflections = {agent_id(i): r for i, r in self.seats.reflections().items()}
        if reflections:
            atomic_write_text(self.out / "reflections.json", json.dumps(reflections, indent=1))
        return reflections

    def _plots(self) -> list[str]:
        from societies.plots import plot_metrics, plot_network, plot_paths

        cfg, sc, out = self.cfg, self.env.scenario, self.out
        plots = [plot_metrics(self.series, out / "metrics.png").name]
        if hasattr(sc, "graph") or cfg.scenario in ("cooperation", "public_goods"):  # no graph: nodes on a circle
            from societies.graphs import complete_graph

            # a scenario whose graph changes (the feed's follows) plots its final graph
            graph = sc.network() if hasattr(sc, "network") else getattr(sc, "graph", None) or complete_graph(sc.n)
            plots.append(
                plot_network(graph, sc.node_state(), out / "network.png", f"{cfg.scenario}: final state", cfg.seed).name
            )
        if cfg.scenario == "opinion":
            plots.append(
                plot_paths(
                    self.series.rounds, np.array(self.paths), out / "opinions.png", "opinions of sampled agents"
                ).name
            )
        return plots

    def close(self) -> None:
        self.cache.close()
        if self._loop is not None:
            self._loop.close()
            self._loop = None

    # -- interviews ------------------------------------------------------------------------------
    def interview(self, agent: str | int, question: str) -> str:
        """Ask any agent a question; nothing is written to its memory or its agent state.

        A brain seat answers through its own brain, persona and memory (`BrainSeats.interview`); a
        rule agent answers from its persona and its current view (it has no words of its own).
        The answer is appended to `interviews.jsonl` with the round, the question and who answered."""
        i = agent if isinstance(agent, int) else self.env.index(agent)
        rec = self._ask(i, question)
        self.interviews.append([rec])
        self.interviews_asked += 1
        return rec.answer

    def interviewed(self) -> list[int]:
        """The agents the configured interviews ask: `interview.agents`, else the brain seats, else the recorded agents."""
        if self.cfg.interview.agents:
            return list(self.cfg.interview.agents)
        if self.seats is not None:
            return sorted(self.seats.agents)
        return self.recorder.ids[: self.recorder.k].tolist()

    def interview_all(self, questions: list[str]) -> list[InterviewRecord]:
        """Ask each interviewed agent each question now, and append the answers."""
        recs = [self._ask(i, q) for i in self.interviewed() for q in questions]
        self.interviews.append(recs)
        self.interviews_asked += len(recs)
        return recs

    def _ask(self, i: int, question: str) -> InterviewRecord:
        sc = self.env.scenario
        if self.seats is not None and i in self.seats.agents:
            answer = self.seats.interview(i, question, self.cfg.interview.max_tokens)
            seat, by = "brain", self.seats.brain_label
        else:
            answer = f"{sc.persona(i)} I follow the {self.rule.name} rule. {sc.observe(i)}"
            seat, by = "rule", f"rule:{self.rule.name}"
        if len(answer) > MAX_ANSWER_CHARS:
            answer = answer[: MAX_ANSWER_CHARS - 1] + "…"
        return InterviewRecord(
            round=int(sc.round),
            agent=agent_id(i),
            index=i,
            question=question,
            answer=answer,
            seat=seat,  # type: ignore[arg-type]
            answered_by=by,
            asked_at=time.time(),
        )


def run_society(cfg: SocietyRunConfig) -> dict[str, Any]:
    """Run one society (or resume it, with `resume=true`) and write its outputs; returns the summary.

    Its memory is estimated first (`societies.budget`): a run the machine cannot hold is refused before
    anything is allocated."""
    est = check_memory(cfg)
    log.info("estimated peak memory %s (%s)", human(est.total), est.biggest())
    if cfg.shards > 1:  # rule societies over Ray actors by graph partition
        from societies.sharding import run_sharded_society

        return run_sharded_society(cfg)
    run = SocietyRun(cfg)
    try:
        return run.run()
    finally:
        run.close()


def job(plain: dict[str, Any]) -> int:
    """`python -m societies.run` after Hydra."""
    run_society(validate_config(SocietyRunConfig, plain))
    return 0


main = hydra_command(
    str(Path(__file__).parent / "conf"),
    "run",
    job,
    model=SocietyRunConfig,
    schemas={"society_schema": SocietyRunConfig},
    search_path=[Path(agents.__file__).parent / "conf"],
)


if __name__ == "__main__":
    main()
