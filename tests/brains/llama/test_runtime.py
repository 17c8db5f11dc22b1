"""The llama.cpp runtime (`agents.brains.llama.runtime`): the private llama-cpp-python internals it needs, the tested
version bound, and llama.cpp's own logging kept off the terminal."""

import logging
from pathlib import Path

import pytest

from agents.brains.base import BrainError
from agents.brains.llama.runtime import (
    REQUIRED_INTERNALS,
    LlamaRuntime,
    declared_requirement,
    missing_instance_attrs,
    missing_internals,
)
from tests.shopping_prompt import CANDS, MSGS


def test_llama_cpp_internals_the_runtime_uses_are_all_there(local_brain):
    """Fails naming `module.attr` when a llama-cpp-python release renames an internal the runtime uses."""
    missing = missing_internals() + missing_instance_attrs(local_brain.llm)
    assert not missing, f"llama-cpp-python changed internals agents/brains/llama/runtime.py relies on: {missing}"


def test_installed_llama_cpp_is_within_the_tested_bound():
    """pyproject.toml bounds llama-cpp-python above, and what runs these tests is inside that bound."""
    import llama_cpp

    tomllib = pytest.importorskip("tomllib")
    requirement = pytest.importorskip("packaging.requirements")
    project = tomllib.loads((Path(__file__).resolve().parents[3] / "pyproject.toml").read_text())["project"]
    reqs = [requirement.Requirement(r) for r in project["dependencies"] + project["optional-dependencies"]["test"]]
    llama = [r for r in reqs if r.name == "llama-cpp-python"]
    assert len(llama) == 2 and len({str(r.specifier) for r in llama}) == 1, f"one bound for both lines: {llama}"
    spec = llama[0].specifier
    assert any(s.operator in ("<", "<=", "==", "~=") for s in spec), f"no upper bound on llama-cpp-python: {spec}"
    assert llama_cpp.__version__ in spec, f"llama-cpp-python {llama_cpp.__version__} is outside the tested bound {spec}"
    assert declared_requirement().startswith("llama-cpp-python")


def test_a_missing_internal_is_a_loud_error_naming_it(monkeypatch, gguf_path):
    from llama_cpp import _internals

    monkeypatch.delattr(_internals.LlamaContext, "kv_cache_seq_cp")
    assert missing_internals() == ["llama_cpp._internals.LlamaContext.kv_cache_seq_cp"]
    with pytest.raises(BrainError, match=r"lacks internals .*llama_cpp\._internals\.LlamaContext\.kv_cache_seq_cp"):
        LlamaRuntime(gguf_path, n_ctx=256, n_threads=1, seed=0, n_seq=2)
    assert ("llama_cpp._internals", "LlamaContext.kv_cache_seq_cp") in REQUIRED_INTERNALS


def test_llama_cpp_logging_is_silent_unless_debug(capfd, caplog, gguf_path):
    """Loading a model and swapping in the multi-sequence context prints nothing; at DEBUG the lines reach logging."""
    from agents.brains.local import LocalBrain

    capfd.readouterr()
    brain = LocalBrain(model=gguf_path, n_ctx=512, n_seq=4)
    brain.choose(MSGS, CANDS[:2], prefix="Action: ")
    out, err = capfd.readouterr()
    assert out == "" and err == "", f"llama.cpp printed to the terminal: {(out + err)[:500]}"

    caplog.set_level(logging.DEBUG, logger="llama_cpp.native")
    LocalBrain(model=gguf_path, n_ctx=512, n_seq=4)
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    lines = [r.getMessage() for r in caplog.records if r.name == "llama_cpp.native"]
    assert lines and all(r.levelno == logging.DEBUG for r in caplog.records if r.name == "llama_cpp.native")
    assert any("llama_" in line for line in lines)
