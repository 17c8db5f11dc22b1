"""A rule society sharded over Ray actors by graph partition (docs/societies.md, "Sharding").

One process holds a 1M-agent society easily (bench/societies_scale.py); sharding is for societies
that outgrow one machine, and for measuring what a shard costs before renting a cluster. The
pieces:

- **Partition** (`societies.partition`). Reverse Cuthill-McKee order cut into S balanced blocks,
  refined by balanced label propagation; the edge cut is reported against a random split.
- **Shards** (`Shard`). One Ray actor per block owns its agents' state and the CSR rows of its
  agents; each neighbour is stored with its owner shard and its index there. Each round a shard
  sends other shards only what crosses the cut: for a diffusion, the exposures of their agents
  by its new sharers (target index and whether the edge transmitted); for opinions, the current
  opinions of its agents that have neighbours on the other shard (halo exchange). Messages go
  shard to shard through Ray's object store: the driver passes on object references, never the
  data, and waits once per round (the barrier) for each shard's small stats.
- **Determinism.** The same seeded run gives the same metrics on any number of shards, exactly:
  the draws are keyed (`societies.keyed`): an independent-cascade trial is a hash of
  (seed, source, target), a Deffuant partner pick a hash of (seed, round, agent). The
  unsharded reference is the ordinary env with the keyed rule (`IndependentCascade(p, key=...)`,
  `OpinionScenario(pairing_key=...)`, as `societies.config.build` makes them with `keyed=true`),
  and the start state (seeds, initial opinions) comes from the same `SocietyEnv.start(seed)`.
  Diffusion metrics are integer counts summed over shards (exact); opinion metrics need a
  global sort (clusters), so the driver gathers the opinions each round and computes them with
  the scenario's own `metrics()`.
- **Limits.** Rule brains only (brain seats live in the driver); persona activity below 1 is
  refused (its draws are sequential); complete mixing cannot be partitioned; no event log,
  trajectories or checkpoints (metrics, summary and plots are written).

`ShardEngine(shards, backend="ray")` keeps its actors across runs; `backend="local"` runs the same
shards in-process (for tests and debugging). `run_sharded_society(cfg)` is `python -m
societies.run ... shards=N`.
"""

from __future__ import annotations

import logging
import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from societies.keyed import edge_trials, keyed_uniform
from societies.partition import Method, Partition, partition_graph

if TYPE_CHECKING:
    from societies.config import SocietyRunConfig
    from societies.env import SocietyEnv
    from societies.graphs import SocialGraph
    from societies.metrics import MetricSeries
    from societies.rules import Rule

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[1]
ModelKind = Literal["diffusion", "degroot", "deffuant"]
Backend = Literal["ray", "local"]
PATH_AGENTS = 100  # opinion paths plotted, as in societies.run


def _rss_mb() -> float:
    """This process's peak resident set, in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ------------------------------------------------------------------------------- shard payloads
@dataclass
class ShardData:
    """One shard's agents and their CSR rows; each neighbour comes with its owner shard and its index there."""

    shard: int
    shards: int
    n: int  # agents in the whole society
    gids: np.ndarray  # int64 global ids of the owned agents, ascending (local index = position)
    indptr: np.ndarray  # int64 row pointers, len(gids) + 1
    nbr_gid: np.ndarray  # int32 neighbours' global ids, in the global CSR's row order
    nbr_owner: np.ndarray  # int32 shard that owns each neighbour
    nbr_local: np.ndarray  # int32 each neighbour's local index on its owner shard


def shard_data(graph: SocialGraph, part: np.ndarray, shards: int) -> list[ShardData]:
    """Cut the CSR graph into per-shard rows (the rows keep the global neighbour order, so sums add up alike)."""
    n = graph.n
    order = np.argsort(part, kind="stable")
    counts = np.bincount(part, minlength=shards)
    starts = np.concatenate([[0], np.cumsum(counts)])
    local = np.empty(n, np.int32)
    local[order] = np.arange(n) - np.repeat(starts[:-1], counts)
    out = []
    for s in range(shards):
        gids = order[starts[s] : starts[s + 1]].astype(np.int64)
        deg = graph.indptr[gids + 1] - graph.indptr[gids]
        _, dst = graph.gather(gids)
        out.append(
            ShardData(
                shard=s,
                shards=shards,
                n=n,
                gids=gids,
                indptr=np.concatenate([[0], np.cumsum(deg)]).astype(np.int64),
                nbr_gid=dst.astype(np.int32),
                nbr_owner=part[dst].astype(np.int32),
                nbr_local=local[dst],
            )
        )
    return out


class ShardModel(BaseModel):
    """The dynamics a shard runs, with its parameters and keys (what crosses to the actors besides arrays)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: ModelKind
    p: float = 0.0  # independent cascade: transmission probability per edge
    ic_key: int = 0  # ... and the key of its edge trials
    mu: float = 0.5  # Deffuant: how far a compromise moves
    threshold: float = 0.2  # Deffuant: bounded-confidence threshold
    pairing_key: int = 0  # Deffuant: the key of the partner picks


# ------------------------------------------------------------------------------------ the shard
class Shard:
    """One block of agents: their state and CSR rows. Lives in a Ray actor (or in-process, `backend=local`).

    `round(k, more, *incoming)` plays one round from the other shards' messages and returns
    `(stats, out_0, ..., out_{S-1})`, where `out_t` is the message for shard t (None for itself
    or when there is nothing to send); Ray ships each output as its own object."""

    def __init__(self) -> None:
        self.base_mb = _rss_mb()

    def ping(self) -> int:
        return os.getpid()

    def load(self, data: ShardData, model: ShardModel, init: np.ndarray) -> dict[str, Any]:
        """Take a block: `init` is the local indices of the seeds (diffusion) or the opinions at round 0."""
        self.d, self.model = data, model
        self.s, self.S = data.shard, data.shards
        self.others = [t for t in range(self.S) if t != self.s]
        n_own = data.gids.size
        self.deg = np.diff(data.indptr)
        info: dict[str, Any] = {"pid": os.getpid(), "agents": int(n_own), "edges": int(data.nbr_gid.size)}
        if model.kind == "diffusion":
            self.adopted = np.zeros(n_own, dtype=bool)
            self.mark = np.zeros(n_own, dtype=bool)  # scratch, all False between rounds
            self.gen = np.full(n_own, -1, dtype=np.int32)
            self.frontier = np.asarray(init, dtype=np.int64)
            self.pend_d, self.pend_ok = np.empty(0, np.int64), np.empty(0, bool)
        else:
            self.x = np.asarray(init, dtype=np.float64).copy()
            remote = data.nbr_owner != self.s
            key = data.nbr_owner[remote].astype(np.int64) * data.n + data.nbr_gid[remote]
            ghosts, inv = np.unique(key, return_inverse=True)  # halo ordered by (owner, global id)
            self.cols = np.empty(data.nbr_gid.size, np.int64)  # each neighbour's index into [own x, halo]
            self.cols[~remote] = data.nbr_local[~remote]
            self.cols[remote] = n_own + inv
            self.halo = np.zeros(ghosts.size)
            owner = ghosts // data.n
            self.recv = {
                t: (int(np.searchsorted(owner, t)), int(np.searchsorted(owner, t, "right"))) for t in self.others
            }
            self.rows = np.repeat(np.arange(n_own), self.deg)
            # what t's halo holds of us: our agents with a neighbour on t, by global id (= local order)
            self.send = {t: np.unique(self.rows[data.nbr_owner == t]) for t in self.others}
            info |= {
                "halo": int(ghosts.size),
                "send": {t: int(v.size) for t, v in self.send.items()},
                "recv": {t: hi - lo for t, (lo, hi) in self.recv.items()},
            }
        info["rss_mb"] = round(_rss_mb(), 1)
        return info

    # -- rounds ------------------------------------------------------------------------------
    def start(self) -> tuple[Any, ...]:
        """Round 0: the seeds post (and expose their neighbours), or the first halo of opinions goes out."""
        t, c = time.perf_counter(), time.process_time()
        stats: dict[str, Any] = {}
        if self.model.kind == "diffusion":
            self.adopted[self.frontier] = True
            self.gen[self.frontier] = 0
            stats["new"] = int(self.frontier.size)
            outs = self._expose()
        else:
            outs = self._halo()
        return self._finish(stats, outs, t, c)

    def round(self, k: int, more: bool, *incoming: np.ndarray | None) -> tuple[Any, ...]:
        """Round k from the other shards' messages (in shard order); `more`: another round follows."""
        t, c = time.perf_counter(), time.process_time()
        if self.model.kind == "diffusion":
            stats, outs = self._diffusion_round(k, more, incoming)
        else:
            stats, outs = self._opinion_round(k, more, incoming)
        return self._finish(stats, outs, t, c)

    def _finish(self, stats: dict[str, Any], outs: list[np.ndarray | None], t: float, c: float) -> tuple[Any, ...]:
        stats["compute_s"] = time.perf_counter() - t
        stats["cpu_s"] = time.process_time() - c
        stats["bytes"] = int(sum(o.nbytes for o in outs if o is not None))
        return (stats, *outs)

    def _diffusion_round(self, k: int, more: bool, incoming: tuple[np.ndarray | None, ...]) -> tuple[dict, list]:
        """Merge this round's exposures (local and received); the exposed whose edge transmitted share."""
        ds, oks = [self.pend_d], [self.pend_ok]
        for m in incoming:
            if m is not None and m.size:
                ds.append((m >> 1).astype(np.int64))
                oks.append((m & 1).astype(bool))
        d, ok = np.concatenate(ds), np.concatenate(oks)
        keep = ~self.adopted[d]
        d, ok = d[keep], ok[keep]
        mark = self.mark  # dedup on a scratch mask: O(len(d)) plus a count, no sort
        mark[d] = True
        stats: dict[str, Any] = {"exposed": int(np.count_nonzero(mark))}
        mark[d] = False
        if not more:
            self.frontier = np.empty(0, np.int64)
            return stats, [None] * self.S
        mark[d[ok]] = True
        hits = np.flatnonzero(mark)
        mark[hits] = False
        self.adopted[hits] = True
        self.gen[hits] = k + 1
        self.frontier = hits
        stats["new"] = int(hits.size)
        return stats, self._expose()

    def _expose(self) -> list[np.ndarray | None]:
        """The frontier's edges: trials by keyed hash; local exposures kept, the rest sent to their owners.

        A message to shard t is sorted unique int32 codes 2 * (target's index on t) + transmitted."""
        d, f = self.d, self.frontier
        outs: list[np.ndarray | None] = [None] * self.S
        lens = self.deg[f]
        total = int(lens.sum())
        if total == 0:
            self.pend_d, self.pend_ok = np.empty(0, np.int64), np.empty(0, bool)
            return outs
        starts = d.indptr[f]
        pos = np.repeat(starts - (np.cumsum(lens) - lens), lens) + np.arange(total)
        src = np.repeat(d.gids[f], lens)
        owner, loc = d.nbr_owner[pos], d.nbr_local[pos]
        mine = owner == self.s
        keep = ~mine | ~self.adopted[np.where(mine, loc, 0)]  # skip local targets that already shared
        src, owner, loc, gid, mine = src[keep], owner[keep], loc[keep], d.nbr_gid[pos][keep], mine[keep]
        ok = edge_trials(self.model.ic_key, src, gid, self.model.p)
        self.pend_d, self.pend_ok = loc[mine].astype(np.int64), ok[mine]
        far = ~mine
        key = np.sort((owner[far].astype(np.int64) << 32) | (loc[far].astype(np.int64) * 2 + ok[far]))
        key = key[np.concatenate([[True], key[1:] != key[:-1]])] if key.size else key  # one sort, deduplicated
        bounds = np.searchsorted(key >> 32, np.arange(self.S + 1))
        for t in self.others:
            if bounds[t + 1] > bounds[t]:
                outs[t] = (key[bounds[t] : bounds[t + 1]] & 0xFFFFFFFF).astype(np.int32)
        return outs

    def _opinion_round(self, k: int, more: bool, incoming: tuple[np.ndarray | None, ...]) -> tuple[dict, list]:
        """Update every owned agent from round-k opinions (own and halo), as the unsharded rule and env do."""
        for t, m in zip(self.others, incoming):
            if m is not None:
                lo, hi = self.recv[t]
                self.halo[lo:hi] = m
        x, xx = self.x, np.concatenate([self.x, self.halo])
        if self.model.kind == "degroot":  # DeGroot.decide, then the env's clip of a stated opinion
            sums = np.bincount(self.rows, weights=xx[self.cols], minlength=x.size)
            new = np.clip((sums + x) / (self.deg + 1), 0.0, 1.0)
        else:  # Deffuant: the keyed partner pick of OpinionScenario.begin_round, then compromise
            u = keyed_uniform(self.model.pairing_key, k, self.d.gids)
            pick = np.floor(u * np.maximum(self.deg, 1)).astype(np.int64)
            pos = np.minimum(self.d.indptr[:-1] + pick, max(self.cols.size - 1, 0))
            xj = xx[self.cols[pos]] if self.cols.size else np.zeros(x.size)
            close = (self.deg > 0) & (np.abs(x - xj) < self.model.threshold)
            new = x.copy()
            new[close] = x[close] + self.model.mu * (xj[close] - x[close])
        change = float(np.max(np.abs(new - x))) if x.size else 0.0
        self.x = new
        return {"max_change": change, "x": new}, self._halo() if more else [None] * self.S

    def _halo(self) -> list[np.ndarray | None]:
        outs: list[np.ndarray | None] = [None] * self.S
        for t in self.others:
            if self.send[t].size:
                outs[t] = self.x[self.send[t]]
        return outs

    # -- after the run -------------------------------------------------------------------------
    def final_state(self) -> np.ndarray:
        """Each owned agent's generation (diffusion; -1 = never shared) or opinion."""
        return self.gen if self.model.kind == "diffusion" else self.x

    def memory(self) -> dict[str, float]:
        return {"base_mb": round(self.base_mb, 1), "peak_mb": round(_rss_mb(), 1)}


# ----------------------------------------------------------------------------------- backends
class LocalShards:
    """The shards in this process, called one after another (tests, debugging)."""

    def __init__(self, shards: int) -> None:
        self.size = shards
        self.shards = [Shard() for _ in range(shards)]
        self._out: list[tuple[Any, ...]] = []

    def load(self, data: list[ShardData], model: ShardModel, inits: list[np.ndarray]) -> list[dict[str, Any]]:
        return [sh.load(d, model, i) for sh, d, i in zip(self.shards, data, inits)]

    def start(self) -> list[dict[str, Any]]:
        res = [sh.start() for sh in self.shards]
        self._out = [r[1:] for r in res]
        return [r[0] for r in res]

    def round(self, k: int, more: bool) -> list[dict[str, Any]]:
        res = [sh.round(k, more, *self._incoming(t)) for t, sh in enumerate(self.shards)]
        self._out = [r[1:] for r in res]
        return [r[0] for r in res]

    def _incoming(self, t: int) -> list[Any]:
        return [self._out[s][t] for s in range(self.size) if s != t]

    def final(self) -> list[np.ndarray]:
        return [sh.final_state() for sh in self.shards]

    def memory(self) -> list[dict[str, float]]:
        return [sh.memory() for sh in self.shards]

    def close(self) -> None:
        self.shards = []


class RayShards(LocalShards):
    """One Ray actor per shard. Messages move actor to actor as object references; the driver never reads them."""

    def __init__(self, shards: int, cpus: float | None = None) -> None:
        import ray

        if not ray.is_initialized():
            raise RuntimeError("RayShards needs ray.init() first (societies.sharding.init_ray does it)")
        self.size = shards
        if cpus is None:  # every shard must be placed at once (they meet each round): share the free CPUs
            free = float(ray.available_resources().get("CPU", 0.0))
            cpus = max(0.01, min(1.0, free / shards))
        # SPREAD: on a cluster, shards land on different machines (one shard's memory and cores each)
        actor = ray.remote(num_cpus=cpus, max_restarts=0, scheduling_strategy="SPREAD")(Shard)  # type: ignore[call-overload]
        self.actors: list[Any] = [actor.remote() for _ in range(shards)]
        ray.get([a.ping.remote() for a in self.actors])
        self._refs: list[list[Any]] = []

    def load(self, data: list[ShardData], model: ShardModel, inits: list[np.ndarray]) -> list[dict[str, Any]]:
        import ray

        return ray.get([a.load.remote(d, model, i) for a, d, i in zip(self.actors, data, inits)])

    def start(self) -> list[dict[str, Any]]:
        return self._call(lambda t, a: a.start.options(num_returns=self.size + 1).remote())

    def round(self, k: int, more: bool) -> list[dict[str, Any]]:
        return self._call(
            lambda t, a: a.round.options(num_returns=self.size + 1).remote(k, more, *self._incoming_refs(t))
        )

    def _incoming_refs(self, t: int) -> list[Any]:
        return [self._refs[s][1 + t] for s in range(self.size) if s != t]  # top-level refs: Ray resolves them

    def _call(self, fn: Any) -> list[dict[str, Any]]:
        import ray

        refs = [fn(t, a) for t, a in enumerate(self.actors)]
        self._refs = refs
        return ray.get([r[0] for r in refs])  # the barrier: every shard's stats for this round

    def final(self) -> list[np.ndarray]:
        import ray

        return ray.get([a.final_state.remote() for a in self.actors])

    def memory(self) -> list[dict[str, float]]:
        import ray

        return ray.get([a.memory.remote() for a in self.actors])

    def close(self) -> None:
        import ray

        self._refs = []
        for a in self.actors:
            ray.kill(a)
        self.actors = []


# ------------------------------------------------------------------------------------- driver
class ShardReport(BaseModel):
    """What a sharded run cost, per round and per shard (summary.json's `sharding`, the bench's rows)."""

    model_config = ConfigDict(extra="forbid")

    shards: int
    backend: str
    method: str
    model: str
    agents: int
    edges: int
    edge_cut: float  # share of edges across shards
    random_cut: float  # the same for a random balanced split
    partition_s: float
    load_s: float  # cutting the CSR into blocks and shipping them to the shards
    shard_agents: list[int]
    shard_edges: list[int]
    halo: list[int]  # opinion: neighbours' opinions each shard mirrors from others
    round_s: list[float]  # driver wall time per round, the barrier included
    compute_s: list[list[float]]  # [round][shard], measured inside the shard
    cpu_s: list[list[float]]  # [round][shard], process CPU time inside the shard
    bytes: list[int]  # per round: boundary messages sent by all shards (payload bytes)
    gather_bytes: list[int]  # per round: state gathered to the driver for global metrics (opinion)
    metrics_s: list[float]  # per round: the driver computing the metrics (opinion: on the gathered state)
    base_rss_mb: list[float]  # per shard: its process before loading
    peak_rss_mb: list[float]  # per shard: peak of its process


@dataclass
class ShardedResult:
    """A sharded run: the metric series (as the unsharded runner records it), how it ended, and its cost."""

    series: MetricSeries
    rounds_played: int
    terminated: bool
    truncated: bool
    report: ShardReport
    paths: list[np.ndarray]  # opinion: sampled agents' opinions per round (for the paths plot)


def shard_model(env: SocietyEnv, rule: Rule) -> ShardModel:
    """The sharded dynamics that reproduce (env, rule) exactly, or a ValueError saying why there are none."""
    from societies.scenarios.diffusion import DiffusionScenario, IndependentCascade
    from societies.scenarios.opinion import Deffuant, DeGroot, OpinionScenario

    sc = env.scenario
    if np.any(sc.activity < 1.0):
        raise ValueError("sharding needs activity 1: sparse activation draws from a sequential generator")
    if isinstance(sc, DiffusionScenario) and isinstance(rule, IndependentCascade):
        if rule.key is None:
            raise ValueError("sharding needs keyed edge trials: IndependentCascade(p, key=...) (keyed=true)")
        return ShardModel(kind="diffusion", p=rule.p, ic_key=rule.key)
    if isinstance(sc, OpinionScenario) and isinstance(rule, DeGroot):
        return ShardModel(kind="degroot")
    if isinstance(sc, OpinionScenario) and isinstance(rule, Deffuant):
        if sc.pairing_key is None:
            raise ValueError("sharding Deffuant needs keyed partner picks: OpinionScenario(pairing_key=...)")
        if isinstance(rule.threshold, np.ndarray):
            raise ValueError("sharding Deffuant needs one threshold for everyone")
        return ShardModel(kind="deffuant", mu=sc.mu, threshold=float(rule.threshold), pairing_key=sc.pairing_key)
    raise ValueError(
        f"sharding supports diffusion with IndependentCascade and opinion with DeGroot or Deffuant, "
        f"not {sc.name} with {rule.name}"
    )


class ShardEngine:
    """S shards on a backend, reusable across runs (the actors stay up); `with ShardEngine(4) as e: e.run(...)`."""

    def __init__(self, shards: int, backend: Backend = "ray", cpus: float | None = None) -> None:
        if shards < 1:
            raise ValueError(f"shards must be >= 1, got {shards}")
        self.shards, self.backend = shards, backend
        self.impl: LocalShards = RayShards(shards, cpus) if backend == "ray" else LocalShards(shards)
        self._gid_list: list[np.ndarray] = []

    def __enter__(self) -> ShardEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.impl.close()

    def run(self, env: SocietyEnv, rule: Rule, seed: int, method: Method = "rcm", refine_rounds: int = 8,
            partition: Partition | None = None) -> ShardedResult:  # fmt: skip
        """Play `env` with `rule` from `seed` on the shards: the same metrics as `env.step_moves` rounds.

        `env.start(seed)` on the driver gives the start state (seeds, opinions), so it is the
        reference's; afterwards the driver's scenario holds the final state (for plots)."""
        from societies.metrics import MetricSeries

        model = shard_model(env, rule)
        sc = env.scenario
        graph = sc.graph  # type: ignore[attr-defined]
        env.start(seed)
        if partition is None:
            partition = partition_graph(graph, self.shards, method, refine_rounds, seed)
        elif partition.shards != self.shards:
            raise ValueError(f"the partition has {partition.shards} shards, the engine {self.shards}")
        t0 = time.perf_counter()
        data = shard_data(graph, partition.part, self.shards)
        if model.kind == "diffusion":
            seeds = np.asarray(sc.frontier, dtype=np.int64)  # type: ignore[attr-defined]
            owner = partition.part[seeds]
            inits = [np.searchsorted(d.gids, seeds[owner == d.shard]) for d in data]
        else:
            inits = [sc.x[d.gids] for d in data]  # type: ignore[attr-defined]
        infos = self.impl.load(data, model, inits)
        self._gid_list = [d.gids for d in data]
        self._check_halos(infos, model)
        load_s = time.perf_counter() - t0
        series = MetricSeries(scenario=sc.name, meta={"agents": sc.n, "seed": seed, "shards": self.shards})
        rep: dict[str, list] = {k: [] for k in ("round_s", "compute_s", "cpu_s", "bytes", "gather_bytes", "metrics_s")}
        paths: list[np.ndarray] = []
        if model.kind == "diffusion":
            rounds = self._diffusion(env, series, rep)
        else:
            rounds, paths = self._opinion(env, series, rep)
        terminated = model.kind == "diffusion" and series.series["exposed"][-1] == 0 and rounds > 0
        truncated = not terminated
        mem = self.impl.memory()
        report = ShardReport(
            shards=self.shards,
            backend=self.backend,
            method=partition.method if self.shards > 1 else "none",
            model=model.kind,
            agents=sc.n,
            edges=graph.n_edges,
            edge_cut=round(partition.edge_cut, 5),
            random_cut=round(partition.random_cut, 5),
            partition_s=round(partition.seconds, 4),
            load_s=round(load_s, 4),
            shard_agents=[i["agents"] for i in infos],
            shard_edges=[i["edges"] for i in infos],
            halo=[i.get("halo", 0) for i in infos],
            base_rss_mb=[m["base_mb"] for m in mem],
            peak_rss_mb=[m["peak_mb"] for m in mem],
            **rep,
        )
        return ShardedResult(series, rounds, terminated, truncated, report, paths)

    def _check_halos(self, infos: list[dict[str, Any]], model: ShardModel) -> None:
        """What s sends to t must be exactly what t's halo expects from s (a cheap guard on the index maps)."""
        if model.kind == "diffusion":
            return
        for s, info in enumerate(infos):
            for t, size in info["send"].items():
                if infos[t]["recv"][s] != size:
                    raise RuntimeError(
                        f"halo mismatch: shard {s} sends {size} opinions to {t}, which expects {infos[t]['recv'][s]}"
                    )

    def _stats(self, stats: list[dict[str, Any]], t: float, rep: dict[str, list]) -> None:
        rep["round_s"].append(round(time.perf_counter() - t, 6))
        rep["compute_s"].append([round(s["compute_s"], 6) for s in stats])
        rep["cpu_s"].append([round(s["cpu_s"], 6) for s in stats])
        rep["bytes"].append(sum(s["bytes"] for s in stats))
        rep["gather_bytes"].append(sum(s["x"].nbytes for s in stats if "x" in s))

    def _diffusion(self, env: SocietyEnv, series: MetricSeries, rep: dict[str, list]) -> int:
        """Round k's call merges the exposures by generation k and decides generation k + 1.

        Metrics are integer counts summed over shards: size, depth and breadth from the adopters
        per generation, new adopters, exposed agents (what `DiffusionScenario.metrics` computes)."""
        from societies.metrics import cascade_stats

        sc = env.scenario
        gen_counts = [sum(s["new"] for s in self.impl.start())]
        k = 0
        while True:
            more = k < env.max_rounds
            t = time.perf_counter()
            stats = self.impl.round(k, more)
            self._stats(stats, t, rep)
            exposed = sum(s["exposed"] for s in stats)
            counts = np.array(gen_counts[: k + 1])
            hit = np.flatnonzero(counts)
            tm = time.perf_counter()
            series.add(
                k,
                {
                    "size": float(counts.sum()),
                    "depth": float(hit[-1]) if hit.size else 0.0,
                    "breadth": float(counts.max()),
                    "new_adopters": float(counts[-1]),
                    "exposed": float(exposed),
                },
            )
            rep["metrics_s"].append(round(time.perf_counter() - tm, 6))
            if more:
                gen_counts.append(sum(s["new"] for s in stats))
            if (k > 0 and exposed == 0) or not more:
                break
            k += 1
        generation = np.full(sc.n, -1, np.int32)
        for d_gids, gen in zip(self._gids(), self.impl.final()):
            generation[d_gids] = gen
        sc.adopted, sc.generation, sc.round = generation >= 0, generation, k  # type: ignore[attr-defined]
        sc.active, sc.frontier = np.empty(0, np.int64), np.empty(0, np.int64)  # type: ignore[attr-defined]
        final = cascade_stats(generation)
        if any(final[m] != series.series[m][-1] for m in final):  # the gathered state must agree with the counts
            raise RuntimeError(f"sharded cascade counts {series.last()} disagree with the gathered state {final}")
        return k

    def _opinion(self, env: SocietyEnv, series: MetricSeries, rep: dict[str, list]) -> tuple[int, list[np.ndarray]]:
        """Round k's call updates every agent from the round-k opinions; the driver gathers them for the metrics."""
        sc = env.scenario
        path_idx = np.linspace(0, sc.n - 1, min(PATH_AGENTS, sc.n)).astype(int)
        series.add(0, sc.metrics())
        paths = [sc.node_state()[path_idx]]
        gids = self._gids()
        self.impl.start()
        for k in range(env.max_rounds):
            t = time.perf_counter()
            stats = self.impl.round(k, k + 1 < env.max_rounds)
            x = np.empty(sc.n)
            for g, s in zip(gids, stats):
                x[g] = s["x"]
            sc.x, sc.last_change, sc.round = x, max(s["max_change"] for s in stats), k + 1  # type: ignore[attr-defined]
            self._stats(stats, t, rep)
            tm = time.perf_counter()
            series.add(k + 1, sc.metrics())
            rep["metrics_s"].append(round(time.perf_counter() - tm, 6))
            paths.append(x[path_idx])
        return env.max_rounds, paths

    def _gids(self) -> list[np.ndarray]:
        return self._gid_list


def run_sharded(env: SocietyEnv, rule: Rule, seed: int, shards: int, backend: Backend = "ray",
                method: Method = "rcm") -> ShardedResult:  # fmt: skip
    """One sharded run on fresh shards (`ShardEngine` keeps them for several)."""
    with ShardEngine(shards, backend) as engine:
        return engine.run(env, rule, seed, method)


# ------------------------------------------------------------------------------------- runner
def init_ray(address: str | None = None) -> bool:
    """Connect to (or start) Ray; True if this call started it (and so must shut it down)."""
    from agents.config import ConfigError

    try:
        import ray
    except ImportError as e:
        raise ConfigError("shards > 1 needs Ray: pip install 'agentsim[ray]'") from e
    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.WARNING}
    if address:
        ray.init(address=address, **kwargs)
    else:  # a local Ray whose workers import this checkout
        ray.init(num_cpus=os.cpu_count() or 1, runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}}, **kwargs)
    return True


def check_shardable(cfg: SocietyRunConfig) -> None:
    """Refuse, before any work, what a sharded run cannot do (a ConfigError: exit code 2)."""
    from agents.config import ConfigError
    from societies.config import RULE

    if cfg.brain.name != RULE:
        raise ConfigError(
            f"shards > 1 with brain seats (brain={cfg.brain.name}) is not supported yet: brain seats run in "
            "one process; use shards=1, or brain=rule to shard a rule society"
        )
    from societies.scenarios import SCENARIO_REGISTRY, scenario_spec

    if not scenario_spec(cfg.scenario).shardable:
        able = [n for n in SCENARIO_REGISTRY.names() if scenario_spec(n).shardable]
        raise ConfigError(f"shards > 1 supports scenario={' or scenario='.join(able)}, not {cfg.scenario}")
    if cfg.scenario == "opinion" and cfg.graph.kind in ("auto", "complete"):
        raise ConfigError(
            "shards > 1 needs a sparse graph to partition (opinion defaults to complete mixing): "
            "graph.kind=erdos_renyi|watts_strogatz|barabasi_albert|edge_list"
        )
    if cfg.activity < 1:
        raise ConfigError("shards > 1 needs activity=1: sparse activation draws from a sequential generator")
    if cfg.resume or cfg.checkpoint_every:
        raise ConfigError("shards > 1 does not checkpoint: drop resume and checkpoint_every")


def run_sharded_society(cfg: SocietyRunConfig) -> dict[str, Any]:
    """`python -m societies.run ... shards=N`: metrics.json, summary.json and plots, as the unsharded runner.

    No event log or trajectories: a sharded run is for scale, and rule agents' moves at 1M agents
    are better summarised than logged."""
    import json

    from envs.util import atomic_write_text
    from societies.config import build

    check_shardable(cfg)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    env, rule = build(cfg)
    t_build = time.perf_counter() - t0
    started = init_ray(cfg.ray_address)
    try:
        t1 = time.perf_counter()
        with ShardEngine(cfg.shards, "ray") as engine:
            res = engine.run(env, rule, cfg.seed)
        t_run = time.perf_counter() - t1
    finally:
        if started:
            import ray

            ray.shutdown()
    res.series.write(out / "metrics.json")
    plots = _plots(cfg, env, res) if cfg.plots else []
    rep = res.report
    summary = {
        "config": cfg.model_dump(),
        "rounds_played": res.rounds_played,
        "terminated": res.terminated,
        "truncated": res.truncated,
        "final_metrics": res.series.last(),
        "trajectories": 0,
        "plots": plots,
        "build_s": round(t_build, 3),
        "run_s": round(t_run, 3),
        "wall_s": round(t_build + t_run, 3),
        "resumed_from_round": None,
        "sharding": {
            **rep.model_dump(exclude={"compute_s", "cpu_s"}),
            "compute_s_max_per_round": [max(r) for r in rep.compute_s],
            "not_written": ["events", "trajectories", "checkpoint"],
        },
    }
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=1, default=str))
    log.info(
        "%s on %d shards (edge cut %.3f, random split %.3f): %d rounds, outputs in %s",
        cfg.scenario, cfg.shards, rep.edge_cut, rep.random_cut, res.rounds_played, out,
    )  # fmt: skip
    return summary


def _plots(cfg: SocietyRunConfig, env: SocietyEnv, res: ShardedResult) -> list[str]:
    from societies.plots import plot_metrics, plot_network, plot_paths

    out, sc = Path(cfg.out), env.scenario
    names = [plot_metrics(res.series, out / "metrics.png").name]
    graph = sc.graph  # type: ignore[attr-defined]
    names.append(
        plot_network(graph, sc.node_state(), out / "network.png", f"{cfg.scenario}: final state", cfg.seed).name
    )
    if res.paths:
        names.append(
            plot_paths(res.series.rounds, np.array(res.paths), out / "opinions.png", "opinions of sampled agents").name
        )
    return names
