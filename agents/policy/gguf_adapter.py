"""Turn a PEFT LoRA adapter into a llama.cpp LoRA GGUF, so `LocalBrain(adapter=...)` serves a fine-tune.

Training runs `peft` LoRA on the float32 transformers copy of the embedded model
(`agents.policy.hf_model.load_hf_model`); inference runs the quantized GGUF in llama.cpp, which
applies a LoRA adapter at run time as `W x + scale * B (A x)` on top of the quantized `W`.
The adapter GGUF llama.cpp reads (`src/llama-adapter.cpp`, written by its
`convert_lora_to_gguf.py`) holds:

- metadata `general.type=adapter`, `general.architecture` equal to the base model's,
  `adapter.type=lora`, `adapter.lora.alpha`;
- per adapted base tensor `<gguf name>.lora_a` and `.lora_b`, in torch layout: A is
  (rank, in_features), B is (out_features, rank) (GGUF stores the reversed dims, so
  `a.ne = [in, rank]`, `b.ne = [rank, out]`, matching the base tensor's `ne = [in, out]`);
- the scale llama.cpp uses is `adapter_scale * alpha / rank` with `rank = B.shape[1]`. PEFT's
  scale is `alpha / rank` (or `alpha / sqrt(rank)` with rsLoRA, per-module with `alpha_pattern`);
  any difference is folded into B, so the product is exact.

Row layout: the HF model here is transformers' own load of the GGUF. transformers undoes
llama.cpp's q/k row permutation for the `llama` architecture only (`LlamaTensorProcessor`); for
`gemma3` it changes no projection (only norms, `w - 1`), so HF rows are GGUF rows and B is
written as is. For `llama`, B's q/k rows get llama.cpp's permutation back.

The embedding (frozen and tied to the output in this project) and anything not a LoRA A/B pair
(`modules_to_save`, biases, DoRA magnitudes) cannot go into a llama.cpp LoRA and are refused.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import mmap
import re
import struct
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from envs.util import publish_file

log = logging.getLogger(__name__)

# GGUF architectures whose q/k rows transformers' GGUF loader un-permutes (LlamaTensorProcessor), so
# a LoRA trained on the transformers model needs llama.cpp's permutation on B's rows.
QK_PERMUTED_ARCHS = frozenset({"llama"})
# GGUF architectures this converter knows the row layout of (see the module doc).
SUPPORTED_ARCHS = frozenset({"gemma3"}) | QK_PERMUTED_ARCHS
# Base tensors a llama.cpp LoRA cannot (or, in this project, must not) adapt: the token embedding is
# frozen and tied to the output projection, and llama.cpp expects its A/B flipped.
REFUSED_TENSORS = ("token_embd.weight", "output.weight")
BUILD_HINT = "build one with: python -m agents.policy.gguf_adapter <peft_dir> <out.gguf>"


class AdapterConversionError(ValueError):
    """The PEFT adapter cannot become a llama.cpp LoRA; the message names the file and the problem."""


# ------------------------------------------------------------------------------ base GGUF header
@dataclass
class BaseInfo:
    """What the converter needs from the base GGUF: architecture, sizes, and every tensor's shape."""

    arch: str
    n_layers: int
    n_head: int
    n_head_kv: int
    shapes: dict[str, tuple[int, ...]]  # GGUF name -> ne (innermost first: [in, out] for a matrix)


# fixed byte sizes of the GGUF scalar value types (enum gguf_type; 8 = string, 9 = array)
_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def read_base_info(path: Path) -> BaseInfo:
    """Parse the GGUF header only (metadata scalars and tensor infos).

    `gguf.GGUFReader` builds Python objects for every vocabulary entry (about 10 s for Gemma's
    262k tokens); this skips arrays and reads in well under a second.
    """
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        if m[:4] != b"GGUF":
            raise AdapterConversionError(f"{path} is not a GGUF file")
        version, n_tensors, n_kv = struct.unpack_from("<IQQ", m, 4)
        if version < 2:
            raise AdapterConversionError(f"{path} is GGUF version {version}; only 2 and later are read")
        pos = 24

        def read_str(p: int) -> tuple[str, int]:
            (n,) = struct.unpack_from("<Q", m, p)
            return m[p + 8 : p + 8 + n].decode("utf-8", errors="replace"), p + 8 + n

        def skip_value(t: int, p: int) -> tuple[Any, int]:
            if t in _SCALAR:
                fmt = "<" + _SCALAR[t]
                return struct.unpack_from(fmt, m, p)[0], p + struct.calcsize(fmt)
            if t == 8:
                return read_str(p)
            if t == 9:
                et, count = struct.unpack_from("<IQ", m, p)
                p += 12
                if et in _SCALAR:
                    return None, p + count * struct.calcsize("<" + _SCALAR[et])
                if et == 8:  # the vocabulary: skip each string by its length, no decoding
                    for _ in range(count):
                        p += 8 + struct.unpack_from("<Q", m, p)[0]
                    return None, p
                for _ in range(count):  # nested arrays
                    _, p = skip_value(et, p)
                return None, p
            raise AdapterConversionError(f"{path}: unknown GGUF value type {t}")

        meta: dict[str, Any] = {}
        for _ in range(n_kv):
            key, pos = read_str(pos)
            (t,) = struct.unpack_from("<I", m, pos)
            meta[key], pos = skip_value(t, pos + 4)
        shapes: dict[str, tuple[int, ...]] = {}
        for _ in range(n_tensors):
            name, pos = read_str(pos)
            (n_dims,) = struct.unpack_from("<I", m, pos)
            dims = struct.unpack_from(f"<{n_dims}Q", m, pos + 4)
            pos += 4 + 8 * n_dims + 4 + 8  # dims, ggml type, data offset
            shapes[name] = tuple(int(d) for d in dims)
    arch = str(meta.get("general.architecture", ""))
    n_head = int(meta.get(f"{arch}.attention.head_count", 0) or 0)
    return BaseInfo(
        arch=arch,
        n_layers=int(meta.get(f"{arch}.block_count", 0) or 0),
        n_head=n_head,
        n_head_kv=int(meta.get(f"{arch}.attention.head_count_kv", n_head) or n_head),
        shapes=shapes,
    )


# ------------------------------------------------------------------------------ PEFT side
def _pattern_value(patterns: dict[str, Any], module: str, default: Any) -> Any:
    """PEFT's `rank_pattern`/`alpha_pattern` lookup: the first key matching a dotted suffix of the module name."""
    for key in patterns:
        if re.match(rf"(.*\.)?({key})$", module):
            return patterns[key]
    return default


def _module_name(key: str) -> tuple[str, str]:
    """('model.layers.0.self_attn.q_proj', 'A'|'B') from a saved PEFT key; ('', '') when it is no LoRA A/B."""
    name = key.removeprefix("base_model.model.")
    if name.startswith("model.language_model."):  # a Gemma3ForConditionalGeneration's text tower
        name = "model." + name.removeprefix("model.language_model.")
    for part in ("A", "B"):
        if name.endswith(f".lora_{part}.weight"):
            return name.removesuffix(f".lora_{part}.weight"), part
    return "", ""


def _load_peft(peft_dir: Path) -> tuple[dict[str, Any], dict[str, np.ndarray], Path]:
    """The adapter config and tensors, with errors that name the file and what is wrong."""
    if not peft_dir.is_dir():
        raise AdapterConversionError(
            f"{peft_dir} is not a directory; pass the folder peft's save_pretrained() wrote "
            "(adapter_config.json + adapter_model.safetensors)"
        )
    cfg_file, weights = peft_dir / "adapter_config.json", peft_dir / "adapter_model.safetensors"
    if not cfg_file.is_file():
        raise AdapterConversionError(f"{cfg_file} is missing; {peft_dir} is not a PEFT adapter folder")
    if not weights.is_file():
        hint = (
            " (found adapter_model.bin: re-save with safe_serialization=True)"
            if (peft_dir / "adapter_model.bin").exists()
            else ""
        )
        raise AdapterConversionError(f"{weights} is missing{hint}")
    try:
        cfg = json.loads(cfg_file.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise AdapterConversionError(f"{cfg_file} is not valid JSON: {e}") from e
    from safetensors.numpy import load_file

    try:
        tensors = load_file(str(weights))
    except Exception as e:  # safetensors raises its own error types for a corrupt or truncated file
        raise AdapterConversionError(f"{weights} could not be read: {e}") from e
    return cfg, tensors, cfg_file


def _check_config(cfg: dict[str, Any], cfg_file: Path) -> None:
    """Refuse PEFT options whose effect a plain llama.cpp LoRA (A/B pairs on base matrices) cannot carry."""
    kind = cfg.get("peft_type")
    if kind != "LORA":
        raise AdapterConversionError(f"{cfg_file}: peft_type is {kind!r}; only LORA adapters convert to llama.cpp")
    refused = {
        "use_dora": "DoRA's magnitude vectors",
        "lora_bias": "LoRA bias vectors",
        "modules_to_save": "fully trained modules (modules_to_save)",
        "trainable_token_indices": "trainable token embeddings",
        "layer_replication": "replicated layers",
        "target_parameters": "LoRA on raw parameters (target_parameters)",
        "fan_in_fan_out": "Conv1D-style (fan_in_fan_out) weights",
        "alora_invocation_tokens": "activated LoRA (aLoRA) invocation tokens",
    }
    for key, what in refused.items():
        if cfg.get(key):
            raise AdapterConversionError(
                f"{cfg_file}: {key}={cfg[key]!r} — llama.cpp LoRA adapters cannot hold {what}; retrain without it"
            )
    if cfg.get("bias", "none") != "none":
        raise AdapterConversionError(
            f"{cfg_file}: bias={cfg['bias']!r} trains bias vectors, which llama.cpp LoRA adapters cannot hold; "
            "retrain with bias='none'"
        )
    targets = cfg.get("target_modules") or []
    targets = [targets] if isinstance(targets, str) else list(targets)
    for bad in ("embed_tokens", "lm_head"):
        if any(bad in t for t in targets):
            raise AdapterConversionError(
                f"{cfg_file}: target_modules includes {bad}; the embedding is frozen and tied to the output "
                "projection, and llama.cpp applies no such LoRA here. Retrain with the attention/MLP "
                "projections only (q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj)"
            )


def _gguf_name(module: str, base: BaseInfo) -> str | None:
    """The base GGUF tensor a HF module's weight is, via gguf's TensorNameMap for the base's architecture."""
    import gguf

    arch = next(a for a, n in gguf.MODEL_ARCH_NAMES.items() if n == base.arch)
    return gguf.get_tensor_name_map(arch, base.n_layers).get_name(module + ".weight", try_suffixes=(".weight",))


def _llama_permute(rows: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's q/k row order (convert_hf_to_gguf `LlamaModel.permute`) applied to the rows of B."""
    shape = rows.shape
    return rows.reshape(n_head, 2, shape[0] // n_head // 2, *shape[1:]).swapaxes(1, 2).reshape(shape)


# ------------------------------------------------------------------------------ conversion
def convert_peft_to_gguf(peft_dir: str | Path, out_path: str | Path, *, model: str = "gemma3-270m") -> Path:
    """Write the PEFT LoRA in `peft_dir` as a llama.cpp LoRA GGUF for base `model`; return the path written.

    Checks every pair against the base GGUF (names, layers, shapes) so a wrong base fails here with
    the tensor named, not later inside llama.cpp with a bare 'failed to load'. Written atomically.
    """
    try:
        import gguf
    except ImportError as e:
        raise AdapterConversionError(
            "converting an adapter needs the gguf package: pip install 'agentsim[train]'"
        ) from e

    from agents.brains.model_files import model_path

    peft_dir, out = Path(peft_dir).expanduser(), Path(out_path).expanduser()
    cfg, tensors, cfg_file = _load_peft(peft_dir)
    _check_config(cfg, cfg_file)
    base_file = model_path(model)
    base = read_base_info(base_file)
    if base.arch not in SUPPORTED_ARCHS:
        raise AdapterConversionError(
            f"base model {model} ({base_file.name}) has architecture {base.arch!r}; the converter knows the "
            f"tensor layout of {', '.join(sorted(SUPPORTED_ARCHS))} only"
        )
    trained_on = Path(str(cfg.get("base_model_name_or_path") or ""))
    if trained_on.parent.name == "hf" and trained_on.name != model and not model.endswith(".gguf"):
        raise AdapterConversionError(
            f"{cfg_file}: the adapter was trained on {trained_on.name!r} (base_model_name_or_path={trained_on}), "
            f"not on {model!r}; pass model={trained_on.name!r}"
        )

    pairs: dict[str, dict[str, np.ndarray]] = {}
    for key, value in tensors.items():
        module, part = _module_name(key)
        if not module:
            what = "an embedding LoRA" if "lora_embedding" in key else "not a LoRA A/B weight"
            raise AdapterConversionError(
                f"{peft_dir / 'adapter_model.safetensors'}: tensor {key!r} is {what}; llama.cpp LoRA adapters "
                "hold only lora_A/lora_B pairs of attention and MLP projections"
            )
        pairs.setdefault(module, {})[part] = value

    alpha = float(cfg.get("lora_alpha", cfg.get("r", 8)))
    rsl = bool(cfg.get("use_rslora"))
    writer_tensors: list[tuple[str, np.ndarray]] = []
    for module in sorted(pairs):
        ab = pairs[module]
        if set(ab) != {"A", "B"}:
            raise AdapterConversionError(f"{peft_dir}: {module} has lora_{''.join(ab)} but not its pair")
        a, b = ab["A"].astype(np.float32), ab["B"].astype(np.float32)
        name = _gguf_name(module, base)
        if name in REFUSED_TENSORS:
            raise AdapterConversionError(f"{peft_dir}: {module} maps to {name}, which this converter does not adapt")
        if name is None or name not in base.shapes:
            raise AdapterConversionError(
                f"{peft_dir}: {module} has no counterpart in base model {model} ({base_file.name}, {base.arch}, "
                f"{base.n_layers} layers); was the adapter trained on another base model?"
            )
        ne = base.shapes[name]
        rank = a.shape[0]
        if a.ndim != 2 or b.ndim != 2 or b.shape[1] != rank or (a.shape[1], b.shape[0]) != ne[:2] or len(ne) != 2:
            raise AdapterConversionError(
                f"{peft_dir}: {module} has A {tuple(a.shape)} and B {tuple(b.shape)}, but base tensor {name} of "
                f"{model} is out x in = {ne[1:2] + ne[:1]}; was the adapter trained on another base model?"
            )
        peft_alpha = float(_pattern_value(cfg.get("alpha_pattern") or {}, module, alpha))
        peft_scale = peft_alpha / (math.sqrt(rank) if rsl else rank)
        llama_scale = alpha / rank if alpha else 1.0
        if peft_scale != llama_scale:
            b = b * np.float32(peft_scale / llama_scale)
        if base.arch in QK_PERMUTED_ARCHS and name.endswith((".attn_q.weight", ".attn_k.weight")):
            heads = base.n_head if ".attn_q." in name else base.n_head_kv
            b = _llama_permute(b, heads)
        writer_tensors += [(name + ".lora_a", np.ascontiguousarray(a)), (name + ".lora_b", np.ascontiguousarray(b))]
    if not writer_tensors:
        raise AdapterConversionError(f"{peft_dir / 'adapter_model.safetensors'} holds no LoRA tensors")

    out.parent.mkdir(parents=True, exist_ok=True)

    def write(tmp: Path) -> None:
        w = gguf.GGUFWriter(tmp, base.arch)
        w.add_type(gguf.GGUFType.ADAPTER)
        w.add_string(gguf.Keys.Adapter.TYPE, "lora")
        w.add_float32(gguf.Keys.Adapter.LORA_ALPHA, alpha)
        w.add_name(peft_dir.name)
        for name, arr in writer_tensors:
            w.add_tensor(name, arr)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()

    publish_file(out, write)
    log.info("wrote %s: %d LoRA pairs for %s (alpha %g)", out, len(writer_tensors) // 2, model, alpha)
    return out


def main(argv: list[str] | None = None) -> int:
    """CLI: `python -m agents.policy.gguf_adapter <peft_dir> <out.gguf> [--model NAME]`; exit 2 on bad input."""
    ap = argparse.ArgumentParser(
        prog="python -m agents.policy.gguf_adapter",
        description="Convert a PEFT LoRA adapter folder to a llama.cpp LoRA GGUF for brain.adapter=<out.gguf>.",
    )
    ap.add_argument("peft_dir", help="folder written by peft's save_pretrained()")
    ap.add_argument("out", help="the .gguf file to write")
    ap.add_argument("--model", default="gemma3-270m", help="base model name or .gguf path (default: gemma3-270m)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    from agents.brains.base import BrainError

    try:
        convert_peft_to_gguf(args.peft_dir, args.out, model=args.model)
    except (AdapterConversionError, BrainError) as e:
        log.error("error: %s", e)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
