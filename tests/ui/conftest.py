"""Run folders for the UI tests, made by the project's own writers (agents.run, societies.run), and a real server."""

from __future__ import annotations

import io
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from agents.trajectories.schema import CandidateRecord, EpisodeRecord, EpisodeStats, Outcome, StepRecord
from agents.trajectories.store import TrajectoryStore

WEBSHOP = {"name": "webshop", "id": "agentsim/WebShop-v0"}
SOCIETY_QUESTIONS = ["Did you share the post?", "Who told you about it?"]


def agents_run(out: Path, episodes: int, epsilon: float = 0.0, seed: int = 0) -> Path:
    """A real `agents.run` of the scripted brain (epsilon > 0 makes it take random actions sometimes)."""
    from agents.engine import run_config

    run_config(
        {
            "env": WEBSHOP,
            "brain": {"name": "scripted", "epsilon": epsilon, "seed": seed},
            "episodes": episodes,
            "out": str(out),
            "progress": False,
        },
        Console(file=io.StringIO()),
    )
    return out


def society_run(out: Path, scenario: str = "diffusion", agents: int = 40, rounds: int = 8, **extra: Any) -> Path:
    """A real `societies.run` of rule agents (events.sqlite, metrics.json, summary.json, trajectories)."""
    from agents.config import validate_config
    from societies.config import SocietyRunConfig
    from societies.run import run_society

    cfg = {"out": str(out), "scenario": scenario, "agents": agents, "rounds": rounds, "seed": 1, "plots": False}
    cfg["trajectory_agents"] = 10
    cfg.update(extra)
    run_society(validate_config(SocietyRunConfig, cfg))
    return out


def step(i: int, action: str, **kw: Any) -> StepRecord:
    kw.setdefault("observation", f"after {action}")
    return StepRecord(index=i, raw_output=f"Action: {action}", action=action, **kw)


def episode(seed: int, steps: list[StepRecord], success: bool, env: str = "toy", **kw: Any) -> EpisodeRecord:
    reward = 1.0 if success else 0.0
    return EpisodeRecord(
        episode_id=f"{env}-{seed}",
        env=env,
        env_id=f"agentsim/{env}",
        seed=seed,
        instruction=kw.pop("instruction", f"goal {seed}"),
        brain="scripted",
        steps=steps,
        outcome=Outcome(reward=reward, total_reward=reward, success=success, terminated=True, truncated=False),
        stats=EpisodeStats(
            steps=len(steps),
            env_steps=len(steps),
            invalid_actions=sum(1 for s in steps if s.env_error),
            parse_failures=0,
            tokens_in=sum(s.tokens_in for s in steps),
            tokens_out=sum(s.tokens_out for s in steps),
            brain_time_s=0.1,
            wall_time_s=0.2,
        ),
        started_at=1.0,
        finished_at=2.0,
        **kw,
    )


def prm_episode(seed: int) -> EpisodeRecord:
    """An episode as `prm.search` writes it: PRM promise/progress per step, ranked candidates, memory, tokens."""
    promise = [0.2, 0.35, 0.3, 0.8]
    steps = [
        step(
            n,
            f"click[item {n}]",
            prm_score=q,
            prm_progress=0.0 if n == 0 else q - promise[n - 1],
            candidates=[
                CandidateRecord(text=f"click[item {n}]", logprob=-0.5, n_tokens=4, score=q),
                CandidateRecord(text=f"click[other {n}]", logprob=-1.7, n_tokens=4, score=q / 2),
            ],
            memory_context=f"remembered fact {n}",
            tokens_in=100 + n,
            tokens_out=7,
            latency_s=0.25,
            thought=f"thinking about step {n}",
        )
        for n, q in enumerate(promise)
    ]
    steps[2] = steps[2].model_copy(update={"env_error": "Invalid action: no such item"})
    return episode(seed, steps, success=seed % 2 == 0, env="toy")


def coding_episode(seed: int) -> EpisodeRecord:
    """A coding trial as the coding env records it: bash / edits, then submit[] with the grade in info."""
    grade = {
        "reward": 1.0,
        "passed": 2,
        "total": 2,
        "pass_fraction": 1.0,
        "tests": [
            {"name": "test_api.py::test_delete", "outcome": "passed"},
            {"name": "test_api.py::test_get", "outcome": "passed"},
        ],
        "service_started": True,
        "log": "2 passed",
    }
    steps = [
        step(0, "bash[ls]", observation="server.py\nrequirements.txt"),
        step(1, "str_replace[server.py]\n<<<<<<< SEARCH\npass\n=======\nreturn 204\n>>>>>>> REPLACE"),
        step(2, '{"tool": "create", "path": "notes.txt", "content": "done\\n"}'),
        step(3, "bash[python -m pytest -q]", observation="3 passed in 0.1s"),
        step(
            4,
            "submit[]",
            observation="Submitted. Hidden tests: 2/2 passed, reward 1.",
            reward=1.0,
            info={"grade": grade},
        ),
    ]
    return episode(seed, steps, success=True, env="coding", instruction="Add DELETE /items/{id} to the service.")


def write_store(out: Path, episodes: list[EpisodeRecord]) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    store = TrajectoryStore(out / "trajectories.jsonl")
    for ep in episodes:
        store.append(ep)
    return out


@pytest.fixture(scope="session")
def runs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A runs folder: two real scripted WebShop runs on the same seeds, a PRM run, a coding run, a society."""
    root = tmp_path_factory.mktemp("runs")
    agents_run(root / "expert", 6, epsilon=0.0)
    agents_run(root / "noisy", 6, epsilon=0.6, seed=5)
    write_store(root / "prm", [prm_episode(s) for s in range(3)])
    write_store(root / "coding", [coding_episode(0)])
    society_run(root / "society", interview={"questions": SOCIETY_QUESTIONS, "every": 4})
    return root


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """`python -m agents.ui`'s app under uvicorn on a real loopback socket, in a thread."""

    def __init__(self, runs: Path, token: str | None = None) -> None:
        import uvicorn

        from agents.ui.__main__ import build

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(
            uvicorn.Config(build(str(runs), token), host="127.0.0.1", port=self.port, log_level="warning")
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        while not self.server.started:  # until it listens or its thread dies (pytest-timeout bounds the wait)
            if not self.thread.is_alive():
                pytest.fail("the UI server did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="session")
def ui(runs_dir: Path) -> Iterator[Server]:
    with Server(runs_dir) as s:
        yield s
