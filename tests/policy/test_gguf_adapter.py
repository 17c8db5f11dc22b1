"""PEFT LoRA -> llama.cpp LoRA GGUF (`agents.policy.gguf_adapter`) and `LocalBrain(adapter=...)`, on the real model.

The base models differ (llama.cpp runs Q4_K_M, transformers the dequantized float32 copy), so
the checks compare what the adapter *changes*: logits with the adapter minus without, at the
last position of a fixed prompt, in llama.cpp and in transformers.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("gguf")

from agents.brains.base import BrainError  # noqa: E402
from agents.brains.local import LocalBrain  # noqa: E402
from agents.policy.gguf_adapter import (  # noqa: E402
    QK_PERMUTED_ARCHS,
    SUPPORTED_ARCHS,
    AdapterConversionError,
    _llama_permute,
    convert_peft_to_gguf,
    main,
)
from tests.shopping_prompt import CANDS, MSGS  # noqa: E402

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


@dataclass
class Built:
    """Adapters made with peft on the real transformers model, and what transformers says they do."""

    tokens: list[int]  # the fixed prompt (BOS first), as both runtimes see it
    random_dir: Path  # r=8 on all projections, B ~ N(0, 0.02): changes every output
    random_gguf: Path
    hf_delta: np.ndarray  # transformers: last-position logits with the random adapter minus without
    prefer_dir: Path  # three optimizer steps towards "Action: click[B02]" on MSGS
    prefer_gguf: Path
    embed_dir: Path  # a LoRA on embed_tokens (llama.cpp cannot take it here)


@pytest.fixture(scope="module")
def built(tmp_path_factory, local_brain) -> Built:
    torch = pytest.importorskip("torch")
    pytest.importorskip("peft")
    # one torch thread: on a shared 2-core machine torch's OpenMP barriers stall when the cores are
    # busy (a training step took 30-60 s with 2 threads, 2 s with 1)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _build(tmp_path_factory.mktemp("adapters"), local_brain)
    finally:
        torch.set_num_threads(threads)


def _build(root: Path, local_brain: LocalBrain) -> Built:
    import peft
    import torch

    from agents.policy.hf_model import load_hf_model

    torch.manual_seed(0)
    hf = load_hf_model().eval()
    bos = local_brain.llm.token_bos()
    head = local_brain.prompt_text(MSGS) + "Action:"
    tokens = [bos] + local_brain.tokenize(head)

    def last_logits(model) -> np.ndarray:
        with torch.no_grad():
            return model(input_ids=torch.tensor([tokens]), logits_to_keep=1).logits[0, -1].double().numpy()

    # 1. a random LoRA whose B is not zero, so it moves every logit
    pm = peft.get_peft_model(hf, peft.LoraConfig(r=8, lora_alpha=16, target_modules=TARGETS))
    with torch.no_grad():
        for name, p in pm.named_parameters():
            if "lora_B" in name:
                p.normal_(0.0, 0.02)
    adapted = last_logits(pm)
    with pm.disable_adapter():
        base = last_logits(pm)
    random_dir = root / "random"
    pm.save_pretrained(str(random_dir))
    hf = pm.unload()

    # 2. a LoRA nudged (a few steps, from PEFT's usual zero-B start) to answer click[B02]
    pm = peft.get_peft_model(hf, peft.LoraConfig(r=8, lora_alpha=16, target_modules=TARGETS))
    full = [bos] + local_brain.tokenize(head + " click[B02]")
    k = next(i for i, (a, b) in enumerate(zip(tokens + [-1], full)) if a != b)  # first answer token
    ids, target = torch.tensor([full]), torch.tensor(full[k:])
    opt = torch.optim.Adam([p for p in pm.parameters() if p.requires_grad], lr=3e-3)
    for _ in range(3):
        logits = pm(input_ids=ids, logits_to_keep=len(full) - k + 1).logits[0, :-1]  # rows predicting full[k:]
        loss = torch.nn.functional.cross_entropy(logits, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
    prefer_dir = root / "prefer"
    pm.save_pretrained(str(prefer_dir))
    hf = pm.unload()

    # 3. a LoRA on the embedding (refused by the converter)
    with warnings.catch_warnings():  # peft warns that the embedding is tied: that is why it is refused
        warnings.simplefilter("ignore", UserWarning)
        pm = peft.get_peft_model(hf, peft.LoraConfig(r=4, target_modules=["embed_tokens", "q_proj"]))
    embed_dir = root / "embed"
    pm.save_pretrained(str(embed_dir), save_embedding_layers=False)
    pm.unload()
    del hf, pm

    return Built(
        tokens=tokens,
        random_dir=random_dir,
        random_gguf=convert_peft_to_gguf(random_dir, root / "random.gguf"),
        hf_delta=adapted - base,
        prefer_dir=prefer_dir,
        prefer_gguf=convert_peft_to_gguf(prefer_dir, root / "prefer.gguf"),
        embed_dir=embed_dir,
    )


def _last_logits(brain: LocalBrain, tokens: list[int]) -> np.ndarray:
    out = brain.runtime.eval_after(0, tokens).astype(np.float64)
    brain.scorer.last_logits = None  # the cache now holds `tokens`; do not let choose() reuse stale logits
    return out


def _copy(src: Path, dst: Path, **config: object) -> Path:
    """A copy of a PEFT adapter folder with some adapter_config.json keys changed."""
    shutil.copytree(src, dst)
    cfg = json.loads((dst / "adapter_config.json").read_text())
    cfg.update(config)
    (dst / "adapter_config.json").write_text(json.dumps(cfg))
    return dst


# ------------------------------------------------------------------------------ the GGUF file
@pytest.mark.slow
def test_written_gguf_is_a_llama_cpp_lora_for_gemma3(built):
    import gguf

    r = gguf.GGUFReader(str(built.random_gguf))
    assert r.fields["general.type"].contents() == "adapter"
    assert r.fields["general.architecture"].contents() == "gemma3"
    assert r.fields["adapter.type"].contents() == "lora"
    assert r.fields["adapter.lora.alpha"].contents() == pytest.approx(16.0)
    shapes = {t.name: t.shape.tolist() for t in r.tensors}
    assert len(shapes) == 18 * len(TARGETS) * 2
    # GGUF dims are innermost first: base attn_q is [640 in, 1024 out]; a = [in, rank], b = [rank, out]
    assert shapes["blk.0.attn_q.weight.lora_a"] == [640, 8]
    assert shapes["blk.0.attn_q.weight.lora_b"] == [8, 1024]
    assert shapes["blk.17.ffn_down.weight.lora_a"] == [2048, 8]
    assert shapes["blk.17.ffn_down.weight.lora_b"] == [8, 640]
    assert not list(built.random_gguf.parent.glob("*.partial"))


@pytest.mark.slow
def test_rslora_and_alpha_pattern_are_folded_into_b(built, tmp_path):
    """llama.cpp scales by alpha/rank; PEFT's other scales must come out the same after conversion."""
    import gguf

    def lora_b(folder: Path, name: str) -> np.ndarray:
        out = convert_peft_to_gguf(folder, tmp_path / f"{folder.name}.gguf")
        return next(t for t in gguf.GGUFReader(str(out)).tensors if t.name == name).data.astype(np.float64)

    plain_q, plain_v = (lora_b(built.random_dir, f"blk.3.attn_{p}.weight.lora_b") for p in "qv")
    rs = _copy(built.random_dir, tmp_path / "rslora", use_rslora=True)  # scale alpha/sqrt(r) instead of alpha/r
    np.testing.assert_allclose(lora_b(rs, "blk.3.attn_q.weight.lora_b"), plain_q * np.sqrt(8), rtol=1e-6)
    pat = _copy(built.random_dir, tmp_path / "pattern", alpha_pattern={"q_proj": 32})  # q_proj alpha 32, rest 16
    np.testing.assert_allclose(lora_b(pat, "blk.3.attn_q.weight.lora_b"), plain_q * 2, rtol=1e-6)
    np.testing.assert_allclose(lora_b(pat, "blk.3.attn_v.weight.lora_b"), plain_v, rtol=1e-6)


def test_qk_permutation_matches_transformers_gguf_loader():
    """B's q/k rows are permuted exactly where transformers un-permutes the GGUF's (llama), and by the inverse."""
    pytest.importorskip("transformers")
    from transformers.modeling_gguf_pytorch_utils import TENSOR_PROCESSORS, LlamaTensorProcessor

    permuting = {a for a, proc in TENSOR_PROCESSORS.items() if issubclass(proc, LlamaTensorProcessor)}
    assert permuting & SUPPORTED_ARCHS == QK_PERMUTED_ARCHS
    assert "gemma3" in TENSOR_PROCESSORS and "gemma3" not in permuting  # gemma3 rows are the GGUF's as they are
    undo = LlamaTensorProcessor()._reverse_permute_weights
    b = np.random.default_rng(0).normal(size=(9 * 64, 8))
    np.testing.assert_array_equal(undo(_llama_permute(b, 9), 9, 9), b)  # q: 9 heads
    b = b[: 3 * 64]
    np.testing.assert_array_equal(undo(_llama_permute(b, 3), 9, 3), b)  # k: 3 kv heads


# ------------------------------------------------------------------------------ llama.cpp vs transformers
@pytest.fixture(scope="module")
def adapted_brain(built) -> LocalBrain:
    return LocalBrain(model="gemma3-270m", n_ctx=1024, seed=0, adapter=str(built.random_gguf))


@pytest.mark.slow
def test_llama_cpp_logit_change_matches_transformers(built, local_brain, adapted_brain):
    assert adapted_brain.n_seq > 1  # the multi-sequence context swap happened and must keep the adapter
    llama_delta = _last_logits(adapted_brain, built.tokens) - _last_logits(local_brain, built.tokens)
    hf_delta = built.hf_delta
    assert np.abs(hf_delta).mean() > 0.5  # the adapter really moves the logits
    r = float(np.corrcoef(llama_delta, hf_delta)[0, 1])
    assert r > 0.95, f"Pearson r of the logit changes {r:.3f}"
    big = np.argsort(-np.abs(hf_delta))[:1000]  # the tokens the adapter moves most go the same way
    assert np.mean(np.sign(llama_delta[big]) == np.sign(hf_delta[big])) > 0.95
    # same scale (alpha/r): a wrong scale would be off by 2x or more; Q4 vs float32 bases move it by up to ~20%
    assert np.abs(llama_delta).mean() == pytest.approx(np.abs(hf_delta).mean(), rel=0.25)


@pytest.mark.slow
def test_adapter_survives_the_context_swap_and_scales(built, adapted_brain, tmp_path):
    """Llama's own one-sequence context (no swap) and the swapped one agree; adapter_scale=0.5 is B halved."""
    from safetensors.numpy import load_file, save_file

    swapped = _last_logits(adapted_brain, built.tokens)
    single = LocalBrain(model="gemma3-270m", n_ctx=1024, n_seq=1, adapter=str(built.random_gguf))
    assert single.n_seq == 1
    np.testing.assert_allclose(_last_logits(single, built.tokens), swapped, atol=0.05)
    del single
    halved = _copy(built.random_dir, tmp_path / "halved")
    t = load_file(str(halved / "adapter_model.safetensors"))
    save_file({k: v * 0.5 if ".lora_B." in k else v for k, v in t.items()}, str(halved / "adapter_model.safetensors"))
    by_weights = LocalBrain(
        model="gemma3-270m", n_ctx=1024, adapter=str(convert_peft_to_gguf(halved, tmp_path / "h.gguf"))
    )
    expected = _last_logits(by_weights, built.tokens)
    del by_weights
    by_scale = LocalBrain(model="gemma3-270m", n_ctx=1024, adapter=str(built.random_gguf), adapter_scale=0.5)
    got = _last_logits(by_scale, built.tokens)
    np.testing.assert_allclose(got, expected, atol=0.05)
    assert np.abs(got - swapped).mean() > 0.2  # and it is not the full-scale adapter


@pytest.mark.slow
def test_choose_follows_the_fine_tune(built, local_brain):
    before = local_brain.choose(MSGS, CANDS, prefix="Action: ")
    brain = LocalBrain(model="gemma3-270m", n_ctx=1024, adapter=str(built.prefer_gguf))
    after = brain.choose(MSGS, CANDS, prefix="Action: ")
    assert before.text == "Action: click[B01]"  # the base model picks the red t-shirt
    assert after.text == "Action: click[B02]"  # the adapter was trained towards B02
    lp = {c.text: c.logprob for c in before.candidates}
    lp_after = {c.text: c.logprob for c in after.candidates}
    assert lp_after["click[B02]"] > lp["click[B02]"] + 0.5
    assert brain.adapter == str(built.prefer_gguf)


# ------------------------------------------------------------------------------ bad input
def test_missing_folder_is_named(tmp_path):
    with pytest.raises(AdapterConversionError, match=r"nope is not a directory"):
        convert_peft_to_gguf(tmp_path / "nope", tmp_path / "a.gguf")
    (tmp_path / "empty").mkdir()
    with pytest.raises(AdapterConversionError, match=r"empty/adapter_config.json is missing"):
        convert_peft_to_gguf(tmp_path / "empty", tmp_path / "a.gguf")
    assert not (tmp_path / "a.gguf").exists()


def test_cli_exits_2_with_the_message(tmp_path):
    res = subprocess.run(
        [sys.executable, "-m", "agents.policy.gguf_adapter", str(tmp_path / "nope"), str(tmp_path / "a.gguf")],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert res.returncode == 2
    assert "nope is not a directory" in res.stderr


@pytest.mark.slow
def test_cli_converts(built, tmp_path):
    assert main([str(built.random_dir), str(tmp_path / "cli.gguf")]) == 0
    assert (tmp_path / "cli.gguf").stat().st_size == built.random_gguf.stat().st_size


@pytest.mark.slow
def test_unconvertible_adapters_are_refused(built, tmp_path):
    out = tmp_path / "x.gguf"
    with pytest.raises(AdapterConversionError, match=r"adapter_config.json: target_modules includes embed_tokens"):
        convert_peft_to_gguf(built.embed_dir, out)
    # the tensors themselves are checked too, whatever the config says
    sneaky = _copy(built.embed_dir, tmp_path / "sneaky", target_modules=["q_proj"])
    with pytest.raises(AdapterConversionError, match=r"embed_tokens.lora_embedding_A.*is an embedding LoRA"):
        convert_peft_to_gguf(sneaky, out)
    ia3 = _copy(built.random_dir, tmp_path / "ia3", peft_type="IA3")
    with pytest.raises(AdapterConversionError, match=r"ia3/adapter_config.json: peft_type is 'IA3'; only LORA"):
        convert_peft_to_gguf(ia3, out)
    dora = _copy(built.random_dir, tmp_path / "dora", use_dora=True)
    with pytest.raises(AdapterConversionError, match=r"use_dora=True .* cannot hold DoRA"):
        convert_peft_to_gguf(dora, out)
    assert not out.exists() and not list(tmp_path.glob("*.partial"))


@pytest.mark.slow
def test_base_model_mismatch_is_refused(built, tmp_path):
    from safetensors.numpy import load_file, save_file

    out = tmp_path / "x.gguf"
    other = _copy(built.random_dir, tmp_path / "other", base_model_name_or_path="/cache/models/hf/smollm2-135m")
    with pytest.raises(AdapterConversionError, match=r"trained on 'smollm2-135m'.*pass model='smollm2-135m'"):
        convert_peft_to_gguf(other, out)

    def rewrite(name: str, edit) -> Path:
        d = _copy(built.random_dir, tmp_path / name)
        t = load_file(str(d / "adapter_model.safetensors"))
        save_file(edit(t), str(d / "adapter_model.safetensors"))
        return d

    key = "base_model.model.model.layers.2.self_attn.q_proj.lora_A.weight"
    narrow = rewrite("narrow", lambda t: {**t, key: np.ascontiguousarray(t[key][:, :512])})  # in 512, base has 640
    with pytest.raises(
        AdapterConversionError, match=r"layers.2.self_attn.q_proj has A \(8, 512\).*blk.2.attn_q.weight"
    ):
        convert_peft_to_gguf(narrow, out)
    deep = rewrite("deep", lambda t: {k.replace("layers.17.", "layers.30."): v for k, v in t.items()})  # 18 layers
    with pytest.raises(AdapterConversionError, match=r"layers.30.mlp.down_proj has no counterpart .*18 layers"):
        convert_peft_to_gguf(deep, out)
    half = rewrite("half", lambda t: {k: v for k, v in t.items() if k != key})
    with pytest.raises(AdapterConversionError, match=r"layers.2.self_attn.q_proj has lora_B but not its pair"):
        convert_peft_to_gguf(half, out)
    assert not out.exists()


def test_brain_names_a_missing_adapter_and_how_to_build_one(tmp_path):
    with pytest.raises(BrainError, match=r"nope.gguf does not exist.*python -m agents.policy.gguf_adapter"):
        LocalBrain(model="gemma3-270m", adapter=str(tmp_path / "nope.gguf"))
    peft_dir = tmp_path / "peft"
    peft_dir.mkdir()
    (peft_dir / "adapter_config.json").write_text("{}")
    with pytest.raises(BrainError, match=r"is a PEFT adapter folder.*gguf_adapter .*peft <out.gguf>"):
        LocalBrain(model="gemma3-270m", adapter=str(peft_dir))


def test_brain_refuses_a_file_that_is_no_lora_gguf(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf at all")
    with pytest.raises(BrainError, match=r"could not load the LoRA adapter .*bad.gguf .*invalid magic"):
        LocalBrain(model="gemma3-270m", n_ctx=256, adapter=str(bad))
