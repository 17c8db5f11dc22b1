"""Start the training forward at the first adapted layer: the frozen layers below it give the same output every epoch.

LoRA sits on the top `lora.layers` decoder layers only, so the hidden states entering the first adapted layer are a
function of the token ids alone. `DecoderPass` computes them once per sequence (no autograd), keeps them in memory
up to a bound, then on disk in the run folder up to another, and starts every later pass at the first adapted layer.
The layer loop mirrors `Gemma3TextModel.forward` (masks per attention type, rotary embeddings per layer type); the
tests compare its logits and LoRA gradients with the full forward, so a transformers change that breaks it shows.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

log = logging.getLogger(__name__)


def first_trainable_layer(decoder: Any) -> int:
    """Index of the lowest decoder layer with a trainable parameter (0 when the embeddings train; len when none)."""
    if any(p.requires_grad for p in decoder.embed_tokens.parameters()):
        return 0
    for i, layer in enumerate(decoder.layers):
        if any(p.requires_grad for p in layer.parameters()):
            return i
    return len(decoder.layers)


def causal_masks(decoder: Any, hidden: torch.Tensor, position_ids: torch.Tensor) -> dict[str, Any]:
    """The decoder's own masks for a plain causal sequence, one per attention type (full, sliding window)."""
    from transformers.masking_utils import create_causal_mask, create_sliding_window_causal_mask

    kw: dict[str, Any] = dict(
        config=decoder.config, inputs_embeds=hidden, attention_mask=None, cache=None, position_ids=position_ids
    )
    return {"full_attention": create_causal_mask(**kw), "sliding_attention": create_sliding_window_causal_mask(**kw)}


def run_layers(
    decoder: Any, hidden: torch.Tensor, start: int, stop: int, masks: dict[str, Any], position_ids: torch.Tensor
) -> torch.Tensor:
    """Decoder layers `start..stop-1` on `hidden` ([1, T, H]), as the decoder's forward runs them."""
    types = decoder.config.layer_types
    rotary = {t: decoder.rotary_emb(hidden, position_ids, t) for t in set(types[start:stop])}
    for i in range(start, stop):
        hidden = decoder.layers[i](
            hidden,
            attention_mask=masks[types[i]],
            position_embeddings=rotary[types[i]],
            position_ids=position_ids,
            cache=None,
        )
    return hidden


def sequence_key(ids: list[int], positions: list[int] | None = None) -> str:
    """A content key for a sequence's frozen output (the same ids and positions give the same hidden states)."""
    h = hashlib.sha1(np.asarray(ids, dtype=np.int64).tobytes())
    if positions is not None:
        h.update(np.asarray(positions, dtype=np.int64).tobytes())
    return h.hexdigest()


@dataclass
class FrozenStore:
    """Frozen-layer outputs by key: in memory up to `memory_bytes`, then files in `disk_dir` up to `disk_bytes`."""

    memory_bytes: int
    disk_dir: Path | None = None
    disk_bytes: int = 0
    memory: dict[str, torch.Tensor] = field(default_factory=dict)
    used_memory: int = 0
    used_disk: int = 0
    hits: int = 0
    misses: int = 0

    def get(self, key: str) -> torch.Tensor | None:
        got = self.memory.get(key)
        if got is None and self.disk_dir is not None:
            path = self.disk_dir / f"{key}.pt"
            if path.exists():
                got = torch.load(path, weights_only=True)
        if got is None:
            self.misses += 1
        else:
            self.hits += 1
        return got

    def put(self, key: str, hidden: torch.Tensor) -> None:
        size = hidden.numel() * hidden.element_size()
        if self.used_memory + size <= self.memory_bytes:
            self.memory[key] = hidden.detach().to("cpu")
            self.used_memory += size
        elif self.disk_dir is not None and self.used_disk + size <= self.disk_bytes:
            self.disk_dir.mkdir(parents=True, exist_ok=True)
            tmp = self.disk_dir / f"{key}.partial"
            torch.save(hidden.detach().to("cpu").clone(), tmp)
            tmp.replace(self.disk_dir / f"{key}.pt")
            self.used_disk += size
        # else: over both bounds, recomputed next time


class DecoderPass:
    """The decoder's final hidden states for a sequence, skipping the frozen layers when their output is stored."""

    def __init__(self, model: Any, store: FrozenStore | None) -> None:
        self.decoder = model.get_base_model().model
        self.store = store
        self.start = first_trainable_layer(self.decoder) if store is not None else 0

    @property
    def device(self) -> torch.device:
        return self.decoder.embed_tokens.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.decoder.embed_tokens.weight.dtype

    def hidden(
        self,
        ids: list[int],
        *,
        positions: list[int] | None = None,
        masks: dict[str, Any] | None = None,
        key: str | None = None,
    ) -> torch.Tensor:
        """[T, H] final (normed) hidden states of `ids`: causal by default, or with the given positions and masks."""
        dec = self.decoder
        ids_t = torch.tensor([ids], device=self.device)
        pos = torch.tensor([positions if positions is not None else list(range(len(ids)))], device=self.device)
        if self.store is None or self.start == 0:
            if positions is None and masks is None:  # exactly today's full forward
                return dec(input_ids=ids_t).last_hidden_state[0]
            emb = dec.embed_tokens(ids_t)
            m = masks if masks is not None else causal_masks(dec, emb, pos)
            return dec.norm(run_layers(dec, emb, 0, len(dec.layers), m, pos))[0]
        key = f"{self.start}-{key or sequence_key(ids, positions)}"  # the layer it stops at is part of the key
        lower = self.store.get(key)
        if lower is not None:
            lower = lower.to(self.device)
        if masks is None:
            probe = lower if lower is not None else torch.empty(1, len(ids), 1, device=self.device, dtype=self.dtype)
            masks = causal_masks(dec, probe, pos)
        if lower is None:
            with torch.no_grad():
                lower = run_layers(dec, dec.embed_tokens(ids_t), 0, self.start, masks, pos)
            self.store.put(key, lower)
        return dec.norm(run_layers(dec, lower, self.start, len(dec.layers), masks, pos))[0]
