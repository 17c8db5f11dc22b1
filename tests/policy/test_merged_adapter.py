"""`brain.merge_adapter=true`: a LoRA folded into the weights scores like the LoRA applied at run time."""

from __future__ import annotations

import numpy as np
import pytest

from agents.brains.base import BrainError
from agents.brains.model_files import ADAPTER_DIR, model_path

MSGS = [
    {"role": "system", "content": "Task: i need a grey v neck tee, size medium, below 50 dollars"},
    {
        "role": "user",
        "content": "Observation:\nZenloft Cotton V Neck Tee [SEP] color [SEP] white [SEP] grey [SEP] size "
        "[SEP] small [SEP] medium [SEP] Buy Now\n\nAvailable actions:\n- click[white]\n- click[grey]\n- click[small]\n"
        "- click[medium]\n- click[buy now]\n- click[< prev]",
    },
]
CANDS = ["click[white]", "click[grey]", "click[small]", "click[medium]", "click[buy now]", "click[< prev]"]


def _logprobs(brain) -> np.ndarray:
    out = brain.choose(MSGS, CANDS, prefix="Action: ")
    return np.array([c.logprob for c in out.candidates])


def test_merged_adapter_scores_like_the_run_time_lora_and_is_cached(tmp_path, monkeypatch):
    from agents.brains.local import LocalBrain
    from agents.brains.merged_model import merged_model

    monkeypatch.setenv("AGENTSIM_CACHE", str(tmp_path))
    lora = LocalBrain(adapter="agentsim-sft", n_ctx=1024, n_seq=8)
    merged = LocalBrain(adapter="agentsim-sft", n_ctx=1024, n_seq=8, merge_adapter=True)
    base = LocalBrain(adapter=None, n_ctx=1024, n_seq=8)
    assert (
        merged.merged and not lora.merged and merged.adapter == lora.adapter == str(ADAPTER_DIR / "agentsim-sft.gguf")
    )
    x, y, z = _logprobs(lora), _logprobs(merged), _logprobs(base)
    gap_merged, gap_base = np.abs(y - x).mean(), np.abs(z - x).mean()
    # the adapter moves these scores by ~4 nats; merging keeps them within re-quantization noise of the LoRA's
    assert gap_base > 1.0 and gap_merged < 0.25 * gap_base, (x.round(2), y.round(2), z.round(2))
    apart = [(i, j) for i in range(len(x)) for j in range(len(x)) if x[i] - x[j] > 0.5]  # clear preferences, not ties
    assert apart and all(y[i] > y[j] for i, j in apart), (x.round(2), y.round(2))
    built = list((tmp_path / "models" / "merged").glob("*.gguf"))
    assert len(built) == 1 and not list((tmp_path / "models" / "merged").glob("*.part"))
    mtime = built[0].stat().st_mtime_ns
    assert merged_model(model_path("gemma3-270m"), ADAPTER_DIR / "agentsim-sft.gguf") == built[0]  # reused
    assert built[0].stat().st_mtime_ns == mtime
    other_scale = merged_model(model_path("gemma3-270m"), ADAPTER_DIR / "agentsim-sft.gguf", scale=0.5)
    assert other_scale != built[0]  # the scale is part of what was merged


def test_merging_a_bad_or_foreign_adapter_is_a_clear_error(tmp_path, monkeypatch):
    import gguf

    from agents.brains.local import LocalBrain

    monkeypatch.setenv("AGENTSIM_CACHE", str(tmp_path / "cache"))
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a gguf at all")
    with pytest.raises(BrainError, match=r"cannot merge the LoRA adapter .*junk.gguf.*not a llama.cpp LoRA GGUF"):
        LocalBrain(adapter=str(junk), n_ctx=256, n_seq=2, merge_adapter=True)

    foreign = tmp_path / "foreign.gguf"  # a LoRA for a deeper model: layer 40 does not exist here
    w = gguf.GGUFWriter(str(foreign), arch="gemma3")
    w.add_string("general.type", "adapter")
    w.add_string("adapter.type", "lora")
    w.add_float32("adapter.lora.alpha", 16.0)
    w.add_tensor("blk.40.attn_q.weight.lora_a", np.zeros((8, 640), dtype=np.float32))
    w.add_tensor("blk.40.attn_q.weight.lora_b", np.zeros((1024, 8), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(BrainError, match=r"adapts blk.40.attn_q.weight, which the base model does not have"):
        LocalBrain(adapter=str(foreign), n_ctx=256, n_seq=2, merge_adapter=True)
    assert not list((tmp_path / "cache" / "models" / "merged").glob("*"))  # nothing half-built left behind
