"""Skipping the frozen layers is exact: logits and LoRA gradients equal the full forward's, on the real model."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")


@pytest.fixture(scope="module")
def model():
    """The embedded model as `agents.train` loads it, LoRA on the top 2 layers, the B matrices nudged off zero so
    both A's and B's gradients flow (a fresh adapter's A gradients are all zero)."""
    from agents.policy.config import PolicyTrainConfig
    from agents.policy.hf_model import load_hf_model
    from agents.policy.train import attach_lora

    torch.set_num_threads(1)
    torch.manual_seed(0)
    cfg = PolicyTrainConfig(data=["x"], out="x", lora={"r": 4, "layers": 2})
    m = attach_lora(load_hf_model(cfg.model), cfg)
    with torch.no_grad():
        for name, p in m.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.02)
    m.train()
    return m


@pytest.fixture(scope="module")
def sequences():
    """Two short prompts + actions as the trainer packs them, one longer than Gemma 3's 512-token sliding window."""
    from agents.policy.hf_model import tokenize

    short = tokenize(
        "<start_of_turn>user\nFind red shoes under $40.<end_of_turn>\n<start_of_turn>model\nAction: search[red shoes]"
    )
    shelf = " ".join(f"[SEP] item {i}: canvas shoe, size {i % 12}, ${i}.99" for i in range(60))
    long = tokenize(f"<start_of_turn>user\n{shelf}<end_of_turn>\n<start_of_turn>model\nAction: click[item 7]")
    assert len(long) > 512
    return [(short, list(range(len(short) - 4, len(short)))), (long, list(range(len(long) - 5, len(long))))]


def loss_and_grads(model, decoder, seqs):
    from agents.policy.sft_data import Sequence
    from agents.policy.train import action_logits

    model.zero_grad(set_to_none=True)
    logits = []
    for ids, targets in seqs:
        lg, gold = action_logits(model, Sequence(ids, targets), decoder)
        torch.nn.functional.cross_entropy(lg, gold).backward()
        logits.append(lg.detach())
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}
    return logits, grads


def assert_same(a, b):
    (la, ga), (lb, gb) = a, b
    for x, y in zip(la, lb):
        assert torch.allclose(x, y, atol=1e-4, rtol=1e-4), (x - y).abs().max()
    assert ga.keys() == gb.keys() and len(ga) == 2 * 2 * 7  # A and B of 7 projections in 2 layers
    for n in ga:
        assert torch.allclose(ga[n], gb[n], atol=1e-6, rtol=1e-4), (n, (ga[n] - gb[n]).abs().max())
    assert any(g.abs().sum() > 0 for g in ga.values())


def test_starting_at_the_first_adapted_layer_equals_the_full_forward(model, sequences, tmp_path):
    from agents.policy.frozen_layers import DecoderPass, FrozenStore

    full = loss_and_grads(model, DecoderPass(model, None), sequences)
    store = FrozenStore(memory_bytes=1 << 30)
    cached = DecoderPass(model, store)
    assert cached.start == model.config.num_hidden_layers - 2
    first = loss_and_grads(model, cached, sequences)  # computes and stores the frozen output
    assert store.misses == 2 and store.hits == 0 and len(store.memory) == 2
    again = loss_and_grads(model, cached, sequences)  # starts at the first adapted layer
    assert store.hits == 2
    assert_same(full, first)
    assert_same(full, again)
    # over the memory bound: on disk in the run folder, read back the same
    spill = FrozenStore(memory_bytes=0, disk_dir=tmp_path / "frozen", disk_bytes=1 << 30)
    on_disk = DecoderPass(model, spill)
    loss_and_grads(model, on_disk, sequences)
    assert not spill.memory and len(list((tmp_path / "frozen").glob("*.pt"))) == 2
    assert_same(full, loss_and_grads(model, on_disk, sequences))
    assert spill.hits == 2
    # over both bounds: recomputed, still exact
    none = FrozenStore(memory_bytes=0)
    assert_same(full, loss_and_grads(model, DecoderPass(model, none), sequences))
    assert none.hits == 0 and not none.memory
