"""`brain.adapter=<name>`: adapters shipped with the package resolve, load, and stay out of other base models."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

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
