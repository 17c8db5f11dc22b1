"""DAgger relabeling: a teacher policy names its action in every state a student's episodes visited.

Behaviour cloning only shows the student the teacher's own states; once the student strays (a wrong item
opened, a needless trip back to search) it has never seen what to do there, and errors compound (Ross et al.,
DAgger, 2011). Here the student's episodes are replayed in their envs with the teacher's prompts (its turn
style, its token budget) and at each step the teacher ranks the same candidates at temperature 0; its pick is
stored per step in `meta["teacher_actions"]` of the student's own episode (its prompts unchanged), which
`agents.policy.sft_data` trains on: the student's action where the teacher agrees, the teacher's where not.

`python -m agents.policy.relabel IN OUT --teacher agentsim-evol1 [--turn-style full] [--max-episodes N]`
`--teacher scripted` makes the env's own scripted expert the teacher (DAgger with an oracle: it knows the goal,
so it names the right action in any state the student reaches, for free).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym

from agents.brains.base import BrainError, BrainOutput, ChoosingBrain, EnvBoundBrain, Message, SyncBrainMixin
from agents.policy.rerender import recorded_actions, replay
from agents.policy.sft_data import TEACHER_KEY, read_episodes
from agents.trajectories.schema import EpisodeRecord
from agents.trajectories.store import TrajectoryStore

log = logging.getLogger(__name__)


class TeacherReplayBrain(SyncBrainMixin):
    """Takes the recorded actions in order and, at each step, records what `teacher` would have chosen."""

    name = "teacher-replay"
    can_write_text = False

    def __init__(self, teacher: ChoosingBrain, actions: list[str]) -> None:
        self.teacher = teacher
        self.model = f"replay+{teacher.model}"
        self._plan = list(actions)
        self.labels: list[str] = []
        self.unreachable = 0  # steps where the teacher's action was not among the student's candidates

    def bind_env(self, env: gym.Env) -> None:
        """A teacher that reads the env (the scripted expert) is bound to the replayed one."""
        if isinstance(self.teacher, EnvBoundBrain):
            self.teacher.bind_env(env)

    def count_tokens(self, text: str) -> int:
        """The teacher's count: its prompts are compacted exactly where a live run of the teacher's would be."""
        return self.teacher.count_tokens(text)

    def choose(
        self,
        messages: list[Message],
        candidates: list[str],
        *,
        temperature: float = 0.0,
        prefix: str = "",
        seed: int | None = None,
    ) -> BrainOutput:
        """The recorded action; the teacher's argmax over the same candidates is kept in `labels`."""
        if not self._plan:
            raise BrainError("the replay ran out of recorded actions before the episode ended")
        action = self._plan.pop(0)
        out = self.teacher.choose(messages, candidates, temperature=0.0, prefix=prefix)
        label = out.text[len(prefix) :] if out.text.startswith(prefix) else out.text
        if label not in candidates:
            # an oracle may name an action the student could not have chosen (the WebShop expert searches with the
            # goal's hidden keywords, not a span of the instruction): training it would teach unreachable text
            self.unreachable += 1
            label = action
        self.labels.append(label)
        return BrainOutput(text=prefix + action, latency_s=out.latency_s, model=self.model)

    def complete(self, messages: list[Message], **_: Any) -> BrainOutput:
        """Relabeling needs ranked steps: a generated step has no candidate list for the teacher to rank."""
        raise BrainError("relabeling replays ranked steps only (agent.mode=choose); this step asked for free text")


@dataclass
class RelabelReport:
    read: int = 0
    kept: int = 0
    steps: int = 0
    agreed: int = 0
    unreachable: int = 0  # the teacher named an action outside the candidates: the student's is kept there
    not_reproduced: list[str] = field(default_factory=list)
    disagreements: Counter[str] = field(default_factory=Counter)  # the student's action where the teacher chose another
    seconds: float = 0.0

    @property
    def agreement(self) -> float:
        return self.agreed / self.steps if self.steps else 0.0

    def to_dict(self) -> dict[str, Any]:
        """What the CLI writes beside the store (relabel.json), so a round's agreement is on record."""
        return {**asdict(self), "agreement": self.agreement, "disagreements": dict(self.disagreements.most_common())}


def relabel(
    episodes: list[EpisodeRecord],
    teacher: ChoosingBrain,
    teacher_agent_cfg: dict[str, Any],
    out: TrajectoryStore,
    *,
    progress: bool = False,
) -> RelabelReport:
    """Append each student episode to `out` with the teacher's action for every step in `meta["teacher_actions"]`."""
    report = RelabelReport()
    envs: dict[tuple[str, str], gym.Env] = {}
    t0 = time.perf_counter()
    try:
        for n, ep in enumerate(episodes, 1):
            report.read += 1
            actions = recorded_actions(ep)
            brain = TeacherReplayBrain(teacher, actions) if actions else None
            new = replay(ep, brain, teacher_agent_cfg, envs) if brain else None
            if new is None or brain is None or len(brain.labels) != len(ep.steps):
                report.not_reproduced.append(ep.episode_id)
                continue
            report.unreachable += brain.unreachable
            for step, label in zip(ep.steps, brain.labels, strict=True):
                report.steps += 1
                if label == step.action:
                    report.agreed += 1
                else:
                    report.disagreements[step.action or ""] += 1
            out.append(ep.model_copy(update={"meta": {**ep.meta, TEACHER_KEY: brain.labels, "teacher": teacher.model}}))
            report.kept += 1
            if progress:
                log.info("%d/%d episodes, %.0f%% of steps agreed", n, len(episodes), 100 * report.agreement)
    finally:
        for env in envs.values():
            env.close()
        report.seconds = time.perf_counter() - t0
    return report


def main(argv: list[str] | None = None) -> int:
    """CLI; exit 2 on bad input (a missing store, nothing reproduced)."""
    ap = argparse.ArgumentParser(prog="python -m agents.policy.relabel", description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="+", help="the student's trajectory stores (folders with trajectories.jsonl)")
    ap.add_argument("out", help="the store to write (a folder; its trajectories.jsonl is appended to)")
    ap.add_argument(
        "--teacher",
        default="agentsim-evol1",
        help="the teacher: an adapter (a .gguf path or shipped name) or `scripted` (the env's expert, an oracle)",
    )
    ap.add_argument(
        "--settle",
        type=float,
        default=None,
        help="a scripted teacher keeps to the open item / results page when its best buy scores this much",
    )
    ap.add_argument("--turn-style", choices=["full", "compact"], default="full", help="the turns the teacher reads")
    ap.add_argument("--budget-tokens", type=int, default=2048, help="the teacher's prompt budget")
    ap.add_argument("--max-episodes", type=int, default=None)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    from agents.config import BrainConfig
    from agents.core.factory import build_brain
    from agents.resolve import resolve_brain

    missing = [p for p in args.inputs if not (Path(p) / "trajectories.jsonl").exists()]
    if missing:
        log.error("error: no trajectory store (trajectories.jsonl) in %s", ", ".join(missing))
        return 2
    episodes = list(read_episodes(args.inputs))[: args.max_episodes]
    spec: dict[str, object] = (
        {"name": "scripted", "within_candidates": True, "settle": args.settle}
        if args.teacher == "scripted"
        else {"name": "local", "adapter": args.teacher}
    )
    teacher = build_brain(resolve_brain(BrainConfig.model_validate(spec), turn_style=args.turn_style))
    if not isinstance(teacher, ChoosingBrain):
        log.error("error: the teacher must rank actions (a local brain)")
        return 2
    perception = {"turn_style": args.turn_style, "budget_tokens": args.budget_tokens}
    report = relabel(
        episodes,
        teacher,
        {"perception": perception},
        TrajectoryStore(Path(args.out) / "trajectories.jsonl"),
        progress=True,
    )
    log.info(
        "read %d, kept %d, not reproduced %d; %d steps, teacher agreed on %.1f%% (%.0f s); student's action where not: %s",
        report.read,
        report.kept,
        len(report.not_reproduced),
        report.steps,
        100 * report.agreement,
        report.seconds,
        dict(report.disagreements.most_common(8)),
    )
    summary = {"inputs": args.inputs, "teacher": args.teacher, "perception": perception, **report.to_dict()}
    (Path(args.out) / "relabel.json").write_text(json.dumps(summary, indent=2))
    return 0 if report.kept else 2


if __name__ == "__main__":
    sys.exit(main())
