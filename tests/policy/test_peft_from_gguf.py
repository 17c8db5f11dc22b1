"""llama.cpp LoRA GGUF -> PEFT folder (`agents.policy.peft_from_gguf`): training continues from a shipped adapter."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("gguf")
pytest.importorskip("safetensors")

from agents.brains.model_files import ADAPTER_DIR, model_path  # noqa: E402
from agents.policy.gguf_adapter import AdapterConversionError, convert_peft_to_gguf  # noqa: E402
from agents.policy.peft_from_gguf import convert_gguf_to_peft, main  # noqa: E402

SHIPPED = ADAPTER_DIR / "agentsim-sft.gguf"


def _lora_tensors(path: Path) -> dict[str, np.ndarray]:
    import gguf

    return {t.name: np.array(t.data, dtype=np.float32) for t in gguf.GGUFReader(str(path)).tensors}


def test_shipped_adapter_round_trips_exactly(tmp_path):
    import json

    peft_dir = convert_gguf_to_peft(SHIPPED, tmp_path / "peft")
    cfg = json.loads((peft_dir / "adapter_config.json").read_text())
    assert cfg["peft_type"] == "LORA" and cfg["r"] == 16 and cfg["lora_alpha"] == 32
    layers = cfg["layers_to_transform"]
    assert layers == list(range(18 - len(layers), 18))  # a top block of the 18 layers, as trained
    back = convert_peft_to_gguf(peft_dir, tmp_path / "back.gguf")
    want, got = _lora_tensors(SHIPPED), _lora_tensors(back)
    assert sorted(want) == sorted(got) and len(want) == 2 * len(layers) * len(cfg["target_modules"])
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_recovered_adapter_loads_into_the_training_model(tmp_path):
    """What AgentEvol needs: peft loads the folder onto the transformers model with the same weights."""
    pytest.importorskip("peft")
    torch = pytest.importorskip("torch")
    from peft import PeftModel

    from agents.policy.hf_model import load_hf_model

    peft_dir = convert_gguf_to_peft(SHIPPED, tmp_path / "peft")
    model = PeftModel.from_pretrained(load_hf_model(), str(peft_dir), is_trainable=True)
    want = _lora_tensors(SHIPPED)["blk.17.ffn_down.weight.lora_b"]
    got = model.base_model.model.model.layers[17].mlp.down_proj.lora_B["default"].weight.detach()
    assert torch.equal(got, torch.from_numpy(want))
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)


def test_bad_inputs_are_refused_with_the_reason(tmp_path):
    with pytest.raises(AdapterConversionError, match="does not exist"):
        convert_gguf_to_peft(tmp_path / "nope.gguf", tmp_path / "out")
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a gguf at all")
    with pytest.raises(AdapterConversionError, match="could not be read as GGUF"):
        convert_gguf_to_peft(junk, tmp_path / "out")
    with pytest.raises(AdapterConversionError, match="not a llama.cpp adapter"):
        convert_gguf_to_peft(model_path("gemma3-270m"), tmp_path / "out")  # the base model, not a LoRA
    assert not (tmp_path / "out").exists()
    assert main([str(junk), str(tmp_path / "out")]) == 2


def test_cli_takes_a_shipped_name(tmp_path):
    assert main(["agentsim-sft", str(tmp_path / "peft")]) == 0
    assert (tmp_path / "peft" / "adapter_model.safetensors").is_file()
