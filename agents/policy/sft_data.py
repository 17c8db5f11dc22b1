"""Trajectory stores -> token sequences for supervised fine-tuning, exactly as the embedded brain scores them.

At a ranked step the brain evaluates `chat_format(messages) + "Action:"` and scores each candidate's
tokens after it (`LocalBrain.choose`). A training example is the same token ids, with the loss on
the chosen action's own tokens only. With the transcript layout each step's prompt extends the
previous step's prompt plus its action, so one episode packs into one sequence and a single
forward pass trains every step of it (the sequence is split where compaction broke the prefix).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from agents.brains.chat_templates import TEMPLATES
from agents.brains.llama.ranking import scoring_texts
from agents.brains.llama.slot_table import common_prefix
from agents.core.agent import CHOOSE_PREFIX
from agents.policy.choices import Choice, step_choice
from agents.trajectories.schema import EpisodeRecord

log = logging.getLogger(__name__)

TEACHER_KEY = "teacher_actions"  # per step, the action a teacher policy chose there (agents.policy.relabel)


@dataclass
class Sequence:
    """Token ids and the positions whose next-token loss is trained (targets are `ids[p]` for p in `targets`)."""

    ids: list[int]
    targets: list[int] = field(default_factory=list)
    source: str = ""  # episode id(s), for reporting
    choices: list[Choice] = field(default_factory=list)  # ranked steps inside it (built only when asked)

    @property
    def n_targets(self) -> int:
        return len(self.targets)


def read_episodes(paths: Iterable[str | Path]) -> Iterator[EpisodeRecord]:
    """Every episode of the given trajectory stores (a run folder or a .jsonl); a bad line names its file and line."""
    for p in paths:
        path = Path(p)
        if path.is_dir():
            path = path / "trajectories.jsonl"
        if not path.is_file():
            raise FileNotFoundError(f"no trajectory store at {p} (expected a run folder or a trajectories .jsonl)")
        with path.open(encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    yield EpisodeRecord.model_validate_json(line)
                except ValueError as e:
                    raise ValueError(f"{path}:{n}: not a trajectory record: {str(e).splitlines()[0]}") from e


def step_tokens(
    messages: list[dict], action: str, tokenize: Callable[[str], list[int]], template: str = "gemma"
) -> tuple[list[int], int]:
    """(prompt + action token ids, index where the action's own tokens start), as `LocalBrain.choose` splits them."""
    fmt, _ = TEMPLATES[template]
    head, text = scoring_texts(fmt(messages), CHOOSE_PREFIX, action)
    full = tokenize(text)
    return full, common_prefix(tokenize(head), full)


def episode_sequences(
    ep: EpisodeRecord,
    tokenize: Callable[[str], list[int]],
    *,
    max_len: int = 2048,
    template: str = "gemma",
    choices: bool = False,
) -> list[Sequence]:
    """Pack one episode's acted steps into as few sequences as the prompts' shared prefixes allow.

    A relabeled episode (`meta["teacher_actions"]`, from `agents.policy.relabel`) trains the student's action only
    where the teacher chose it too; where the teacher chose another, that step's prompt with the teacher's action is
    a sequence of its own, and the packed sequence carries the student's action on as context, untrained.
    With `choices`, every step whose recorded candidates include its label (the teacher's where there is one) also
    becomes a `Choice` on the sequence holding its prompt, for the listwise loss (`agents.policy.choices`).
    """
    labels = ep.meta.get(TEACHER_KEY)
    if labels is not None and len(labels) != len(ep.steps):
        raise ValueError(f"episode {ep.episode_id}: {len(labels)} teacher actions for {len(ep.steps)} steps")
    out: list[Sequence] = []
    cur: Sequence | None = None
    for i, step in enumerate(ep.steps):
        if step.action is None or step.env_error or not step.messages:
            continue  # train only on actions the env took
        full, own = step_tokens(step.messages, step.action, tokenize, template)
        if len(full) > max_len:
            log.debug("skipping a %d-token step of %s (max_len %d)", len(full), ep.episode_id, max_len)
            continue
        label = labels[i] if labels is not None else step.action
        targets = list(range(own, len(full))) if label == step.action else []
        if cur is not None and len(full) >= len(cur.ids) and full[: len(cur.ids)] == cur.ids:
            cur.ids = full  # this step's prompt extends the sequence so far
            cur.targets.extend(targets)
        else:
            cur = Sequence(full, targets, ep.episode_id)
            out.append(cur)
        if choices and label and step.candidates:
            fmt, _ = TEMPLATES[template]
            texts = [c.text for c in step.candidates]
            choice = step_choice(fmt(step.messages), CHOOSE_PREFIX, full[:own], texts, label, tokenize)
            if choice is not None:
                cur.choices.append(choice)
        if label and label != step.action:
            ids, start = step_tokens(step.messages, label, tokenize, template)
            if len(ids) <= max_len:
                out.append(Sequence(ids, list(range(start, len(ids))), f"{ep.episode_id}@{i}"))
    return [s for s in out if s.targets or s.choices]


def rejected_because(
    ep: EpisodeRecord, *, success_only: bool = False, min_reward: float | None = None, max_steps: int | None = None
) -> str | None:
    """Why the keep rule drops `ep` ("filtered": below the bar; "too_long": over `max_steps`), or None if it stays.

    `max_steps` exists because the reward bar alone credits a policy's detours (paging through results) whenever
    the episode ends well, and cloning them makes the next policy slower.
    """
    if (success_only and not ep.outcome.success) or (min_reward is not None and ep.outcome.reward < min_reward):
        return "filtered"
    if max_steps is not None and len(ep.steps) > max_steps:
        return "too_long"
    return None


def build_sequences(
    paths: Iterable[str | Path],
    tokenize: Callable[[str], list[int]],
    *,
    min_reward: float | None = None,
    success_only: bool = False,
    max_len: int = 2048,
    max_episodes: int | None = None,
    max_steps: int | None = None,
    choices: bool = False,
) -> tuple[list[Sequence], dict[str, int]]:
    """Sequences from every episode of the stores the keep rule keeps, and counts of what was kept and why not."""
    seqs: list[Sequence] = []
    stats = {"episodes": 0, "kept": 0, "filtered": 0, "too_long": 0, "steps": 0}
    for ep in read_episodes(paths):
        stats["episodes"] += 1
        reason = rejected_because(ep, success_only=success_only, min_reward=min_reward, max_steps=max_steps)
        if reason:
            stats[reason] += 1
            continue
        if max_episodes is not None and stats["kept"] >= max_episodes:
            continue
        got = episode_sequences(ep, tokenize, max_len=max_len, choices=choices)
        if got:
            stats["kept"] += 1
            seqs.extend(got)
    stats["sequences"] = len(seqs)
    stats["target_tokens"] = sum(s.n_targets for s in seqs)
    stats["tokens"] = sum(len(s.ids) for s in seqs)
    if choices:
        stats["choices"] = sum(len(s.choices) for s in seqs)
        stats["candidate_tokens"] = sum(len(c) for s in seqs for ch in s.choices for c in ch.conts)
    return seqs, stats


def write_jsonl(seqs: list[Sequence], path: Path) -> None:
    """For inspection: one sequence a line."""
    with path.open("w", encoding="utf-8") as f:
        for s in seqs:
            f.write(json.dumps({"ids": s.ids, "targets": s.targets, "source": s.source}) + "\n")
