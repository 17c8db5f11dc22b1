"""Turn a llama.cpp LoRA GGUF back into a PEFT adapter folder, so training can continue from it.

A shipped adapter (`agents/brains/adapters/*.gguf`) is all that is kept of a training run; an
AgentEvol round continues from the policy it explores with, so it needs that policy as PEFT
weights (`init_adapter=`). This is the inverse of `gguf_adapter.convert_peft_to_gguf` for the
architectures whose rows need no permutation (`gemma3`): A and B are stored in torch layout,
and the scale llama.cpp applies (`alpha / rank`) is PEFT's, so the tensors carry over as they are.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

import numpy as np

from agents.policy.config import LORA_TARGETS
from agents.policy.gguf_adapter import QK_PERMUTED_ARCHS, AdapterConversionError, _gguf_name, read_base_info
from agents.policy.training import write_folder

log = logging.getLogger(__name__)

_ATTENTION = {"q_proj", "k_proj", "v_proj", "o_proj"}


def _module_names(n_layers: int) -> list[tuple[int, str, str]]:
    """(layer, target, HF module name) for every projection a LoRA here may adapt."""
    return [
        (i, t, f"model.layers.{i}.{'self_attn' if t in _ATTENTION else 'mlp'}.{t}")
        for i in range(n_layers)
        for t in LORA_TARGETS
    ]


def convert_gguf_to_peft(gguf_path: str | Path, out_dir: str | Path, *, model: str = "gemma3-270m") -> Path:
    """Write the llama.cpp LoRA in `gguf_path` as a PEFT folder (adapter_config.json + safetensors)."""
    import gguf
    from safetensors.numpy import save_file

    from agents.brains.model_files import model_path
    from agents.policy.hf_model import hf_cache_dir

    src, out = Path(gguf_path).expanduser(), Path(out_dir).expanduser()
    if not src.is_file():
        raise AdapterConversionError(f"{src} does not exist; pass a llama.cpp LoRA adapter (.gguf)")
    base = read_base_info(model_path(model))
    if base.arch in QK_PERMUTED_ARCHS:
        raise AdapterConversionError(f"{model} is {base.arch}: undoing llama.cpp's q/k row order is not implemented")
    try:
        reader = gguf.GGUFReader(str(src))
    except Exception as e:  # gguf raises plain ValueError/struct errors on a foreign or truncated file
        raise AdapterConversionError(f"{src} could not be read as GGUF: {e}") from e
    kind = reader.get_field("general.type")
    if kind is None or bytes(kind.parts[-1]).decode() != "adapter":
        raise AdapterConversionError(f"{src} is not a llama.cpp adapter GGUF (general.type != 'adapter')")
    alpha_field = reader.get_field("adapter.lora.alpha")
    tensors = {t.name: np.array(t.data, dtype=np.float32) for t in reader.tensors}

    weights: dict[str, np.ndarray] = {}
    layers: set[int] = set()
    targets: set[str] = set()
    ranks: set[int] = set()
    for layer, target, module in _module_names(base.n_layers):
        name = _gguf_name(module, base)
        a, b = tensors.pop(f"{name}.lora_a", None), tensors.pop(f"{name}.lora_b", None)
        if a is None and b is None:
            continue
        if a is None or b is None:
            raise AdapterConversionError(f"{src}: {name} has only one of lora_a / lora_b")
        layers.add(layer)
        targets.add(target)
        ranks.add(a.shape[0])
        key = f"base_model.model.{module}"
        weights[f"{key}.lora_A.weight"] = np.ascontiguousarray(a)
        weights[f"{key}.lora_B.weight"] = np.ascontiguousarray(b)
    if tensors:
        raise AdapterConversionError(f"{src}: tensors {sorted(tensors)[:3]} do not belong to {model}'s projections")
    if not weights:
        raise AdapterConversionError(f"{src} holds no LoRA tensors")
    if len(ranks) != 1:
        raise AdapterConversionError(f"{src}: mixed LoRA ranks {sorted(ranks)}; one rank per adapter is supported")
    rank = ranks.pop()
    alpha = float(alpha_field.parts[-1][0]) if alpha_field is not None else float(rank)
    config = {
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "base_model_name_or_path": str(hf_cache_dir(model)),
        "r": rank,
        "lora_alpha": alpha,
        "lora_dropout": 0.0,
        "bias": "none",
        "target_modules": sorted(targets),
        "layers_to_transform": sorted(layers),
        "inference_mode": False,
    }

    def write(tmp: Path) -> None:
        tmp.mkdir(parents=True)
        (tmp / "adapter_config.json").write_text(json.dumps(config, indent=2))
        save_file(weights, str(tmp / "adapter_model.safetensors"))

    write_folder(out, write)
    log.info("wrote %s: %d LoRA pairs (r=%d, alpha %g, layers %s)", out, len(weights) // 2, rank, alpha, sorted(layers))
    return out


def main(argv: list[str] | None = None) -> int:
    """CLI: `python -m agents.policy.peft_from_gguf <adapter.gguf|shipped name> <out_dir>`; exit 2 on bad input."""
    ap = argparse.ArgumentParser(prog="python -m agents.policy.peft_from_gguf", description=__doc__)
    ap.add_argument("adapter", help="a llama.cpp LoRA .gguf or a shipped adapter's name (agentsim-sft)")
    ap.add_argument("out", help="the PEFT folder to write")
    ap.add_argument("--model", default="gemma3-270m")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    from agents.brains.base import BrainError
    from agents.brains.model_files import adapter_path

    try:
        convert_gguf_to_peft(adapter_path(args.adapter, args.model) or args.adapter, args.out, model=args.model)
    except (AdapterConversionError, BrainError) as e:
        log.error("error: %s", e)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
