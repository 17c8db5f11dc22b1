"""`brain.adapter=<name>`: adapters shipped with the package resolve, load, and stay out of other base models."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from agents.brains.base import BrainError
from agents.brains.model_files import ADAPTER_DIR, KNOWN_ADAPTERS, adapter_path


def test_names_paths_and_none():
    assert adapter_path(None, "gemma3-270m") is None and adapter_path("none", "gemma3-270m") is None
    assert adapter_path("/x/y.gguf", "gemma3-270m") == "/x/y.gguf"  # a path is used as given (checked on load)
    for name, (base, _) in KNOWN_ADAPTERS.items():
        assert adapter_path(name, base) == str(ADAPTER_DIR / f"{name}.gguf")


def test_a_shipped_adapter_is_left_out_for_another_base(caplog):
    name, (base, _) = next(iter(KNOWN_ADAPTERS.items()))
    with caplog.at_level(logging.WARNING):
        assert adapter_path(name, "smollm2-135m") is None
    assert f"trained for {base}" in caplog.text


@pytest.mark.parametrize("name", sorted(KNOWN_ADAPTERS))
def test_every_shipped_adapter_is_in_the_package_and_loads(name):
    from agents.brains.local import LocalBrain

    assert Path(ADAPTER_DIR / f"{name}.gguf").is_file(), f"{name}.gguf is not in {ADAPTER_DIR}"
    brain = LocalBrain(adapter=name, n_ctx=512, n_seq=2)
    assert brain.adapter == str(ADAPTER_DIR / f"{name}.gguf")
    out = brain.choose([{"role": "user", "content": "Observation: an item page"}], ["click[buy now]", "click[< prev]"])
    assert out.text in ("click[buy now]", "click[< prev]")


def test_auto_picks_the_adapter_measured_best_on_the_env():
    from agents.brains.model_files import AUTO
    from agents.catalog import DEFAULT_ADAPTER, ENV_ADAPTERS, adapter_for_env

    assert adapter_for_env(AUTO, "webshop") == "agentsim-evol1"  # full turns: +6.7 +- 4.2 score over agentsim-sft
    # turns left at auto: the env's default compact policy, cloned further on in-candidate expert episodes
    # (+8.9 +- 4.0 score over agentsim-compact, 200 paired goals); other envs' compact turns keep agentsim-compact
    assert adapter_for_env(AUTO, "webshop", AUTO) == "agentsim-choice"
    assert adapter_for_env(AUTO, "faulttree", "compact") == "agentsim-compact"
    assert adapter_for_env(AUTO, "faulttree") == DEFAULT_ADAPTER == "agentsim-sft"  # evol1 lost 5 points there
    assert adapter_for_env(AUTO, None) == DEFAULT_ADAPTER  # no env known (a society's shared brains)
    assert adapter_for_env("agentsim-sft", "webshop") == "agentsim-sft"  # an explicit choice is kept
    assert adapter_for_env(None, "webshop") is None
    assert set(ENV_ADAPTERS.values()) <= set(KNOWN_ADAPTERS)
    # `auto` is resolved once, before a brain is built (agents.resolve): a brain handed it unresolved says so
    with pytest.raises(BrainError, match="adapter=auto is resolved"):
        adapter_path(AUTO, "gemma3-270m")


def test_the_run_worker_serves_the_envs_adapter_and_records_it():
    """The main job's path: `adapter: auto` and the perception keys left at auto reach the brain and the agent
    resolved for the env it runs: the policy measured best there and the prompt it was measured with."""
    from agents.collect.worker import EpisodeWorker
    from agents.config import RunConfig, validate_config
    from agents.core.factory import build_agent
    from agents.resolve import resolve

    brain = {"name": "local", "adapter": "auto", "n_ctx": 512, "n_seq": 2}
    cases = (
        # docs/policy.md: DAgger, a tie at 2.3x the speed; fields on lines, a tie at 17% fewer tokens a step
        ("webshop", {}, "agentsim-choice", ("compact", 2048, " [SEP] ")),
        ("webshop", {"turn_style": "full"}, "agentsim-evol1", ("full", 2048, "")),
        ("faulttree", {}, "agentsim-sft", ("full", 2048, "")),
        ("webshop", {"turn_style": "compact"}, "agentsim-choice", ("compact", 2048, " [SEP] ")),
        ("faulttree", {"turn_style": "compact", "budget_tokens": 3072}, "agentsim-compact", ("compact", 3072, "")),
    )
    for env, perception, expected, (style, budget, separator) in cases:
        raw = {"env": {"name": env, "id": env}, "brain": brain, "agent": {"perception": perception}, "out": "x"}
        run = resolve(validate_config(RunConfig, raw))
        cfg = run.config
        p = cfg.agent.perception
        assert (p.turn_style, p.budget_tokens, p.field_separator) == (style, budget, separator), env
        assert run.brain.adapter == expected and cfg.brain.options["adapter"] == "auto"  # the config as asked
        worker = EpisodeWorker(run)
        assert worker.brain.adapter == str(ADAPTER_DIR / f"{expected}.gguf") and worker.adapter == expected
        agent = build_agent(worker.brain, cfg.agent, None)  # what the worker builds for each episode
        assert agent.perception.config.field_separator == separator


def test_auto_perception_follows_the_brain_and_an_explicit_value_wins(monkeypatch):
    """A shipped adapter reads the turns it was trained on; an env's measured preference (ENV_PERCEPTION) applies
    to the embedded brain's `adapter=auto` only; other brains, a base model or a LoRA path read full turns in
    2,048 tokens; an explicit key always wins, key by key."""
    from agents import catalog
    from agents.config import AgentConfig, BrainConfig, RunConfig, validate_config
    from agents.resolve import resolve, resolve_agent, resolve_perception

    def resolved(env: str, brain: dict, perception: dict | None = None) -> tuple[str, int | None]:
        raw = {"env": {"name": env, "id": env}, "brain": brain, "agent": {"perception": perception or {}}, "out": "x"}
        p = resolve(validate_config(RunConfig, raw)).agent.perception
        return p.turn_style, p.budget_tokens

    assert resolved("webshop", {"name": "local", "adapter": "agentsim-compact"}) == ("compact", 2048)
    assert resolved("webshop", {"name": "local", "adapter": "agentsim-evol1"}) == ("full", 2048)
    assert resolved("webshop", {"name": "local", "adapter": "agentsim-compact"}, {"turn_style": "full"}) == (
        "full",
        2048,
    )
    monkeypatch.setitem(catalog.ENV_PERCEPTION, "faulttree", {"turn_style": "compact", "budget_tokens": 3072})
    auto = {"name": "local", "adapter": "auto"}
    assert resolved("faulttree", auto) == ("compact", 3072)
    assert catalog.adapter_for_env("auto", "faulttree", "auto") == "agentsim-compact"
    assert resolved("faulttree", auto, {"budget_tokens": 1024}) == ("compact", 1024)
    assert resolved("faulttree", auto, {"turn_style": "full"}) == ("full", 2048)  # the budget was measured compact
    assert resolved("faulttree", {"name": "scripted"}) == ("full", 2048)  # expert data keeps full turns
    assert resolved("faulttree", {"name": "openai"}) == ("full", 2048)
    assert resolved("faulttree", {"name": "local", "adapter": None}) == ("full", 2048)  # the base model
    assert resolved("faulttree", {"name": "local"}) == ("compact", 3072)  # brain=local's defaults: adapter=auto
    assert resolved("faulttree", {"name": "local", "adapter": "/my/lora.gguf"}) == ("full", 2048)
    assert resolved("webshop", auto) == ("compact", 2048)  # the env's listed preference

    def separator(brain: dict, perception: dict | None = None) -> str | None:
        raw = {"env": {"name": "webshop", "id": "webshop"}, "brain": brain, "agent": {"perception": perception or {}}}
        return resolve(validate_config(RunConfig, {**raw, "out": "x"})).agent.perception.field_separator

    # WebShop's fields go on lines with the turns the default was measured on, not with others; explicit wins
    assert separator(auto) == " [SEP] " and separator(auto, {"turn_style": "compact"}) == " [SEP] "
    assert separator(auto, {"turn_style": "full"}) == "" and separator({"name": "scripted"}) == ""
    assert separator({"name": "local", "adapter": "agentsim-compact"}) == ""  # a named adapter: its turns only
    assert (
        separator(auto, {"field_separator": ""}) == ""
        and separator({"name": "openai"}, {"field_separator": "|"}) == "|"
    )
    monkeypatch.delitem(catalog.ENV_PERCEPTION, "webshop")
    assert resolved("webshop", auto) == ("full", 2048)  # no preference listed for the env
    # outside RunConfig (no brain or env known) auto is full turns in 2,048 tokens
    plain = resolve_agent().perception
    assert (plain.turn_style, plain.budget_tokens) == ("full", 2048)
    local = resolve_agent(AgentConfig(), BrainConfig.model_validate(auto), "faulttree").perception
    assert local == resolve_perception(AgentConfig(), BrainConfig.model_validate(auto), "faulttree").perception
    assert (local.turn_style, local.budget_tokens) == ("compact", 3072)


def test_auto_follows_the_turn_style_and_a_mismatch_is_warned(caplog):
    """Adapters learn the prompt turns they were trained on; compact turns get the adapter trained on them."""
    from agents.brains.model_files import ADAPTER_TURN_STYLES, AUTO
    from agents.catalog import COMPACT_ADAPTER, adapter_for_env, warn_turn_style_mismatch

    assert ADAPTER_TURN_STYLES[COMPACT_ADAPTER] == "compact" and COMPACT_ADAPTER in KNOWN_ADAPTERS
    for env in ("faulttree", None):
        assert adapter_for_env(AUTO, env, "compact") == COMPACT_ADAPTER
    assert adapter_for_env(AUTO, "webshop", "compact") == "agentsim-choice"  # trained on WebShop's compact turns
    assert ADAPTER_TURN_STYLES["agentsim-oracle"] == ADAPTER_TURN_STYLES["agentsim-choice"] == "compact"
    assert adapter_for_env("agentsim-sft", "webshop", "compact") == "agentsim-sft"  # an explicit choice is kept
    with caplog.at_level(logging.WARNING):
        assert not warn_turn_style_mismatch("agentsim-sft", "full") and not caplog.text
        assert not warn_turn_style_mismatch("/my/adapter.gguf", "compact")  # unknown training: no claim
        assert warn_turn_style_mismatch("agentsim-sft", "compact")
    assert "trained on full turns but the agent reads compact turns" in caplog.text


def test_the_run_worker_serves_the_compact_adapter_for_compact_turns():
    from agents.collect.worker import EpisodeWorker
    from agents.config import RunConfig, validate_config
    from agents.resolve import resolve

    raw = {
        "env": {"name": "webshop", "id": "webshop"},
        "brain": {"name": "local", "adapter": "auto", "n_ctx": 512, "n_seq": 2},
        "agent": {"perception": {"turn_style": "compact"}},
        "out": "unused",
    }
    worker = EpisodeWorker(resolve(validate_config(RunConfig, raw)))
    assert worker.adapter == "agentsim-choice"
