"""`agents.resolve.resolve`: a run's config is resolved once, into frozen models the factories only read."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from agents.brains.registry import brain_spec
from agents.config import NOT_IDENTITY, CollectConfig, ConfigError, RunConfig, identity_fields, validate_config
from agents.core.factory import build_agent, build_brain
from agents.resolve import ResolvedRun, resolve, resolve_agent, run_hash

WEBSHOP = {"name": "webshop", "id": "webshop"}


def run_of(**raw: Any) -> ResolvedRun:
    return resolve(validate_config(RunConfig, {"env": WEBSHOP, "out": "x", **raw}))


def test_resolve_fixes_adapter_perception_step_limit_lanes_and_hash_in_one_pass() -> None:
    run = run_of(brain={"name": "local"})  # adapter left at the options model's default: auto
    assert run.brain.adapter == "agentsim-choice" and run.brain.in_process  # the catalog's WebShop policy
    p = run.agent.perception
    assert (p.turn_style, p.budget_tokens, p.field_separator) == ("compact", 2048, " [SEP] ")
    assert run.steps_limit == run.env.max_steps == 15  # WebShop's registration
    assert run_of(max_steps=4).steps_limit == 4
    assert run.lanes == 1 and run.env_name == "webshop" and len(run.run_hash) == 16
    # the config records what was asked (adapter: auto) with the brain's registered defaults filled in
    assert run.config.brain.options["adapter"] == "auto"
    assert set(brain_spec("local").option_defaults()) <= set(run.config.brain.options)


def test_temperature_auto_is_the_one_the_served_adapter_was_measured_best_at() -> None:
    """WebShop's default, agentsim-choice, plays at argmax (docs/policy.md, "Argmax"); any other adapter, the base
    model, or another env samples at 0.7; a number always wins, and a bad one is refused by the options model."""
    assert run_of(brain={"name": "local"}).brain.options["temperature"] == 0.0
    assert run_of(brain={"name": "local"}).config.brain.options["temperature"] == "auto"  # recorded as asked
    assert run_of(brain={"name": "local", "adapter": "agentsim-oracle"}).brain.options["temperature"] == 0.7
    assert run_of(brain={"name": "local", "adapter": None}).brain.options["temperature"] == 0.7
    fault = resolve(validate_config(RunConfig, {"env": {"name": "faulttree", "id": "faulttree"}, "out": "x"}))
    assert fault.brain.options["temperature"] == 0.7
    assert run_of(brain={"name": "local", "temperature": 0.3}).brain.options["temperature"] == 0.3
    with pytest.raises(ConfigError, match="temperature"):
        run_of(brain={"name": "local", "temperature": "hot"})
    with pytest.raises(ConfigError, match="temperature"):
        run_of(brain={"name": "local", "temperature": -1})


def test_a_resolved_config_resolves_to_itself() -> None:
    """A Ray actor resolves the driver's resolved config again: the same adapter, prompt, limit and hash."""
    run = run_of(brain={"name": "local"}, agent={"perception": {"turn_style": "full"}})
    again = resolve(RunConfig.model_validate(run.config.model_dump(mode="json")))
    assert again == run


def test_the_command_lines_preset_and_a_bare_name_are_one_run() -> None:
    """`brain=local` (the preset carries every default) and `{"name": "local"}` from code hash alike."""
    preset = {"name": "local", **brain_spec("local").option_defaults()}
    assert run_of(brain=preset).run_hash == run_of(brain={"name": "local"}).run_hash


def test_fields_marked_not_identity_do_not_change_the_hash_and_the_others_do() -> None:
    base = validate_config(CollectConfig, {"env": WEBSHOP, "brain": {"name": "scripted"}, "out": "a"})
    marked = identity_fields(CollectConfig)
    assert {"out", "episodes", "concurrency", "resume", "executor", "workers", "remote", "progress"} <= marked
    assert not marked & {"env", "brain", "agent", "memory", "seed", "max_steps", "max_invalid", "carry_memory"}
    for field in ("out", "episodes", "concurrency", "executor", "workers", "keep_messages", "log_level"):
        assert CollectConfig.model_fields[field].json_schema_extra == NOT_IDENTITY
    same = {"out": "b", "episodes": 7, "concurrency": 3, "executor": "ray", "workers": 5, "keep_messages": False}
    assert run_hash(resolve(base).config) == run_hash(resolve(base.model_copy(update=same)).config)
    for key, value in {"seed": 9, "max_invalid": 2, "max_steps": 3}.items():
        other = validate_config(CollectConfig, {**base.model_dump(), key: value})
        assert resolve(other).run_hash != resolve(base).run_hash, key


def test_configs_are_frozen_and_factories_change_nothing() -> None:
    run = run_of(brain={"name": "scripted"})
    before = run.config.model_dump()
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        run.config.agent.perception.turn_style = "full"  # type: ignore[misc]
    with pytest.raises(TypeError):
        run.brain.options["seed"] = 3  # type: ignore[index]
    brain = build_brain(run.brain)
    build_agent(brain, run.agent, None)
    assert run.config.model_dump() == before


def test_an_unknown_brain_option_is_refused_at_resolve_naming_the_valid_ones() -> None:
    with pytest.raises(
        ConfigError, match=r"unknown option 'temprature' for brain=local \(did you mean 'temperature'\?\)"
    ):
        run_of(brain={"name": "local", "temprature": 0.5})


def test_build_agent_refuses_perception_keys_left_at_auto() -> None:
    """A factory never resolves: an unresolved agent config is refused, and `resolve_agent` is the way out."""
    brain = build_brain(run_of(brain={"name": "scripted"}).brain)
    unresolved = validate_config(RunConfig, {"env": WEBSHOP, "out": "x"}).agent
    with pytest.raises(ValueError, match="resolve_agent"):
        build_agent(brain, unresolved, None)
    agent = build_agent(brain, resolve_agent(unresolved), None)
    assert agent.perception.config.turn_style == "full" and agent.perception.config.budget_tokens == 2048
