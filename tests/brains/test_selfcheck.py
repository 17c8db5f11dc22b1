"""`python -m agents.brains.selfcheck`: a llama.cpp build that crashes is reported, with how to rebuild."""

from __future__ import annotations

import pytest

from agents.brains import selfcheck


@pytest.mark.slow
def test_the_installed_build_runs_the_embedded_model():
    ok, what = selfcheck.check()
    assert ok, what
    assert "|" in what  # the child ranked and generated


def test_a_crashing_build_is_reported_with_the_portable_rebuild(monkeypatch):
    # a child that dies the way a bad native build does (SIGSEGV inside the process)
    monkeypatch.setattr(selfcheck, "_CHILD", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")
    ok, what = selfcheck.check(timeout_s=60)
    assert not ok
    assert "segfault" in what and selfcheck.PORTABLE_CMAKE_ARGS in what and "--force-reinstall" in what


def test_a_hanging_build_is_cut_off(monkeypatch):
    monkeypatch.setattr(selfcheck, "_CHILD", "import time; time.sleep(30)")
    ok, what = selfcheck.check(timeout_s=1)
    assert not ok and "did not answer within 1 s" in what
