"""The PRM on onnxruntime: `PRMScorer(model, backend="onnx")` runs whole windows through an ONNX export.

The export is the backbone plus the head, with the block-causal attention built inside the graph from
each token's block id (input `blocks`, -1 = padding; the same rule as `prm.data.block_causal_mask`):
(input_ids, blocks) -> a score at every position, read at the markers. Attention is exported in its
eager form with an additive mask, which onnxruntime runs faster than the exported SDPA with a boolean one.

Like `agents.memory.minilm_onnx` (whose cache folder and atomic publishing it reuses), the .onnx file is
exported once per model content -- named by a hash of the weights, the head and the configs -- into
``$AGENTSIM_CACHE/onnx``, checked against torch and renamed into place. Scores match torch within 1e-4
(measured ~1e-6 on MiniLM with an untrained head, ~4e-5 with head weights of std 1).
bench/prm_scoring_speed.py measures it beside the torch scorer and the raw forward pass.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agents.memory.minilm_onnx import OPSET, cached_export, onnx_dir
from prm.data import Window, block_causal_mask
from prm.model import PRMModel

log = logging.getLogger(__name__)

EXPORT_VERSION = 1  # bump when the wrapper, opset or export settings change
MAX_ABS_DIFF = 1e-4  # export check: ORT vs torch scores, relative to max(1, |score|)


def model_digest(model: PRMModel) -> str:
    """sha256 of everything the export depends on: the backbone's and the PRM's configs and every weight."""
    h = hashlib.sha256()
    h.update(f"prm-onnx-v{EXPORT_VERSION}-opset{OPSET}\n".encode())
    h.update(model.backbone.config.to_json_string(use_diff=False).encode())
    h.update(model.cfg.model_dump_json().encode())
    for name, t in model.state_dict().items():
        t = t.detach().cpu().contiguous()
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)}\n".encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def _fingerprint(model: PRMModel) -> tuple:
    """Which tensors the model holds and how often each was modified in place (cheap: no data is read)."""
    tensors = [*model.named_parameters(), *model.named_buffers()]
    return tuple((name, id(t), t.data_ptr(), t._version) for name, t in tensors)


def onnx_path(digest: str) -> Path:
    return onnx_dir() / f"prm-{digest[:20]}-v{EXPORT_VERSION}-opset{OPSET}.onnx"


def ensure_onnx(model: PRMModel, digest: str | None = None) -> Path:
    """The cached .onnx for this model's content, exporting (and checking) it first if needed."""
    return cached_export(onnx_path(digest or model_digest(model)), lambda dest: export(model, dest), "the PRM")


class _Exported(torch.nn.Module):
    """(input_ids, blocks) -> the head's score at every position; positions from 0, token types 0 (BERT's defaults)."""

    def __init__(self, backbone: torch.nn.Module, head: torch.nn.Module) -> None:
        super().__init__()
        self.backbone = backbone
        self.head = head

    def forward(self, input_ids: torch.Tensor, blocks: torch.Tensor) -> torch.Tensor:
        allowed = block_causal_mask(blocks)
        mask = torch.zeros(allowed.shape, dtype=torch.float32).masked_fill(~allowed, torch.finfo(torch.float32).min)
        pos = torch.cumsum(torch.ones_like(input_ids), 1) - 1
        hidden = self.backbone(
            input_ids=input_ids, attention_mask=mask, token_type_ids=torch.zeros_like(input_ids), position_ids=pos
        ).last_hidden_state
        return self.head(hidden).squeeze(-1)


def export(model: PRMModel, dest: Path) -> None:
    """Export a copy of `model` (eager attention, CPU, eval) and check ORT against the torch model on two windows."""
    backbone: Any = copy.deepcopy(model.backbone).cpu().eval()
    head = copy.deepcopy(model.head).cpu().eval()
    reference = _Exported(*(copy.deepcopy(m).cpu().eval() for m in (model.backbone, model.head)))
    try:
        backbone.set_attn_implementation("eager")
    except (AttributeError, ValueError) as e:  # older transformers or a backbone without it: export as it is
        log.info("exporting with the backbone's own attention (%s)", e)
    wrapper = _Exported(backbone, head).eval()
    ids, blocks = _sample_inputs(model, [(3, 40), (2, 24)])
    axes = {0: "batch", 1: "seq"}
    with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            wrapper,
            (ids, blocks),
            str(dest),
            input_names=["input_ids", "blocks"],
            output_names=["scores"],
            dynamic_axes={"input_ids": axes, "blocks": axes, "scores": axes},
            opset_version=OPSET,
            dynamo=False,
        )
    ids, blocks = _sample_inputs(model, [(4, 30), (1, 50), (2, 12)])
    with torch.no_grad():
        want = reference(ids, blocks).numpy()
    got = OrtPRM(dest, model.steps.pad_id, threads=1).scores(ids.numpy(), blocks.numpy())
    real = blocks.numpy() >= 0
    diff = float(np.abs(got - want)[real].max())
    if not diff <= MAX_ABS_DIFF * max(1.0, float(np.abs(want[real]).max())):
        raise RuntimeError(f"ONNX export of the PRM disagrees with torch (max abs diff {diff:.2e})")
    log.info("ONNX export checked against torch: max abs diff %.1e", diff)


def _sample_inputs(model: PRMModel, shapes: list[tuple[int, int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Padded windows of random tokens: (steps, tokens per step) each after a 6-token instruction."""
    g = torch.Generator().manual_seed(0)
    rows = []
    for steps, per in shapes:
        blk = [0] * 6 + [b for b in range(1, steps + 1) for _ in range(per)]
        ids = torch.randint(1000, 2000, (len(blk),), generator=g)
        rows.append((ids, torch.tensor(blk)))
    length = max(len(r[0]) for r in rows)
    ids = torch.full((len(rows), length), model.steps.pad_id, dtype=torch.long)
    blocks = torch.full((len(rows), length), -1, dtype=torch.long)
    for i, (a, b) in enumerate(rows):
        ids[i, : len(a)], blocks[i, : len(b)] = a, b
    return ids, blocks


class OrtPRM:
    """An onnxruntime session over the exported PRM; called with windows, returns their marker scores, flat."""

    def __init__(self, path: Path, pad_id: int, threads: int | None = None, digest: str = "") -> None:
        import onnxruntime as ort

        self.path, self.pad_id, self.digest = path, pad_id, digest
        self._seen: tuple = ()
        self.threads = threads or torch.get_num_threads()
        so = ort.SessionOptions()
        so.intra_op_num_threads = self.threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.log_severity_level = 3
        # no busy-waiting between runs: spinning ORT threads would take the cores from torch and the caller's
        # own work between scoring calls (measured: it slowed the torch arms that ran next in the bench)
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])

    @classmethod
    def for_model(cls, model: PRMModel, threads: int | None = None) -> OrtPRM:
        """The session for `model`'s current weights (exported on first use)."""
        seen = _fingerprint(model)
        digest = model_digest(model)
        ort_prm = cls(ensure_onnx(model, digest), model.steps.pad_id, threads, digest)
        ort_prm._seen = seen
        return ort_prm

    def refresh(self, model: PRMModel) -> None:
        """Reload if `model`'s weights are no longer those exported (rehashed only when a tensor was replaced or
        modified in place since the last look, which torch's version counters tell cheaply)."""
        seen = _fingerprint(model)
        if seen == self._seen:
            return
        self._seen = seen
        if model_digest(model) != self.digest:
            fresh = type(self).for_model(model, self.threads)
            self.path, self.digest, self.session = fresh.path, fresh.digest, fresh.session

    def scores(self, input_ids: np.ndarray, blocks: np.ndarray) -> np.ndarray:
        """(B, L) ids and block ids (-1 = padding) -> (B, L) scores at every position."""
        feeds = {"input_ids": input_ids.astype(np.int64, copy=False), "blocks": blocks.astype(np.int64, copy=False)}
        return self.session.run(None, feeds)[0]

    def __call__(self, windows: list[Window]) -> np.ndarray:
        """Scores at every marker of `windows`, flat, in (window, step) order (as `PRMModel.forward`)."""
        length = max(len(w.ids) for w in windows)
        ids = np.full((len(windows), length), self.pad_id, dtype=np.int64)
        blocks = np.full((len(windows), length), -1, dtype=np.int64)
        for i, w in enumerate(windows):
            ids[i, : len(w.ids)] = w.ids
            blocks[i, : len(w.blocks)] = w.blocks
        out = self.scores(ids, blocks)
        return np.concatenate([out[i, w.markers] for i, w in enumerate(windows)]).astype(np.float32, copy=False)
