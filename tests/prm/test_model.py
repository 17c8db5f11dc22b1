"""One forward pass scores every step exactly as scoring each prefix would; windows; save/load."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from prm.data import TextConfig, block_causal_mask, collate
from prm.model import PRMConfig, PRMModel
from prm.scoring import PRMScorer

INSTR = "i want a red cotton dress, size large, under 40 dollars"
OBS = [
    f"WebShop [SEP] Instruction: [SEP] {INSTR} [SEP] Search",
    "Back to Search [SEP] Page 1 [SEP] B01 [SEP] Red Cotton Dress [SEP] $30.00 [SEP] B02 [SEP] Blue Jeans [SEP] $20.00",
    "Back to Search [SEP] < Prev [SEP] size [SEP] small [SEP] large [SEP] Red Cotton Dress [SEP] Buy Now",
    "Back to Search [SEP] < Prev [SEP] size [SEP] small [SEP] large [SEP] Red Cotton Dress [SEP] Buy Now",
]
ACTS = ["search[red cotton dress]", "click[b01]", "click[large]", "click[buy now]"]


@pytest.fixture(scope="module")
def model(tiny_backbone):
    torch.manual_seed(0)
    m = PRMModel.from_backbone(PRMConfig(base_backbone=tiny_backbone, text=TextConfig(max_length=256))).eval()
    torch.nn.init.normal_(m.head.weight, std=1.0)  # make scores spread out so equality is a real check
    return m


def test_block_causal_mask():
    m = block_causal_mask(torch.tensor([[0, 0, 1, 1, 2, -1]]))[0, 0]
    assert m[0].tolist() == [True, True, False, False, False, False]  # instruction sees only itself
    assert m[3].tolist() == [True, True, True, True, False, False]  # step 1 sees instruction + itself
    assert m[4].tolist() == [True, True, True, True, True, False]
    assert m[5].tolist() == [True, True, False, False, False, False]  # padding row is not empty


def test_one_pass_scores_equal_per_step_scores(model):
    steps = model.steps
    [w] = steps.windows(INSTR, OBS, ACTS)
    assert len(w.markers) == 4 and all(w.ids[p] == model.marker_id for p in w.markers)
    with torch.no_grad():
        one_pass = model(collate([w], steps.pad_id)).numpy()
        per_step = [
            model(collate(steps.windows(INSTR, OBS[: k + 1], ACTS[: k + 1], last_only=True), steps.pad_id))[-1].item()
            for k in range(len(ACTS))
        ]
    assert np.unique(np.round(one_pass, 4)).size == 4
    np.testing.assert_allclose(one_pass, per_step, atol=1e-5)


def test_later_steps_do_not_change_earlier_scores_and_padding_is_neutral(model):
    s = PRMScorer(model)
    a, b = s.score_many([(INSTR, OBS, ACTS), (INSTR, OBS[:3] + ["something else"], ACTS[:3] + ["click[< prev]"])])
    np.testing.assert_allclose(a[:3], b[:3], atol=1e-5)
    assert abs(a[3] - b[3]) > 1e-4
    short = s.score_many([(INSTR, OBS[:2], ACTS[:2])])[0]  # batched alone vs next to longer rows (padding)
    s.clear()
    mixed = s.score_many([(INSTR, OBS[:2], ACTS[:2]), (INSTR, OBS, ACTS)])[0]
    np.testing.assert_allclose(short, mixed, atol=1e-5)


def test_long_trajectories_are_windowed_keeping_instruction_and_latest_steps(tiny_backbone):
    m = PRMModel.from_backbone(
        PRMConfig(
            base_backbone=tiny_backbone,
            text=TextConfig(max_length=64, obs_tokens=8, action_tokens=8, instruction_tokens=12),
        )
    )
    obs, acts = OBS * 3, ACTS * 3
    ws = m.steps.windows(INSTR, obs, acts)
    assert len(ws) > 1 and all(len(w.ids) <= 64 for w in ws)
    assert sorted(s for w in ws for s in w.steps) == list(range(12))  # every step scored exactly once
    assert ws[0].steps[-1] == 11  # the first window holds the most recent steps
    prefix = m.steps.prefix(INSTR)
    assert all(w.ids[: len(prefix)] == prefix for w in ws)
    [last] = m.steps.windows(INSTR, obs, acts, last_only=True)
    assert last.steps == ws[0].steps
    assert m.steps.hits > 0  # repeated observations/actions came from the token cache


def test_long_observation_is_cut_around_what_the_action_names(tiny_backbone):
    """The promise of `click[buy now]` / `click[<id>]` must see the product it acts on, not only the page's head."""
    m = PRMModel.from_backbone(PRMConfig(base_backbone=tiny_backbone, text=TextConfig(obs_tokens=24)))
    tok = m.tokenizer
    items = " [SEP] ".join(f"b0item{i:04d} [SEP] product number {i} [SEP] ${i}.00" for i in range(20))
    ids = m.steps.observation(items, "click[b0item0015]")
    assert len(ids) == 24 and "product number 15" in tok.decode(ids)
    page = (
        "color [SEP] "
        + " [SEP] ".join(f"option {i}" for i in range(30))
        + " [SEP] red widget [SEP] Price: $9.00 [SEP] Buy Now"
    )
    text = tok.decode(m.steps.observation(page, "click[buy now]"))
    assert "red widget" in text and "9. 00" in text and text.endswith("buy now")
    assert tok.decode(m.steps.observation(page, "click[option 0]")).startswith("color")  # near the head: the head
    plain = PRMModel.from_backbone(PRMConfig(base_backbone=tiny_backbone, text=TextConfig(obs_tokens=24, focus=False)))
    assert "red widget" not in tok.decode(plain.steps.observation(page, "click[buy now]"))


def test_save_and_load_round_trip(model, tmp_path):
    model.save_pretrained(tmp_path / "prm")
    assert (tmp_path / "prm" / "head.safetensors").is_file()
    assert (tmp_path / "prm" / "backbone" / "model.safetensors").is_file()
    assert (tmp_path / "prm" / "prm_config.json").is_file()
    again = PRMModel.from_pretrained(tmp_path / "prm")
    np.testing.assert_allclose(
        PRMScorer(model).score_many([(INSTR, OBS, ACTS)])[0],
        PRMScorer(again).score_many([(INSTR, OBS, ACTS)])[0],
        atol=1e-6,
    )
    with pytest.raises(FileNotFoundError, match="prm.train"):
        PRMModel.from_pretrained(tmp_path)


def test_minilm_default_backbone_scores_in_one_pass():
    """The real default (packaged MiniLM, no download): one pass == per-step prefixes."""
    m = PRMModel.from_backbone(PRMConfig()).eval()
    assert m.cfg.marker_token == "[unused0]" and m.backbone.config.hidden_size == 384
    s = PRMScorer(m)
    full = s.score_many([(INSTR, OBS, ACTS)])[0]
    per = [s.score_last([(INSTR, OBS[: k + 1], ACTS[: k + 1])])[0] for k in range(len(ACTS))]
    np.testing.assert_allclose(full, per, atol=1e-5)


def test_text_rich_pages_keep_the_clicked_options_compactly():
    """WebShop's text mode hides which options are chosen; text_rich marks them. The PRM keeps that mark
    (`teal (clicked)`) and drops the per-button markup, so an item page fits the same token budget.
    The PRM knows no markup: it finds WebShop's `compact_observation` from the recorded env id."""
    from envs.webshop.env import WebShopEnv
    from prm.data import clean_observation
    from prm.episodes import observation_compactor

    compact = observation_compactor("agentsim/WebShop-v0")

    env = WebShopEnv(num_products=2_000, split="test", observation_mode="text_rich")
    obs, info = env.reset(options={"goal_index": 0})
    while info["page"] != "item":
        obs, _, _, _, info = env.step(env.expert_action())
    option = env.expert_action()
    assert option != "click[buy now]"
    label = option[len("click[") : -1]
    obs, *_ = env.step(option)
    text = clean_observation(compact(obs), info["instruction"])
    assert f"{label} (clicked)" in text.lower()
    assert "button" not in text and "\n" not in text and "Instruction" not in text
    assert compact("a [SEP] b") == "a [SEP] b"  # other observations pass through unchanged
