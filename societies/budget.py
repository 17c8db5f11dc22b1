"""A society run's memory, estimated from its config before anything is allocated, against what the machine has.

Why: a size typed by mistake (`agents=1000000000`) used to allocate until the kernel's OOM killer
ended the run and took the machine's memory with it. The estimate is a sum of terms, each the
memory of one thing the run keeps, with a per-unit cost measured on real runs
(`bench/societies_memory.py` prints estimate against measured peak RSS and keeps it an upper
bound). It leaves out a brain's model weights (`brain=local` loads them once, outside the society).
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from societies.config import SocietyRunConfig

MB = 2**20
BASE_BYTES = 125 * MB  # the interpreter, numpy, networkx, pydantic, the agents package: a 2-agent run
PLOTS_BYTES = 100 * MB  # matplotlib and the network drawing (at most NETWORK_MAX nodes, so a constant)
PARQUET_BYTES = 100 * MB  # pyarrow, imported to write event_log=parquet
# per agent: the scenario's arrays, the rule's per-round draws, metrics over all agents (measured, rounded up)
PER_AGENT = {
    "opinion": 450,
    "diffusion": 250,
    "cooperation": 400,
    "public_goods": 450,
    "feed": 800,
    "town": 40_000,  # a resident's home, routine, schedule and rendered day are objects and text
}
# a scenario registered elsewhere (a plugin, a test's throwaway) has not been measured: assume the costliest
# array-based one (town's objects are a different kind of cost)
UNMEASURED_PER_AGENT = max(v for k, v in PER_AGENT.items() if k != "town")
TOWN_PAIR_BYTES = (
    32  # the town's agents x agents matrices (who knows whom, when a pair last talked) and their temporaries
)
PERSONA_BYTES = 2_500  # a pydantic persona per agent (built only up to PERSONAS_MAX agents)
EDGE_BYTES = 70  # building a G(n, m) graph: edge arrays, the de-duplicating sort, the CSR (per undirected edge)
NETWORKX_EDGE_BYTES = 1_300  # watts_strogatz / barabasi_albert / edge_list go through a networkx graph
FEED_POST_BYTES = 60  # the feed's post table, per post (its arrays double when they grow: counted twice)
ROUND_BYTES = 4_000  # per round: the sampled agents' paths, the metric series, the log's round rows
STEP_BYTES = {"town": 8_000, "feed": 6_000}  # per recorded agent and round: a trajectory step until written
DEFAULT_STEP_BYTES = 2_500
PARQUET_MOVE_BYTES = 40  # event_log=parquet buffers every move in memory until the end
PARQUET_STATE_BYTES = 32  # ... and each logged state: 8 bytes buffered + 24 in the columns at the write (counted, not yet measured by bench/societies_memory.py)
SEAT_BYTES = 4 * MB  # per brain seat: its Agent, memory and transcript (the model itself is not counted)
MARGIN = 1.25  # allocator slack and what the fits leave out


@dataclass(frozen=True)
class Estimate:
    """The estimated peak memory of a run, and its biggest terms (for the message)."""

    total: int
    terms: dict[str, int]

    def biggest(self, k: int = 3) -> str:
        """The k largest terms, e.g. 'agents 41.9 GB, graph 7.8 GB'."""
        top = sorted(self.terms.items(), key=lambda kv: -kv[1])[:k]
        return ", ".join(f"{name} {human(b)}" for name, b in top if b)


def human(n: float) -> str:
    """Bytes as MB / GB with one decimal."""
    return f"{n / 2**30:.1f} GB" if n >= 2**30 else f"{n / MB:.0f} MB"


def _graph_kind(cfg: SocietyRunConfig) -> str:
    if cfg.scenario in ("cooperation", "public_goods", "town"):
        return "none"
    if cfg.graph.kind != "auto":
        return cfg.graph.kind
    return "complete" if cfg.scenario == "opinion" else "erdos_renyi"


def estimate(cfg: SocietyRunConfig) -> Estimate:
    """Peak resident memory of the run `cfg` describes, from its sizes alone (nothing is built)."""
    from societies.config import PERSONAS_MAX, RULE

    n, rounds = cfg.agents, cfg.rounds
    if cfg.scenario == "town":
        t = cfg.town
        rounds = min(rounds, (t.end_hour - t.start_hour) * 60 // t.step_minutes)  # the day ends the run
    terms = {"interpreter": BASE_BYTES, "agents": n * PER_AGENT.get(cfg.scenario, UNMEASURED_PER_AGENT)}
    if cfg.plots:
        terms["plots"] = PLOTS_BYTES
    if n <= PERSONAS_MAX:
        terms["personas"] = n * PERSONA_BYTES
    if cfg.scenario == "town":
        terms["who knows whom"] = n * n * TOWN_PAIR_BYTES
    kind = _graph_kind(cfg)
    if kind not in ("none", "complete"):
        edges = n * cfg.graph.degree / 2
        terms["graph"] = int(edges * (EDGE_BYTES if kind == "erdos_renyi" else NETWORKX_EDGE_BYTES))
    if cfg.scenario == "feed":
        f = cfg.feed
        per_agent_round = f.p_post + f.p_repost * f.feed_size  # a post, and a repost per exposure, at most
        posts = n * rounds * cfg.activity * per_agent_round + f.seeds
        terms["posts"] = int(posts * FEED_POST_BYTES * 2)  # the table doubles when it grows
    terms["rounds"] = rounds * ROUND_BYTES
    recorded = min(n, cfg.trajectory_agents)
    seats = 0
    if cfg.brain.name != RULE:
        seats = cfg.llm_agents if cfg.llm_agents is not None else int(round(n * cfg.llm_fraction))
        seats = min(seats, n)
        terms["brain seats"] = seats * SEAT_BYTES
    terms["trajectories"] = (recorded + seats) * rounds * STEP_BYTES.get(cfg.scenario, DEFAULT_STEP_BYTES)
    if cfg.event_log == "parquet":
        states = min(n, cfg.state_agents) * (rounds + 1) * PARQUET_STATE_BYTES  # the logged states, kept to the end
        terms["event buffer"] = PARQUET_BYTES + int(n * cfg.activity * rounds * PARQUET_MOVE_BYTES) + states
    terms = {k: int(v) for k, v in terms.items()}
    return Estimate(int(sum(terms.values()) * MARGIN), terms)


def available_bytes() -> int:
    """Memory this process may still take: MemAvailable, or less where a cgroup limit or an address-space
    rlimit (`ulimit -v`) leaves less."""
    avail = 0
    status = {}
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                avail = int(line.split()[1]) * 1024
                break
        status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    except OSError:
        avail = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    for limit_file, usage_file in (
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
        ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),
    ):
        try:
            limit = Path(limit_file).read_text().strip()
            if limit != "max" and int(limit) < 1 << 60:
                avail = min(avail, int(limit) - int(Path(usage_file).read_text().strip()))
        except (OSError, ValueError):
            continue
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        used = int(status.get("VmSize", "0 kB").split()[0]) * 1024
        avail = min(avail, soft - used)
    return max(avail, 0)


def check_memory(cfg: SocietyRunConfig, available: int | None = None) -> Estimate:
    """Refuse (ConfigError, exit 2 on the command line) a run whose estimate is over the memory available."""
    from agents.config import ConfigError

    est = estimate(cfg)
    have = available_bytes() if available is None else available
    if est.total > have:
        raise ConfigError(
            f"this society run needs about {human(est.total)} of memory ({est.biggest()}), and "
            f"{human(have)} is available; lower agents= (now {cfg.agents:,}), rounds= (now {cfg.rounds:,}) or "
            f"trajectory_agents= (now {cfg.trajectory_agents:,}), or run it on a machine with more memory"
        )
    return est
