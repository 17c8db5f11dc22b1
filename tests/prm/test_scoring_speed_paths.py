"""The scorer's fast paths give the scores of the plain one: shared prefixes, batching, the onnxruntime backend.

The reference is the straightforward computation: every window alone through `PRMModel.forward`.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch

import prm.scoring as scoring
from prm.data import TextConfig, collate
from prm.model import PRMConfig, PRMModel
from prm.scoring import PRMScorer

INSTR = "i want a red cotton dress, size large, under 40 dollars"
OBS = [
    f"WebShop [SEP] Instruction: [SEP] {INSTR} [SEP] Search",
    "Back to Search [SEP] Page 1 [SEP] B01 [SEP] Red Cotton Dress [SEP] $30.00 [SEP] B02 [SEP] Blue Jeans [SEP] $20.00",
    "Back to Search [SEP] < Prev [SEP] size [SEP] small [SEP] large [SEP] Red Cotton Dress [SEP] $30.00 [SEP] Buy Now",
    "Back to Search [SEP] < Prev [SEP] size [SEP] small [SEP] large (clicked) [SEP] Red Cotton Dress [SEP] Buy Now",
]
ACTS = ["search[red cotton dress]", "click[b01]", "click[large]", "click[buy now]"]
LAST = ["click[large]", "click[small]", "click[< prev]", "click[buy now]", "click[back to search]", "click[red]"]


def make_model(backbone: str, **text) -> PRMModel:
    torch.manual_seed(0)
    m = PRMModel.from_backbone(PRMConfig(base_backbone=backbone, text=TextConfig(**text))).eval()
    torch.nn.init.normal_(m.head.weight, std=1.0)  # spread the scores so that equality is a real check
    return m


@pytest.fixture(scope="module")
def model(tiny_backbone):
    return make_model(tiny_backbone, max_length=256)


def siblings(n_steps: int, actions=LAST):
    """Items that share their first n_steps - 1 steps and differ in the last action (a beam's children)."""
    obs = (OBS * 4)[:n_steps]
    acts = (ACTS * 4)[: n_steps - 1]
    return [(INSTR, obs, [*acts, a]) for a in actions]


def reference_last(model: PRMModel, items) -> np.ndarray:
    out = []
    with torch.no_grad():
        for instr, obs, acts in items:
            [w] = model.steps.windows(instr, list(obs), list(acts), last_only=True)
            out.append(model(collate([w], model.steps.pad_id)).numpy()[-1])
    return np.array(out)


def reference_many(model: PRMModel, items) -> list[np.ndarray]:
    out = []
    with torch.no_grad():
        for instr, obs, acts in items:
            s = np.zeros(len(acts))
            for w in model.steps.windows(instr, list(obs), list(acts)):
                s[w.steps] = model(collate([w], model.steps.pad_id)).numpy()
            out.append(s)
    return out


def beam_items():
    """Several parents' children in one call, at different depths, plus a lone window and a duplicate."""
    return siblings(3) + siblings(4, LAST[:3]) + siblings(2, LAST[:4]) + [(INSTR, OBS[:1], ACTS[:1])] + siblings(3)[:1]


def test_score_last_with_shared_prefixes_equals_per_window_reference(model):
    items = beam_items()
    want = reference_last(model, items)
    shared = PRMScorer(model, batch_size=4)
    got = shared.score_last(items)
    assert shared.stats.shared_windows > 0 and shared.share_prefix  # the fast path ran and passed its check
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=1e-5)
    whole = PRMScorer(model, batch_size=4, share_prefix=False)
    np.testing.assert_allclose(whole.score_last(items), want, atol=1e-5, rtol=1e-5)
    assert whole.stats.shared_windows == 0
    assert np.unique(np.round(want, 4)).size > len(LAST)  # siblings really differ


def test_score_many_with_shared_prefixes_equals_reference(model):
    """All-steps windows of siblings: the shared prefix's markers are scored once, for every window."""
    items = siblings(4) + siblings(3, LAST[:2])
    s = PRMScorer(model, batch_size=3)
    got = s.score_many(items)
    assert s.stats.shared_windows > 0
    for g, w in zip(got, reference_many(model, items)):
        np.testing.assert_allclose(g, w, atol=1e-5, rtol=1e-5)


def test_long_trajectories_many_siblings_small_batches(tiny_backbone, monkeypatch):
    """Several windows per trajectory, more last steps than fit one packed row, prefixes over several batches."""
    m = make_model(tiny_backbone, max_length=96, obs_tokens=16, action_tokens=8, instruction_tokens=12)
    monkeypatch.setattr(scoring, "MIN_SAVED_TOKENS", 1)
    many = [f"click[option {i}]" for i in range(16)]  # 16 last steps of 15 tokens: more than one packed row
    items = siblings(9, many) + siblings(6, LAST) + siblings(2, LAST[:2])
    s = PRMScorer(m, batch_size=2)
    np.testing.assert_allclose(s.score_last(items), reference_last(m, items), atol=1e-5, rtol=1e-5)
    assert s.stats.shared_windows == len(items)
    s.clear()
    for g, w in zip(s.score_many(items), reference_many(m, items)):
        np.testing.assert_allclose(g, w, atol=1e-5, rtol=1e-5)


def test_sharing_only_when_it_saves_enough(model):
    """Two siblings after a short prefix: not worth a second forward pass, so they run whole."""
    items = siblings(1, LAST[:2])
    s = PRMScorer(model)
    np.testing.assert_allclose(s.score_last(items), reference_last(model, items), atol=1e-5, rtol=1e-5)
    assert s.stats.shared_windows == 0 and s.stats.windows == 2


def test_cache_hits_are_exact_and_counted(model):
    items = siblings(3)
    s = PRMScorer(model)
    first = s.score_last(items)
    windows = s.stats.windows
    again = s.score_last(items[::-1])
    np.testing.assert_array_equal(again, first[::-1])
    assert s.stats.windows == windows and s.stats.cache_hits == len(items)


def test_a_backbone_without_a_usable_cache_falls_back_to_whole_windows(model, monkeypatch, caplog):
    monkeypatch.setattr(scoring, "MIN_SAVED_TOKENS", 1)
    monkeypatch.setattr(scoring, "_cache_argument", lambda backbone: "no_such_argument")
    items = siblings(3)
    s = PRMScorer(model)
    with caplog.at_level(logging.WARNING, logger="prm.scoring"):
        got = s.score_last(items)
    assert not s.share_prefix and "shared-prefix scoring disabled" in caplog.text
    np.testing.assert_allclose(got, reference_last(model, items), atol=1e-5, rtol=1e-5)


def test_a_wrong_shared_result_is_caught_by_the_first_use_check(model, monkeypatch):
    real = PRMScorer._run_packed

    def off_by_one(self, *a, **k):
        return [x + 1.0 for x in real(self, *a, **k)]

    monkeypatch.setattr(PRMScorer, "_run_packed", off_by_one)
    monkeypatch.setattr(scoring, "MIN_SAVED_TOKENS", 1)
    items = siblings(3)
    s = PRMScorer(model)
    np.testing.assert_allclose(s.score_last(items), reference_last(model, items), atol=1e-5, rtol=1e-5)
    assert not s.share_prefix


# ---------------------------------------------------------------------- onnxruntime backend
def test_onnx_backend_matches_torch_and_is_cached_by_model_content(model, monkeypatch):
    pytest.importorskip("onnxruntime")
    import prm.onnx_scoring as ox

    items = beam_items()
    many = siblings(4) + [(INSTR, OBS, ACTS)]
    torch_s = PRMScorer(model, batch_size=4)
    onnx_s = PRMScorer(model, batch_size=4, backend="onnx", threads=1)
    assert onnx_s.share_prefix is False
    np.testing.assert_allclose(onnx_s.score_last(items), torch_s.score_last(items), atol=1e-4)
    for a, b in zip(onnx_s.score_many(many), torch_s.score_many(many)):
        np.testing.assert_allclose(a, b, atol=1e-4)
    path = ox.onnx_path(ox.model_digest(model))
    assert path.is_file()

    def no_export(*a, **k):
        raise AssertionError("exported again")

    monkeypatch.setattr(ox, "export", no_export)
    PRMScorer(model, backend="onnx", threads=1)  # same content: the cached file
    monkeypatch.setattr(ox, "model_digest", no_export)
    onnx_s.clear()  # unchanged weights: not even rehashed


def test_onnx_backend_follows_weight_changes_on_clear(tiny_backbone):
    pytest.importorskip("onnxruntime")
    m = make_model(tiny_backbone, max_length=256)
    items = siblings(3)
    onnx_s = PRMScorer(m, backend="onnx", threads=1)
    before = onnx_s.score_last(items)
    with torch.no_grad():
        m.head.bias.add_(0.5)
    onnx_s.clear()
    after = onnx_s.score_last(items)
    np.testing.assert_allclose(after, before + 0.5, atol=1e-4)
    np.testing.assert_allclose(after, reference_last(m, items), atol=1e-4)


def test_unknown_backend_is_refused(model):
    with pytest.raises(ValueError, match="backend"):
        PRMScorer(model, backend="tpu")  # type: ignore[arg-type]
