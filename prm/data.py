"""Trajectories -> token windows for a one-pass PRM: instruction, then per step (state, action, marker).

Layout of one window:  [CLS] instruction [SEP] | step t: obs_t [SEP] action_t <M> | step t+1: obs_t+1 [SEP] ... <M> | ...
The score of step t is read at its marker <M>. Attention is block-causal: a step's tokens see the
instruction, earlier steps and their own step, never later ones, so one forward pass scores every
step exactly as scoring each prefix separately would (the promise of a_t must not peek at a_t+1).

A trajectory that does not fit `max_length` is cut into windows, each keeping the instruction
and the most recent steps that fit; together they cover every step once. A long observation is cut
around the text its action names (the argument of a `verb[argument]` action), so the promise sees
what the action acts on (`focus`; else its head). Observations arrive here as the env's compact form
when it has one (`prm.episodes.observation_compactor`). Tokenization is cached per text piece
(observations and actions repeat a lot across sampled trajectories).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import torch
from pydantic import BaseModel, ConfigDict, Field

from envs.util import atomic_write_text

_SPACE = re.compile(r"\s+")
_REPEATED_SEP = re.compile(r"(?:\[SEP\]\s*){2,}")
_ARGUMENT = re.compile(r"\[(.+)\]\s*$")  # `verb[argument]` -> `argument`


class TextConfig(BaseModel):
    """How much of each piece a window keeps (in tokens)."""

    model_config = ConfigDict(extra="forbid")

    max_length: int = Field(default=256, ge=32)
    instruction_tokens: int = Field(default=64, ge=1)
    obs_tokens: int = Field(default=48, ge=0)
    action_tokens: int = Field(default=16, ge=1)
    step_numbers: bool = True  # prefix each step with "step t": under a step limit the promise depends on time left
    focus: bool = True  # a long observation is cut around the text the action names (else: its head)


def clean_observation(obs: str, instruction: str) -> str:
    """Drop what the window already shows (the instruction) and collapse whitespace."""
    if instruction:
        obs = obs.replace(instruction, " ")
    obs = obs.replace("Instruction:", " ")
    obs = _REPEATED_SEP.sub("[SEP] ", _SPACE.sub(" ", obs))
    return obs.strip().removeprefix("[SEP]").removesuffix("[SEP]").strip()


@dataclass
class Window:
    """One model input: token ids, the block of each token (0 = instruction), and its marker positions."""

    ids: list[int]
    blocks: list[int]
    markers: list[int]  # positions of the markers, in step order
    traj: int  # index of the trajectory in the caller's list
    steps: list[int]  # which steps of that trajectory the markers score


class StepTokenizer:
    """Builds windows with a Hugging Face tokenizer; caches token ids per (text, limit)."""

    def __init__(self, tokenizer, marker_id: int, cfg: TextConfig) -> None:
        self.tok = tokenizer
        self.marker_id = int(marker_id)
        self.cfg = cfg
        self.cache: dict[str, list[int]] = {}
        self.hits = self.misses = 0
        cls = tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id
        sep = tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
        self.head = [cls] if cls is not None else []
        self.sep = [sep] if sep is not None else []
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0

    # ------------------------------------------------------------------ pieces
    def encode(self, text: str, limit: int) -> list[int]:
        """Token ids of `text`, at most `limit` (cached by text and limit)."""
        if limit <= 0 or not text:
            return []
        key = f"{limit}\x00{text}"
        ids = self.cache.get(key)
        if ids is None:
            self.misses += 1
            ids = self.tok(text, add_special_tokens=False, truncation=True, max_length=limit)["input_ids"]
            self.cache[key] = ids
        else:
            self.hits += 1
        return ids

    def prefix(self, instruction: str) -> list[int]:
        """The head every window starts with: [CLS] instruction [SEP]."""
        return self.head + self.encode(instruction, self.cfg.instruction_tokens) + self.sep

    def observation(self, obs: str, action: str) -> list[int]:
        """The observation's tokens within `obs_tokens`: its head, or, when the action's argument is text in it
        (`verb[<an item id>]` on a list, `verb[<a button label>]` at a page's end), half the budget before that
        text and half from it on, so the promise sees what the action acts on."""
        limit = self.cfg.obs_tokens
        whole = self.encode(obs, 4 * limit)
        arg = _ARGUMENT.search(action) if self.cfg.focus else None
        at = obs.lower().find(arg.group(1).strip().lower()) if arg else -1
        if len(whole) <= limit or at <= 0:
            return whole[:limit]
        before = self.encode(obs[max(0, at - 8 * limit) : at], 8 * limit)  # its tail is what we keep
        after = self.encode(obs[at:], limit)
        keep = max(limit - len(after), limit // 2)
        return (before[len(before) - keep :] + after)[:limit]

    def block(self, instruction: str, obs: str, action: str, index: int) -> list[int]:
        """One step's tokens: its number, the state, [SEP], the action and the marker the score is read at."""
        number = self.encode(f"step {index + 1}:", 8) if self.cfg.step_numbers else []
        return (
            number
            + self.observation(clean_observation(obs, instruction), action)
            + self.sep
            + self.encode(action, self.cfg.action_tokens)
            + [self.marker_id]
        )

    # ------------------------------------------------------------------ windows
    def windows(
        self, instruction: str, observations: list[str], actions: list[str], traj: int = 0, last_only: bool = False
    ) -> list[Window]:
        """Windows covering every step (or only the one ending at the last step), latest first."""
        pre = self.prefix(instruction)
        blocks = [self.block(instruction, o, a, i) for i, (o, a) in enumerate(zip(observations, actions))]
        room = self.cfg.max_length - len(pre)
        if any(len(b) > room for b in blocks):
            raise ValueError(
                f"one step needs more than max_length={self.cfg.max_length} tokens; "
                "raise max_length or lower obs_tokens/action_tokens/instruction_tokens"
            )
        out: list[Window] = []
        end = len(blocks)
        while end > 0:
            start, used = end, 0
            while start > 0 and used + len(blocks[start - 1]) <= room:
                start -= 1
                used += len(blocks[start])
            out.append(self._assemble(pre, blocks, start, end, traj))
            if last_only:
                break
            end = start
        return out

    def _assemble(self, pre: list[int], blocks: list[list[int]], start: int, end: int, traj: int) -> Window:
        ids, blk, markers = list(pre), [0] * len(pre), []
        for j in range(start, end):
            ids.extend(blocks[j])
            blk.extend([j - start + 1] * len(blocks[j]))
            markers.append(len(ids) - 1)
        return Window(ids, blk, markers, traj, list(range(start, end)))

    # ------------------------------------------------------------------ cache on disk
    def save_cache(self, path: Path) -> None:
        """Write the token cache to `path` atomically (a training run reuses it on resume)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(self.cache))

    def load_cache(self, path: Path) -> None:
        """Merge a cache written by `save_cache`, if the file exists."""
        if path.is_file():
            self.cache.update(json.loads(path.read_text()))


@dataclass
class Batch:
    """Padded windows ready for the model: ids, block-causal attention, and where the markers are."""

    input_ids: torch.Tensor  # (B, L)
    attention_mask: torch.Tensor  # (B, 1, L, L) bool, block-causal
    marker_mask: torch.Tensor  # (B, L) bool
    windows: list[Window]


def block_causal_mask(blocks: torch.Tensor) -> torch.Tensor:
    """(B, L) block ids (-1 = padding) -> (B, 1, L, L) bool: query q may attend key k iff 0 <= blk[k] <= blk[q].

    Padding queries attend the instruction only, so no attention row is empty (an empty row is NaN).
    """
    q = blocks.clamp(min=0).unsqueeze(2)
    k = blocks.unsqueeze(1)
    return ((k >= 0) & (k <= q)).unsqueeze(1)


def collate(windows: list[Window], pad_id: int) -> Batch:
    """Pad `windows` into one `Batch`."""
    length = max(len(w.ids) for w in windows)
    ids = torch.full((len(windows), length), pad_id, dtype=torch.long)
    blocks = torch.full((len(windows), length), -1, dtype=torch.long)
    marker = torch.zeros((len(windows), length), dtype=torch.bool)
    for i, w in enumerate(windows):
        ids[i, : len(w.ids)] = torch.tensor(w.ids)
        blocks[i, : len(w.blocks)] = torch.tensor(w.blocks)
        marker[i, w.markers] = True
    return Batch(ids, block_causal_mask(blocks), marker, windows)
