"""Train what the brain does: rank a step's candidates by mean per-token log-likelihood, as `LocalBrain.choose` does.

At a ranked step the brain scores every available action's own tokens after the step prompt and takes the best
mean. A `Choice` records one such step inside a training sequence: where the candidates attach to the sequence
(the step prompt is a prefix of the packed episode), each candidate's tokens after that point, where its own
(scored) tokens start, and which one the expert or teacher chose. `pack` appends every candidate of every choice
to the sequence as a short branch: positions continue from the attach point, and a mask lets each branch token see
the prompt before it and its own branch only (the sliding-window layers keep their window). One forward then
gives the SFT logits and every candidate's score; `choice_scores` reads the mean log-probs, and the softmax
cross-entropy over them (the listwise loss) pushes the label's score up against the others.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from agents.brains.llama.ranking import scoring_texts
from agents.brains.llama.slot_table import common_prefix
from envs.contract import SLOT


@dataclass
class Choice:
    """One ranked step: candidates continue `ids[:at]` of their sequence; `label` indexes the chosen one."""

    at: int
    conts: list[list[int]]  # each candidate's tokens after `at`
    owns: list[int]  # where each candidate's own (scored) tokens start within its continuation
    label: int


def label_index(candidates: list[str], label: str) -> int | None:
    """Which candidate the label is: the same text, or a template (`search[...]`) the label fills; None if none."""
    for i, c in enumerate(candidates):
        if c == label:
            return i
    for i, c in enumerate(candidates):
        if SLOT in c:
            head, tail = c.split(SLOT, 1)
            if label.startswith(head) and label.endswith(tail) and len(label) >= len(head) + len(tail):
                return i
    return None


def step_choice(
    prompt: str,
    prefix: str,
    prompt_ids: list[int],
    candidates: list[str],
    label: str,
    tokenize: Callable[[str], list[int]],
) -> Choice | None:
    """The choice at a step whose prompt tokens (`prompt_ids`) open its sequence; None when there is nothing to rank
    (fewer than two candidates, or the label is not among them: an expert's free-text search, say)."""
    if len(candidates) < 2:
        return None
    label_at = label_index(candidates, label)
    if label_at is None:
        return None
    head, _ = scoring_texts(prompt, prefix, "")
    base = tokenize(head)
    fulls = [tokenize(scoring_texts(prompt, prefix, c)[1]) for c in candidates]
    owns = [common_prefix(base, f) for f in fulls]  # where the brain starts scoring each candidate
    at = min(min(common_prefix(prompt_ids, f) for f in fulls), min(owns))
    if at == 0 or any(own >= len(f) for own, f in zip(owns, fulls)):
        return None  # a candidate with no tokens of its own scores nothing in the brain either
    return Choice(at, [f[at:] for f in fulls], [own - at for own in owns], label_at)


@dataclass
class Packed:
    """A sequence with its choices' candidates appended as branches: ids, positions, and per-candidate rows."""

    ids: list[int]
    positions: list[int]
    starts: list[int]  # where each branch (all choices' candidates, in order) begins in `ids`
    at: list[int]  # each branch's attach point in the main sequence
    length: int  # the main sequence's length


def pack(ids: list[int], choices: list[Choice]) -> Packed:
    """`ids` followed by every candidate continuation of every choice, positions continuing from each attach point."""
    out, positions = list(ids), list(range(len(ids)))
    starts, ats = [], []
    for ch in choices:
        for cont in ch.conts:
            starts.append(len(out))
            ats.append(ch.at)
            out.extend(cont)
            positions.extend(range(ch.at, ch.at + len(cont)))
    return Packed(out, positions, starts, ats, len(ids))


def branch_masks(packed: Packed, sliding_window: int | None, device: torch.device | str = "cpu") -> dict[str, Any]:
    """Boolean attention masks ([1, 1, T, T], True = attend) for the full and sliding-window layers.

    Main tokens attend causally; a branch token attends to the main tokens before its attach point and to its own
    branch up to itself, and sliding-window layers additionally see only keys fewer than `window` positions back."""
    t = len(packed.ids)
    group = torch.zeros(t, dtype=torch.long, device=device)  # 0 = main, g = branch g
    attach = torch.full((t,), t, dtype=torch.long, device=device)  # main tokens: everything before is main
    for g, (start, at) in enumerate(zip(packed.starts, packed.at), 1):
        end = packed.starts[g] if g < len(packed.starts) else t
        group[start:end] = g
        attach[start:end] = at
    idx = torch.arange(t, device=device)
    pos = torch.tensor(packed.positions, device=device)
    causal = idx[None, :] <= idx[:, None]
    main_key = (group[None, :] == 0) & (idx[None, :] < attach[:, None]) & causal
    own_branch = (group[None, :] == group[:, None]) & (group[:, None] > 0) & causal
    full = main_key | own_branch | ((group[:, None] == 0) & (group[None, :] == 0) & causal)
    masks = {"full_attention": full[None, None]}
    if sliding_window:
        masks["sliding_attention"] = (full & (pos[:, None] - pos[None, :] < sliding_window))[None, None]
    else:
        masks["sliding_attention"] = masks["full_attention"]
    return masks


def choice_scores(
    hidden: torch.Tensor, packed: Packed, choices: list[Choice], logits_of: Callable[[torch.Tensor], torch.Tensor]
) -> list[torch.Tensor]:
    """Per choice, each candidate's mean log-prob of its own tokens (the brain's score), from the packed forward.

    The row that predicts a branch's first token is the main sequence's row at `at - 1`; later ones, the branch's
    own rows. Only the scored rows go through the output layer (`logits_of`)."""
    rows: list[int] = []
    tokens: list[int] = []
    owner: list[int] = []
    b = 0
    for ch in choices:
        for cont, own in zip(ch.conts, ch.owns):
            start = packed.starts[b]
            for j in range(own, len(cont)):
                rows.append(ch.at - 1 if j == 0 else start + j - 1)
                tokens.append(cont[j])
                owner.append(b)
            b += 1
    logits = logits_of(hidden[torch.tensor(rows, device=hidden.device)])
    tok = torch.tensor(tokens, device=hidden.device)
    lp = logits.gather(1, tok[:, None])[:, 0] - torch.logsumexp(logits, dim=-1)
    per = torch.zeros(b, device=hidden.device, dtype=lp.dtype).index_add(
        0, torch.tensor(owner, device=hidden.device), lp
    )
    counts = torch.zeros(b, device=hidden.device, dtype=lp.dtype).index_add(
        0, torch.tensor(owner, device=hidden.device), torch.ones_like(lp)
    )
    means = per / counts
    out, b = [], 0
    for ch in choices:
        out.append(means[b : b + len(ch.conts)])
        b += len(ch.conts)
    return out


def listwise_loss(scores: list[torch.Tensor], choices: list[Choice]) -> torch.Tensor:
    """Mean over choices of the softmax cross-entropy of the label among its candidates' scores."""
    losses = [
        torch.nn.functional.cross_entropy(s[None], torch.tensor([ch.label], device=s.device))
        for s, ch in zip(scores, choices)
    ]
    return torch.stack(losses).mean()
