"""Which weights llama.cpp runs for `brain=local`: the model file, and the LoRA adapter folded into it or applied
at run time."""

from __future__ import annotations

from typing import cast

from agents.brains.llama.runtime import check_adapter_file
from agents.brains.merged_model import merged_weights
from agents.brains.model_files import adapter_path


def resolve_adapter(
    path: str, model: str, adapter: str | None, adapter_scale: float, merge_adapter: bool
) -> tuple[str, str | None, str | None]:
    """(the GGUF llama.cpp loads, the LoRA it applies at run time, the LoRA in use) for `brain.adapter` (resolved: a
    shipped name, a path or None) on the model file `path`; `merge_adapter` folds the LoRA into the weights once."""
    lora = adapter_path(adapter, model)
    weights = path
    if lora is not None and merge_adapter:
        lora = cast(str, check_adapter_file(lora))
        weights, lora_at_run_time = str(merged_weights(path, lora, adapter_scale)), None
    else:
        lora_at_run_time = lora
    return weights, lora_at_run_time, lora
