"""The listwise loss scores candidates as the brain ranks them, on the real model, and training it lifts the label."""

from __future__ import annotations

import gymnasium as gym
import pytest

from agents.brains.scripted import ScriptedBrain
from agents.core import Agent, run_episode
from agents.policy.choices import label_index
from tests.toy_env import ENV_ID

torch = pytest.importorskip("torch")
pytest.importorskip("peft")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Five expert corridor episodes with the candidates of every step recorded (what agents.collect writes)."""
    root = tmp_path_factory.mktemp("store")
    env = gym.make(ENV_ID, length=4)
    with (root / "trajectories.jsonl").open("w") as f:
        for seed in range(5):
            f.write(run_episode(env, Agent(ScriptedBrain()), seed=seed).model_dump_json() + "\n")
    return root


@pytest.fixture(scope="module")
def model():
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
                p.normal_(0, 0.01)
    m.train()
    return m


def test_label_index_matches_text_or_a_filled_template():
    cands = ["click[back]", "search[...]", "click[buy now]"]
    assert label_index(cands, "click[buy now]") == 2
    assert label_index(cands, "search[red shoes]") == 1
    assert label_index(cands, "click[next]") is None


def brain_scores(model, prompt_text, candidates):
    """Each candidate's mean log-prob as LocalBrain.choose computes it, by one plain full forward per candidate."""
    from agents.brains.llama.ranking import scoring_texts
    from agents.brains.llama.slot_table import common_prefix
    from agents.core.agent import CHOOSE_PREFIX
    from agents.policy.frozen_layers import DecoderPass
    from agents.policy.hf_model import tokenize
    from agents.policy.train import output_logits

    head, _ = scoring_texts(prompt_text, CHOOSE_PREFIX, "")
    base = tokenize(head)
    out = []
    for c in candidates:
        full = tokenize(scoring_texts(prompt_text, CHOOSE_PREFIX, c)[1])
        own = common_prefix(base, full)
        with torch.no_grad():  # the plain full forward (transformers' own), the output layer on the scored rows
            hidden = DecoderPass(model, None).hidden(full)
            logits = output_logits(model, hidden[own - 1 : len(full) - 1])
        lp = torch.log_softmax(logits, -1).gather(1, torch.tensor(full[own:])[:, None])
        out.append(float(lp.mean()))
    return torch.tensor(out)


def test_packed_candidates_score_exactly_as_separate_forwards(model, store):
    """The branches packed after the episode give each candidate the mean log-prob a separate forward of its own
    prompt + candidate gives, also past Gemma 3's 512-token sliding window, with and without the frozen cache."""
    from agents.brains.chat_templates import TEMPLATES
    from agents.core.agent import CHOOSE_PREFIX
    from agents.policy.choices import choice_scores, step_choice
    from agents.policy.frozen_layers import DecoderPass, FrozenStore
    from agents.policy.hf_model import tokenize
    from agents.policy.sft_data import Sequence, build_sequences, read_episodes, step_tokens
    from agents.policy.train import output_logits, sequence_hidden

    fmt = TEMPLATES["gemma"][0]
    seqs, stats = build_sequences([store], tokenize, choices=True)
    episodes = list(read_episodes([store]))
    assert stats["choices"] == sum(len(ep.steps) for ep in episodes)  # every expert step is ranked
    k = min(range(len(episodes)), key=lambda i: len(episodes[i].steps))
    ep, seq = episodes[k], seqs[k]
    assert len(seq.choices) == len(ep.steps)
    # a long step: the episode's last prompt behind a 400-token observation, two of its candidates
    step = ep.steps[-1]
    msgs = [dict(m) for m in step.messages]
    msgs[1]["content"] = " ".join(f"room {i} is empty." for i in range(70)) + "\n" + msgs[1]["content"]
    full, own = step_tokens(msgs, step.action, tokenize)
    assert own > 520  # past the window
    texts = [c.text for c in step.candidates if c.text == step.action or not c.text.startswith("say")][:2]
    long_choice = step_choice(fmt(msgs), CHOOSE_PREFIX, full[:own], texts, step.action, tokenize)
    long = Sequence(full, list(range(own, len(full))), "long", [long_choice])
    cases = [
        (seq, [(fmt(st.messages), [c.text for c in st.candidates], st.action) for st in ep.steps[:2]]),
        (long, [(fmt(msgs), texts, step.action)]),
    ]
    wants = [[brain_scores(model, prompt, cands) for prompt, cands, _ in steps] for _, steps in cases]
    cached = DecoderPass(model, FrozenStore(1 << 30))
    for decoder, passes in ((DecoderPass(model, None), 1), (cached, 2)):  # the second pass from the frozen cache
        for (s, steps), want in zip(cases, wants):
            for _ in range(passes):
                hidden, packed = sequence_hidden(decoder, s, True)
                with torch.no_grad():
                    got = choice_scores(hidden, packed, s.choices, lambda h: output_logits(model, h))
                for (_, cands, action), ch, sc, w in zip(steps, s.choices, got, want):
                    assert torch.allclose(sc.detach(), w, atol=2e-4), (sc, w)
                    assert cands[ch.label] == action
        if decoder is not cached:  # the main sequence's rows are untouched by the branches: SFT logits as without
            assert torch.allclose(hidden[: len(long.ids)], decoder.hidden(long.ids), atol=1e-4)
    assert cached.store is not None and cached.store.hits == 2


def test_listwise_updates_lift_the_experts_candidate(model, store):
    """A few updates on the listwise loss alone: the loss falls and the expert's candidate climbs the ranking."""
    from agents.policy.frozen_layers import DecoderPass, FrozenStore
    from agents.policy.hf_model import tokenize
    from agents.policy.sft_data import build_sequences
    from agents.policy.train import evaluate, sequence_loss

    seqs, _ = build_sequences([store], tokenize, choices=True)
    for s in seqs:
        s.targets = []  # listwise only: what moves is the ranking
    decoder = DecoderPass(model, FrozenStore(1 << 30))

    def rank_of_label() -> float:
        from agents.policy.choices import choice_scores
        from agents.policy.train import output_logits, sequence_hidden

        ranks = []
        with torch.no_grad():
            for s in seqs:
                hidden, packed = sequence_hidden(decoder, s, True)
                for sc, ch in zip(
                    choice_scores(hidden, packed, s.choices, lambda h: output_logits(model, h)), s.choices
                ):
                    ranks.append(int((sc > sc[ch.label]).sum()))
        return sum(ranks) / len(ranks)

    before = evaluate(model, seqs, decoder)
    rank_before = rank_of_label()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=2e-3, weight_decay=0.0)
    for _ in range(3):
        for s in seqs:
            loss, parts = sequence_loss(model, s, decoder, listwise_weight=1.0)
            assert set(parts) == {"listwise"}
            loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    after = evaluate(model, seqs, decoder)
    rank_after = rank_of_label()
    assert after["listwise_loss"] < before["listwise_loss"]
    assert rank_after < rank_before
    assert after["choice_acc"] >= before["choice_acc"]


def test_train_with_listwise_weight_reports_both_losses(store, tmp_path):
    from agents.policy.train import train

    history = train(
        {
            "data": [str(store)],
            "out": str(tmp_path / "run"),
            "eval_data": [str(store)],
            "accumulate": 2,
            "max_updates": 1,
            "lora": {"r": 4, "layers": 1},
            "listwise_weight": 0.5,
            "gguf": False,
            "progress": False,
            "threads": 1,
        }
    )
    row = history[-1]
    assert row["train_sft"] > 0 and row["train_listwise"] > 0
    assert 0.0 <= row["heldout_choice_acc"] <= 1.0 and row["heldout_choices"] > 0
