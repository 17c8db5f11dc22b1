"""The embedded model as a trainable torch module, and its exact inference tokenizer.

transformers reads the shipped GGUF (dequantizing Q4_K_M to float32; 268M parameters, about
45 s the first time, most of it spent converting the 262k-token vocabulary). The converted
weights are cached as safetensors next to the assembled GGUF, so later loads take seconds.
Tokenization always goes through llama.cpp's own tokenizer (vocab-only load), so training
sees exactly the token ids the embedded brain scores at inference.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.brains.model_files import cache_dir, model_path
from envs.util import publish_file

if TYPE_CHECKING:
    from llama_cpp import Llama

log = logging.getLogger(__name__)


def hf_cache_dir(model: str) -> Path:
    """Where the float32 transformers copy of an embedded model lives."""
    return cache_dir() / "hf" / model


def load_hf_model(model: str = "gemma3-270m") -> Any:
    """The embedded model as a float32 `transformers` causal LM (cached after the first GGUF conversion)."""
    import torch
    from safetensors.torch import load_model, save_model
    from transformers import AutoConfig, AutoModelForCausalLM

    target = hf_cache_dir(model)
    weights, config_file = target / "model.safetensors", target / "config.json"
    if weights.exists() and config_file.exists():
        config = AutoConfig.from_pretrained(str(target))
        hf = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        load_model(hf, str(weights))
        return hf
    gguf = model_path(model)
    log.info("converting %s to a float32 transformers model in %s (once, about a minute)", gguf.name, target)
    hf = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    target.mkdir(parents=True, exist_ok=True)
    plain = hf.config.to_dict()
    plain.pop("quantization_config", None)  # the copy is plain float32, not a GGUF view
    publish_file(weights, lambda tmp: save_model(hf, str(tmp)))
    type(hf.config).from_dict(plain).to_json_file(str(config_file))
    return hf


@lru_cache(maxsize=4)
def inference_tokenizer(model: str = "gemma3-270m") -> Llama:
    """llama.cpp's tokenizer for the embedded model (vocabulary only, no weights in memory)."""
    from llama_cpp import Llama

    from agents.brains.llama.runtime import route_native_logs

    route_native_logs()
    return Llama(str(model_path(model)), vocab_only=True, verbose=False)


def tokenize(text: str, model: str = "gemma3-270m") -> list[int]:
    """Token ids exactly as `LocalBrain.tokenize` makes them (turn markers parsed, no BOS added)."""
    return inference_tokenizer(model).tokenize(text.encode("utf-8"), add_bos=False, special=True)
