"""The ground-floor helpers (`envs/util.py`) every layer imports: loopback, strict JSON, files that appear whole."""

from __future__ import annotations

import json
import math
import os
import threading
from pathlib import Path

import numpy as np
import pytest
from pydantic import BaseModel

from envs.util import (
    atomic_write_bytes,
    atomic_write_text,
    is_loopback,
    is_loopback_url,
    partial_files,
    publish_file,
    to_jsonable,
)


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "127.8.9.10", "::1"])
def test_this_machine_is_loopback(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "10.0.0.1", "example.com", "localhost.example.com", "", "::", "not an ip"])
def test_other_hosts_are_not(host: str) -> None:
    assert not is_loopback(host)


def test_a_url_is_judged_by_its_host() -> None:
    assert is_loopback_url("http://127.0.0.1:8000/v1") and is_loopback_url("http://[::1]:80/")
    assert not is_loopback_url("https://api.openai.com/v1") and not is_loopback_url("not a url")


class _Point(BaseModel):
    x: int
    at: Path


def test_values_become_strict_json() -> None:
    value = {
        1: np.int64(3),
        "f": np.float32(0.5),
        "b": np.bool_(True),
        "t": (1, 2),
        "s": {7},
        "nan": float("nan"),
        "inf": -math.inf,
        "model": _Point(x=1, at=Path("/tmp/a")),
        "arr": np.arange(3),
        "nested": [{"k": np.float64(1.25)}],
    }
    out = to_jsonable(value)
    assert json.loads(json.dumps(out, allow_nan=False)) == out  # strict JSON: no NaN, no numpy, no tuples
    assert out["1"] == 3 and out["f"] == 0.5 and out["b"] is True and out["t"] == [1, 2] and out["s"] == [7]
    assert out["nan"] == "nan" and out["inf"] == "-inf"
    assert out["model"] == {"x": 1, "at": "/tmp/a"} and out["nested"] == [{"k": 1.25}]
    assert out["arr"] == repr(np.arange(3))  # an array is kept short (its repr), as info dicts always had it


def test_a_published_file_is_whole_with_a_plain_files_mode(tmp_path: Path) -> None:
    target = tmp_path / "summary.json"
    atomic_write_text(target, '{"a": 1}')
    plain = tmp_path / "plain.json"
    plain.write_text("x")
    assert json.loads(target.read_text()) == {"a": 1}
    assert (target.stat().st_mode & 0o777) == (plain.stat().st_mode & 0o777)
    atomic_write_bytes(target, b"second")
    assert target.read_bytes() == b"second" and partial_files(target) == []


def test_a_failed_write_keeps_the_old_file_and_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "model.gguf"
    target.write_bytes(b"old")

    def half(tmp: Path) -> None:
        assert tmp.suffix == ".gguf" and tmp.parent == tmp_path  # writers that read the suffix get the target's
        tmp.write_bytes(b"ne")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        publish_file(target, half)
    assert target.read_bytes() == b"old" and sorted(os.listdir(tmp_path)) == ["model.gguf"]


def test_concurrent_writers_never_mix(tmp_path: Path) -> None:
    """Each writer has its own temp file: the result is one writer's bytes whole, never an interleaving."""
    target = tmp_path / "state.json"
    payloads = [bytes([65 + i]) * 200_000 for i in range(6)]
    threads = [threading.Thread(target=atomic_write_bytes, args=(target, p)) for p in payloads]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert target.read_bytes() in payloads and partial_files(target) == []


def test_leftovers_of_a_killed_writer_are_found(tmp_path: Path) -> None:
    target = tmp_path / "checkpoint.pkl"
    left = tmp_path / ".checkpoint.0123456789ab.part.pkl"
    left.write_bytes(b"torn")
    (tmp_path / ".other.0123456789ab.part.pkl").write_bytes(b"not ours")
    assert partial_files(target) == [left]
