"""The TRL environment adapter (`agents.policy.trl_env`) over real envs, and a GRPO smoke run on CPU.

The unit tests drive the adapter's tools the way TRL does (keyword arguments from a parsed tool
call) and compare every answer with the same seed and actions played on a plain `gymnasium.make`
env. The smoke run trains a tiny random Llama with TRL's `GRPOTrainer` for two steps on the
corridor env: its output head is set to a fixed distribution over tool calls (markers and each call body one token
of a small byte-level BPE), so the untrained model does call tools; the test then checks that
every rollout reset its env, that tools were called and stepped the env, and that the rewards TRL
logged are the adapter's `get_reward()`.
"""

from __future__ import annotations

import inspect
import json
import os
import pickle
import re
import tempfile
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

os.environ.setdefault("AGENTSIM_CACHE", tempfile.mkdtemp(prefix="agentsim-trl-tests-"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from agents.policy.trl_env import (  # noqa: E402
    GAME_OVER,
    VERB,
    EnvFactory,
    StepContext,
    TRLEnv,
    environment_factory,
    seed_dataset,
)
from tests.toy_env import ENV_ID as CORRIDOR  # noqa: E402

SHOP = {"num_products": 2_000}


def call(env: TRLEnv, action: str) -> str:
    """Call the verb tool that maps to `action` (`verb[argument]`), as TRL would from a parsed tool call."""
    m = VERB.match(action)
    assert m is not None, action
    return getattr(env, m.group(1))(argument=m.group(2))


def expert(env: TRLEnv) -> str:
    return env.env.unwrapped.expert_action()  # type: ignore[attr-defined]


def trl_tools(cls: type) -> list[str]:
    """What TRL exposes as tools: the class's public functions other than reset / get_reward."""
    names = [n for n, _ in inspect.getmembers(cls, predicate=inspect.isfunction) if not n.startswith("_")]
    return sorted(n for n in names if n not in ("reset", "get_reward"))


def step_hook_penny(ctx: StepContext) -> float:
    """A picklable per-step reward: 0.01 for every action that reached the env."""
    return 0.01


@pytest.fixture(scope="module")
def corridor() -> EnvFactory:
    return environment_factory(CORRIDOR)


# --- tools -----------------------------------------------------------------------------------------


def test_verb_tools_are_the_envs_verbs_and_trl_sees_exactly_them(corridor):
    from transformers.utils import get_json_schema

    assert set(corridor.tool_names) == {"say", "move", "take", "open"}  # `open[door]` only shows at the end
    cls = corridor.env_class
    assert cls is corridor.env_class and cls.__name__ == "CorridorTools"
    assert trl_tools(cls) == sorted(corridor.tool_names)
    move = get_json_schema(cls.move)["function"]
    assert move["parameters"]["required"] == ["argument"]
    assert "move[right]" in move["description"]  # examples read by the probe

    tree = environment_factory("faulttree")
    assert tree.tool_names == ["check", "ask", "diagnose"]
    shop = environment_factory("webshop", env_kwargs=SHOP)
    assert set(shop.tool_names) == {"search", "click"}


def test_an_env_with_its_own_tool_schemas_gets_those_tools():
    from transformers.utils import get_json_schema

    coding = environment_factory("coding", env_kwargs={"task": "example-kv-delete"})  # no env is made here
    assert coding.tool_names == ["bash", "view", "create", "str_replace", "submit"]
    cls = coding.env_class
    assert trl_tools(cls) == sorted(coding.tool_names)
    view = get_json_schema(cls.view)["function"]["parameters"]
    assert view["required"] == ["path"] and view["properties"]["start"]["type"] == "integer"
    assert get_json_schema(cls.submit)["function"]["parameters"]["properties"] == {}


def coding_unavailable() -> str | None:
    from envs.coding.sandbox import unavailable_reason

    return unavailable_reason("bwrap")


@pytest.mark.skipif(coding_unavailable() is not None, reason=f"bwrap backend unavailable: {coding_unavailable()}")
def test_the_coding_env_through_its_own_tools():
    env = environment_factory("coding", env_kwargs={"task": "example-kv-delete"})()
    assert "Act by calling the tools" in env.reset(seed=0)
    refused = env.view(path="/etc/passwd")  # type: ignore[attr-defined]
    assert refused.startswith("Invalid action") and "outside /workspace" in refused
    shown = env.view(path="server.py", start=1, end=2)  # type: ignore[attr-defined]
    assert shown.startswith("/workspace/server.py") and "     2\t" in shown and "     3\t" not in shown
    assert env.bash(command="ls").startswith("server.py")  # type: ignore[attr-defined]
    text = env.submit()  # type: ignore[attr-defined]  # the task is not done: the hidden tests fail
    assert "Hidden tests: 1/4 passed" in text and "(The episode is over: the episode ended" in text
    assert env.done and env.get_reward() == 0.0 and env.bash(command="ls") == GAME_OVER  # type: ignore[attr-defined]
    assert [s.action[:16] for s in env.steps] == ['{"tool": "view",'] * 2 + ['{"tool": "bash",', '{"tool": "submit']


def test_generic_act_tool_and_given_verbs():
    f = environment_factory(CORRIDOR, verbs=["move"], generic_tool=True)
    assert f.tool_names == ["move", "act"]
    env = f()
    env.reset(seed=0)
    direct = gym.make(CORRIDOR)
    direct.reset(seed=0)
    assert env.act(action="say[hi]").startswith(direct.step("say[hi]")[0])  # type: ignore[attr-defined]
    assert env.act(action="nonsense").startswith("Invalid action")  # type: ignore[attr-defined]


# --- reset, steps, errors, reward, step limit ----------------------------------------------------


def test_reset_returns_the_task_and_first_observation(corridor):
    env = corridor()
    text = env.reset(seed=3, prompt=[{"role": "user", "content": ""}])  # TRL passes the whole dataset row
    obs, info = gym.make(CORRIDOR).reset(seed=3)
    assert text.startswith(info["instruction"] + "\n\n" + obs)
    assert "Available actions: " + ", ".join(info["available_actions"]) in text
    assert env.reset(seed=3) == text and env.resets == 2
    assert env.instruction == info["instruction"] and env.steps == [] and not env.done


def test_a_valid_tool_call_steps_the_env(corridor):
    env = corridor()
    env.reset(seed=1)
    direct = gym.make(CORRIDOR)
    direct.reset(seed=1)
    action = expert(env)
    obs, reward, _, _, info = direct.step(action)
    assert call(env, action) == obs + "\nAvailable actions: " + ", ".join(info["available_actions"])
    assert [s.action for s in env.steps] == [action] and env.steps[0].reward == reward
    assert env.steps[0].error is None


def test_an_invalid_tool_call_returns_the_envs_error_and_changes_nothing(corridor):
    env = corridor()
    env.reset(seed=1)
    direct = gym.make(CORRIDOR)
    direct.reset(seed=1)
    _, reward, _, _, info = direct.step("open[window]")
    answer = env.open(argument="window")  # type: ignore[attr-defined]
    assert answer == info["error"] and answer.startswith("Invalid action")
    assert env.steps[-1].error == info["error"] and reward == 0.0 and not env.done
    action = expert(env)
    assert call(env, action).startswith(direct.step(action)[0])  # the state was unchanged

    strict = environment_factory(CORRIDOR, verbs=["open"], errors_raise=True)()
    strict.reset(seed=1)
    with pytest.raises(ValueError, match="Invalid action"):
        strict.open(argument="window")  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        strict.open(wrong="window")  # type: ignore[attr-defined]  # TRL reports a bad call as a tool failure


@pytest.mark.parametrize(
    ("name", "kwargs", "seed"),
    [(CORRIDOR, {}, 4), ("faulttree", {}, 0), ("webshop", SHOP, 2)],
)
def test_the_reward_is_the_episodes_return(name, kwargs, seed):
    env = environment_factory(name, env_kwargs=kwargs)()
    env.reset(seed=seed)
    direct = gym.make(env.env.spec.id, **kwargs)  # type: ignore[union-attr]
    direct.reset(seed=seed)
    total, text = 0.0, ""
    while not env.done:
        action = expert(env)
        obs, reward, terminated, truncated, _ = direct.step(action)
        text = call(env, action)
        assert text.startswith(obs)
        total += float(reward)
    assert terminated and not truncated
    assert env.get_reward() == pytest.approx(total) and total > 0
    assert "(The episode is over: the episode ended" in text
    n = len(env.steps)
    assert call(env, env.steps[-1].action) == GAME_OVER and len(env.steps) == n  # no step after the end


def test_the_step_limit_is_the_envs_time_limit(corridor):
    assert corridor().max_episode_steps == 30  # the registration's
    env = environment_factory(CORRIDOR, max_episode_steps=3)()
    assert env.max_episode_steps == 3
    env.reset(seed=0)
    answers = [env.say(argument=str(i)) for i in range(3)]  # type: ignore[attr-defined]
    assert "episode is over" not in answers[1]
    assert "(The episode is over: the step limit is reached" in answers[2]
    assert env.done and env.steps[-1].truncated and not env.steps[-1].terminated
    assert env.say(argument="more") == GAME_OVER and len(env.steps) == 3  # type: ignore[attr-defined]
    assert env.get_reward() == 0.0
    env.reset(seed=0)
    assert not env.done and env.steps == []


# --- per-step rewards -------------------------------------------------------------------------------


def test_step_reward_hooks_see_each_step_and_add_to_the_reward():
    seen: list[StepContext] = []

    def hook(ctx: StepContext) -> float:
        seen.append(ctx)
        return 1.0 if ctx.error is None else -1.0

    env = environment_factory(CORRIDOR, step_reward=hook, step_reward_weight=0.5)()
    first = env.reset(seed=4)
    env.open(argument="window")  # type: ignore[attr-defined]
    while not env.done:
        call(env, expert(env))
    assert [c.actions for c in seen] == [[s.action for s in env.steps[: i + 1]] for i in range(len(env.steps))]
    assert all(len(c.observations) == len(c.actions) for c in seen)
    assert first.startswith(seen[0].instruction) and seen[0].observations[0] in first
    assert seen[0].error is not None and seen[1].error is None
    assert [s.step_reward for s in env.steps] == [-1.0] + [1.0] * (len(env.steps) - 1)
    assert env.get_reward() == pytest.approx(1.0 + 0.5 * (len(env.steps) - 2))


@pytest.fixture(scope="module")
def tiny_prm(tmp_path_factory, tiny_backbone) -> Path:
    """A saved PRM on the tiny random BERT backbone (tests/conftest.py): the real PRM code path."""
    import torch

    from prm.model import PRMConfig, PRMModel

    torch.manual_seed(0)
    model = PRMModel.from_backbone(PRMConfig(base_backbone=tiny_backbone))
    torch.nn.init.normal_(model.head.weight, std=1.0)  # scores that differ visibly between steps
    out = tmp_path_factory.mktemp("prm") / "best"
    model.save_pretrained(out)
    return out


def test_prm_progress_is_the_saved_prms_q_difference(tiny_prm):
    from prm.model import PRMModel
    from prm.progress import PRMProgress
    from prm.scoring import PRMScorer
    from prm.targets.td import step_progress

    env = environment_factory(CORRIDOR, step_reward=PRMProgress(tiny_prm), step_reward_weight=2.0)()
    env.reset(seed=4)
    env.open(argument="window")  # type: ignore[attr-defined]  # refused steps are scored too
    while not env.done:
        call(env, expert(env))
    # the same trajectory scored in one pass (one window: it is short) by a separately loaded scorer, as prm.dense does
    assert len(env.steps) >= 4
    q = PRMScorer(PRMModel.from_pretrained(tiny_prm)).score_many(
        [(env.instruction, env._observations[: len(env.steps)], [s.action for s in env.steps])]
    )[0]
    import numpy as np

    progress = step_progress(q, np.array([len(q)]))
    got = np.array([s.step_reward for s in env.steps])
    assert got[0] == 0.0 and np.abs(got).max() > 1e-4
    np.testing.assert_allclose(got, progress, atol=1e-4)
    assert env.get_reward() == pytest.approx(env.env_return + 2.0 * float(progress.sum()), abs=1e-4)


# --- factory plumbing -------------------------------------------------------------------------------


def test_the_factory_pickles_for_trls_async_worker():
    f = environment_factory(CORRIDOR, step_reward=step_hook_penny, max_episode_steps=5)
    f.env_class  # noqa: B018  (built, then left out of the pickle)
    g = pickle.loads(pickle.dumps(f))
    assert g.tools == f.tools and g.max_episode_steps == 5
    env = g()
    assert isinstance(env, TRLEnv) and env.max_episode_steps == 5
    env.reset(seed=0)
    call(env, expert(env))
    assert env.get_reward() == pytest.approx(0.01)


def test_seed_dataset_rows_reset_the_same_episode(corridor):
    ds = seed_dataset(3, start=10, prompt="Play well.")
    assert ds["seed"] == [10, 11, 12] and ds[0]["prompt"] == [{"role": "user", "content": "Play well.\n\n"}]
    a, b = corridor(), corridor()
    assert a.reset(**ds[1]) == b.reset(**ds[1]) == b.reset(seed=11)


# --- GRPO smoke run -------------------------------------------------------------------------------


def tool_call_tokenizer(calls: list[str], corpus: list[str]) -> Any:
    """A byte-level BPE (trained on `corpus`) with Qwen2.5's tool-calling chat template; each call body is one token."""
    import trl
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    template = (Path(trl.__file__).parent / "chat_templates" / "qwen2_5.jinja").read_text()
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=800,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator([template, *corpus] * 4, trainer)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>", chat_template=template
    )
    tok.add_tokens(["<tool_call>", "</tool_call>", *calls])
    return tok


def tool_calling_lm(tok: Any, probs: dict[int, float], open_id: int, close_id: int) -> Any:
    """A random 2-layer Llama (hidden 64) that writes `<tool_call>`, one call body drawn from `probs`, `</tool_call>`,
    or ends (EOS, at its share of `probs`), whatever else the context holds.

    The last MLP's bias puts one large direction u into every final hidden state; the output head
    maps u to log `probs` (+20) and everything else to about 0. A fixed bias on the logits, chosen by the
    token at each position, keeps the call's grammar: after `<tool_call>` a body, after a body
    `</tool_call>`, otherwise `<tool_call>` (with the bodies' total mass) or EOS. transformers >= 5.13 parses
    tool calls at token boundaries, so the markers must be tokens of their own."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    eos = tok.eos_token_id
    bodies = [t for t in probs if t != eos]

    class GrammarLlama(LlamaForCausalLM):
        def forward(self, input_ids=None, **kwargs):  # type: ignore[no-untyped-def]
            out = super().forward(input_ids=input_ids, **kwargs)
            if input_ids is not None:
                ids = input_ids[:, -out.logits.shape[1] :]  # logits_to_keep may keep only the last positions
                allowed = self.allowed.to(out.logits.device)
                state = torch.where(ids == open_id, 1, torch.where(torch.isin(ids, self.body_ids), 2, 0))
                out.logits = out.logits + allowed[state]
            return out

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        mlp_bias=True,
        tie_word_embeddings=False,
        pad_token_id=tok.pad_token_id,
        eos_token_id=eos,
        bos_token_id=None,
    )
    model = GrammarLlama(cfg)
    allowed = torch.full((3, cfg.vocab_size), -1e4)
    allowed[0, [open_id, eos]] = 0  # free text: open a call or end
    allowed[1, bodies] = 0  # after <tool_call>: a call body
    allowed[2, close_id] = 0  # after a body: </tool_call>
    model.allowed, model.body_ids = allowed, torch.tensor(bodies)
    with torch.no_grad():
        u = torch.randn(cfg.hidden_size)
        u /= u.norm()
        model.model.layers[-1].mlp.down_proj.bias.copy_(50 * u)
        head = torch.zeros_like(model.lm_head.weight)
        scale = cfg.hidden_size**0.5  # RMSNorm turns 50u into sqrt(hidden) * u
        for tid, p in {**probs, open_id: sum(probs[b] for b in bodies), close_id: 1.0}.items():
            head[tid] = (20 + torch.log(torch.tensor(p))) * u / scale
        model.lm_head.weight.copy_(head)
    return model


def train_tiny_grpo(factory: Any, moves: list[tuple[str, str, float]], out: Path) -> tuple[Any, list[dict[str, float]]]:
    """Two GRPO steps on CPU (2 rollouts a step) of the tiny tool-calling Llama that calls `moves` (verb, argument,
    probability) through `factory`'s envs; the trainer and its loss logs. Shared by every trainer-adapter smoke run."""
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    calls = ["\n" + json.dumps({"name": v, "arguments": {"argument": a}}) + "\n" for v, a, _ in moves]  # call bodies
    probe = factory()
    corpus = [probe.reset(seed=0), *(call(probe, f"{v}[{a}]") for v, a, _ in moves)]
    probe.env.close()
    tok = tool_call_tokenizer(calls, corpus)
    probs = {tok.eos_token_id: 0.3} | {tok.convert_tokens_to_ids(c): p for c, (_, _, p) in zip(calls, moves)}
    model = tool_calling_lm(
        tok, probs, tok.convert_tokens_to_ids("<tool_call>"), tok.convert_tokens_to_ids("</tool_call>")
    )
    logged: list[dict[str, float]] = []

    class KeepLogs(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                logged.append(dict(logs))

    args = GRPOConfig(
        output_dir=str(out),
        max_steps=2,
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=512,
        max_tool_calling_iterations=4,
        learning_rate=1e-4,
        logging_steps=1,
        report_to="none",
        use_cpu=True,
        bf16=False,
        save_strategy="no",
        seed=0,
        disable_tqdm=True,
    )
    trainer = GRPOTrainer(
        model=model,
        args=args,
        processing_class=tok,
        train_dataset=seed_dataset(4),
        environment_factory=factory,
        callbacks=[KeepLogs()],
    )
    trainer.train()
    return trainer, logged


def test_grpo_smoke_run_on_cpu(tmp_path):
    pytest.importorskip("trl", reason="trl is not installed (pip install -e .[train])")
    started = time.perf_counter()
    factory = environment_factory(CORRIDOR, env_kwargs={"length": 3}, max_episode_steps=10, step_reward=step_hook_penny)
    moves = [("move", "right", 0.25), ("move", "left", 0.05), ("take", "key", 0.2), ("open", "door", 0.15)]
    moves.append(("open", "window", 0.05))  # refused by the env
    trainer, logged = train_tiny_grpo(factory, moves, tmp_path / "grpo")
    elapsed = time.perf_counter() - started

    pool: list[TRLEnv] = trainer._environment_pool[None]
    assert len(pool) == 2 and all(type(e) is factory.env_class for e in pool)
    assert sum(e.resets for e in pool) == 4  # 2 steps x 2 rollouts, each one reset
    assert len(logged) == 2
    assert sum(log["tools/call_frequency"] for log in logged) > 0
    assert any(e.steps for e in pool)
    for e in pool:  # every tool call stepped the env, on the env's own terms
        assert all(re.fullmatch(r"(move|take|open)\[\w+\]", s.action) for s in e.steps)
        assert len(e.steps) <= 10
    # what the model read: reset's text in the prompt, and each env answer as the tool's result, in order
    answers = 0
    for env, prompt, completion in zip(pool, trainer._logs["prompt"], trainer._logs["completion"]):
        assert env.instruction in prompt[-1]["content"]
        asked = [c["function"] for m in completion if m["role"] == "assistant" for c in m.get("tool_calls") or []]
        told = [m["content"] for m in completion if m["role"] == "tool"]
        assert [f"{c['name']}[{c['arguments']['argument']}]" for c in asked[: len(env.steps)]] == [
            s.action for s in env.steps
        ]
        assert all(text.startswith(s.error or s.observation) for s, text in zip(env.steps, told))
        assert len(told) <= len(asked)  # TRL drops the results of a turn that would overflow max_completion_length
        answers += len(told)
    assert answers > 0
    # the last step's logged rewards are the pool's get_reward() (it holds the last batch's rollouts)
    rewards = [e.get_reward() for e in pool]
    assert logged[-1]["rewards/CorridorTools/mean"] == pytest.approx(sum(rewards) / 2, abs=1e-5)
    assert logged[-1]["reward"] == pytest.approx(sum(rewards) / 2, abs=1e-5)
    print(f"GRPO smoke run: {elapsed:.1f} s; logs {logged}")
