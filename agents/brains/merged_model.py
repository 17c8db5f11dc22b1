"""A LoRA folded into the base model's weights, so a fine-tuned brain runs at the base model's speed.

llama.cpp applies a LoRA at run time as `W x + s B (A x)`: two extra small matmuls per adapted
projection at every decode. Folding it in once, `W' = W + s B A`, removes them: replayed expert steps
ran 1.05x (fault trees) and 1.07x (WebShop) faster, within 0.18 nats of the run-time LoRA's scores,
against the adapter's own effect of 2.1-4.7 nats (`bench/merged_adapter.py`).

Each adapted tensor is dequantized, merged and quantized with llama.cpp's own quantizer (`ggml_quantize_chunk`
in the ggml library llama-cpp-python ships) to Q8_0, not back to its own 4-5-bit type: a LoRA's update is
about 0.5% of a weight, far below a Q4_K / Q5_0 step, and since the base weight sits exactly on that grid,
re-quantizing rounds almost all of the update away (measured: the merged model scored like the base model).
On Q8_0's grid, 16-32x finer and not the one the base weights sit on, the update survives, with rounding
noise a tenth of the base model's own quantization noise. Everything else (metadata, other tensors) is
copied as it was.

Built on first use (a few seconds) into `$AGENTSIM_CACHE/models/merged/`, named by a hash of the base file,
the adapter's bytes and the scale, and written atomically, so concurrent builders cannot leave a torn file.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
from functools import cache
from pathlib import Path

import numpy as np

from agents.brains.base import BrainError
from agents.brains.model_files import cache_dir
from envs.util import publish_file

log = logging.getLogger(__name__)
FORMAT = "2"  # bump when the merge changes, so old cached files are not reused


class MergeError(RuntimeError):
    """The adapter does not fit the base model; the message says which tensor and why."""


@cache
def _ggml() -> ctypes.CDLL:
    """llama-cpp-python's ggml base library (the quantizers llama.cpp itself uses)."""
    import llama_cpp

    lib_dir = Path(llama_cpp.__file__).parent / "lib"
    for name in ("libggml-base.so", "libggml-base.dylib", "ggml-base.dll"):
        if (lib_dir / name).exists():
            lib = ctypes.CDLL(str(lib_dir / name))
            break
    else:
        raise MergeError(f"no ggml base library in {lib_dir}; cannot re-quantize merged weights")
    lib.ggml_quantize_chunk.restype = ctypes.c_size_t
    lib.ggml_quantize_chunk.argtypes = [
        ctypes.c_int,
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_int64,
        ctypes.c_int64,
        ctypes.c_int64,
        ctypes.c_void_p,
    ]
    lib.ggml_quantize_requires_imatrix.restype = ctypes.c_bool
    lib.ggml_quantize_requires_imatrix.argtypes = [ctypes.c_int]
    return lib


def quantize(weights: np.ndarray, qtype: int) -> np.ndarray:
    """`weights` (rows, n_per_row) as ggml type `qtype`: the bytes, shaped (rows, bytes per row) as GGUF stores them."""
    import gguf

    w = np.ascontiguousarray(weights, dtype=np.float32)
    rows, per_row = w.shape
    byte_shape = gguf.quant_shape_to_byte_shape((rows, per_row), gguf.GGMLQuantizationType(qtype))
    lib = _ggml()
    if lib.ggml_quantize_requires_imatrix(qtype):
        raise MergeError(f"ggml type {qtype} needs an importance matrix to quantize")
    out = np.empty(byte_shape, dtype=np.uint8)
    n = lib.ggml_quantize_chunk(qtype, w.ctypes.data, out.ctypes.data, 0, rows, per_row, None)
    if n != out.nbytes:
        raise MergeError(f"ggml wrote {n} bytes for a {qtype} tensor of {out.nbytes}")
    return out


def lora_deltas(adapter: Path, scale: float) -> dict[str, np.ndarray]:
    """Per adapted base tensor name: `scale * alpha / rank * B @ A`, shaped like the base tensor (out, in)."""
    import gguf

    reader = gguf.GGUFReader(str(adapter))
    field = reader.fields.get("adapter.lora.alpha")
    if field is None:
        raise MergeError(f"{adapter} has no adapter.lora.alpha: not a llama.cpp LoRA GGUF")
    alpha = float(field.contents())
    parts: dict[str, dict[str, np.ndarray]] = {}
    for t in reader.tensors:
        base, _, part = t.name.rpartition(".lora_")
        if part not in ("a", "b"):
            raise MergeError(f"{adapter}: tensor {t.name} is not a LoRA A/B matrix")
        parts.setdefault(base, {})[part] = gguf.quants.dequantize(t.data, t.tensor_type)
    deltas = {}
    for name, ab in parts.items():
        if set(ab) != {"a", "b"}:
            raise MergeError(f"{adapter}: {name} has only lora_{''.join(ab)}")
        a, b = ab["a"].astype(np.float32), ab["b"].astype(np.float32)  # (rank, in), (out, rank)
        deltas[name] = (scale * alpha / b.shape[1]) * (b @ a)
    return deltas


def merge(base: Path, adapter: Path, scale: float, out: Path) -> int:
    """Write `out`: the base GGUF with the adapter folded into its weights. Returns the tensors merged."""
    import gguf

    deltas = lora_deltas(adapter, scale)
    reader = gguf.GGUFReader(str(base))
    tensors = {t.name: t for t in reader.tensors}
    merged: dict[str, np.ndarray] = {}
    for name, delta in deltas.items():
        t = tensors.get(name)
        if t is None:
            raise MergeError(f"it adapts {name}, which the base model does not have: an adapter for another model")
        w = gguf.quants.dequantize(t.data, t.tensor_type).reshape(-1, int(t.shape[0]))
        if w.shape != delta.shape:
            raise MergeError(f"{name}: the adapter's product is {delta.shape}, the base tensor {w.shape}")
        merged[name] = w + delta
    arch = str(reader.fields["general.architecture"].contents())

    def write(tmp: Path) -> None:
        writer = gguf.GGUFWriter(tmp, arch=arch, endianess=reader.endianess)
        for field in reader.fields.values():  # metadata as it was (the writer adds the architecture itself)
            if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
                continue
            kind = field.types[0]
            sub = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
            writer.add_key_value(field.name, field.contents(), kind, sub_type=sub)
        data: list[np.ndarray] = []
        for t in reader.tensors:
            if t.name in merged:  # float tensors stay float; quantized ones become Q8_0 (see the module's docstring)
                q = t.tensor_type
                if q == gguf.GGMLQuantizationType.F32:
                    arr = merged[t.name].astype(np.float32)
                elif q == gguf.GGMLQuantizationType.F16:
                    arr = merged[t.name].astype(np.float16)
                else:
                    q = gguf.GGMLQuantizationType.Q8_0
                    arr = quantize(merged[t.name], int(q))
            else:
                q, arr = t.tensor_type, np.asarray(t.data)
            writer.add_tensor_info(t.name, arr.shape, arr.dtype, arr.nbytes, q)
            data.append(arr)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_ti_data_to_file()
        for arr in data:
            writer.write_tensor_data(arr, tensor_endianess=reader.endianess)
        writer.close()

    publish_file(out, write)
    return len(merged)


def merged_model(base: str | Path, adapter: str | Path, scale: float = 1.0) -> Path:
    """The cached merged GGUF for (base, adapter, scale), built on first use."""
    base, adapter = Path(base), Path(adapter)
    h = hashlib.sha256(f"{FORMAT}|{base.name}|{base.stat().st_size}|{scale!r}|".encode())
    h.update(adapter.read_bytes())
    out = cache_dir() / "merged" / f"{base.stem}+{adapter.stem}-{h.hexdigest()[:16]}.gguf"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    n = merge(base, adapter, scale, out)
    log.info("merged %s into %s (%d tensors): %s", adapter.name, base.name, n, out)
    return out


def merged_weights(base: str | Path, adapter: str | Path, scale: float = 1.0) -> Path:
    """`merged_model` for the brain: whatever is wrong with the adapter becomes a BrainError that says what."""
    try:
        return merged_model(base, adapter, scale)
    except MergeError as e:
        raise BrainError(f"cannot merge the LoRA adapter {adapter} into {Path(base).name}: {e}") from e
    except (ValueError, KeyError, IndexError) as e:  # gguf's reader on a file that is no GGUF
        raise BrainError(
            f"cannot merge the LoRA adapter {adapter} into {Path(base).name}: not a llama.cpp LoRA GGUF ({e}); "
            "build one with: python -m agents.policy.gguf_adapter <peft_dir> <out.gguf>"
        ) from e
