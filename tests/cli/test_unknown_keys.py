"""A typo exits 2 in every command, at any depth, with or without Hydra's `+`: the message names the key, the
valid keys at that level and the closest one (agents/cli.py). Values that are right keep working."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agents.cli import UsageError, check_keys, closest
from agents.config import RunConfig
from tests.toy_env import ENV_ID

ROOT = Path(__file__).resolve().parents[2]
CORRIDOR = ["env=gym", f"env.id={ENV_ID}", "env.entry_point=tests.toy_env:CorridorEnv", "env.name=corridor"]
# the keys each command requires, so only the typo is wrong
REQUIRED = {
    "agents.run": ["brain=scripted"],
    "agents.collect": ["brain=scripted"],
    "agents.train": ["data=[nowhere]"],
    "prm.train": ["data=[nowhere]"],
    "prm.search": ["model=nowhere", "brain=scripted"],
    "prm.dense": ["model=nowhere", "runs=[nowhere]"],
    "societies.run": [],
}

# (command, the typo, the key the message names, the closest valid key or None, a key the valid list shows)
CASES = [
    ("agents.run", "episode=3", "'episode'", "'episodes'", "max_invalid"),
    ("agents.run", "+episode=3", "'episode'", "'episodes'", "max_invalid"),
    ("agents.run", "++episode=3", "'episode'", "'episodes'", "max_invalid"),
    ("agents.run", "brain=local brain.temprature=0.5", "'brain.temprature'", "'brain.temperature'", "n_ctx"),
    ("agents.run", "+brain.epsilonn=0.1", "'brain.epsilonn'", "'brain.epsilon'", "seed"),
    ("agents.run", "agent.no_such=1", "'agent.no_such'", None, "slot_fill"),
    (
        "agents.run",
        "agent.perception.budjet=3",
        "'agent.perception.budjet'",
        "'agent.perception.budget_tokens'",
        "turn_style",
    ),
    ("agents.run", "remote.tokn=x", "'remote.tokn'", "'remote.token'", "timeout_s"),
    ("agents.run", "foo.bar.baz=1", "'foo'", None, "episodes"),
    ("agents.run", "memory=working memory.max_item=3", "'memory.max_item'", "'memory.max_items'", "max_items"),
    ("agents.run", "memory=working+facts memory.fact.x=1", "'memory.fact'", "'memory.facts'", "weights"),
    ("agents.run", "env=webshp", "env 'webshp'", "env=webshop", "faulttree"),
    ("agents.run", "memory=working memory.carry=true", "memory.carry moved to carry_memory", None, ""),
    ("agents.run", "brain=opnai", "brain 'opnai'", "brain=openai", "scripted"),
    ("agents.run", "memory=wroking", "memory 'wroking'", "memory=working", "reflective"),
    ("agents.collect", "concurency=4", "'concurency'", "'concurrency'", "workers"),
    ("agents.collect", "+executr=ray", "'executr'", "'executor'", "ray_address"),
    ("agents.train", "epoch=2", "'epoch'", "'epochs'", "max_updates"),
    ("agents.train", "lora.rank=4", "'lora.rank'", None, "alpha"),
    (
        "agents.train",
        "select_agent.perception.turnstyle=compact",
        "turnstyle",
        "'select_agent.perception.turn_style'",
        "layout",
    ),
    ("prm.train", "lables=mc", "'lables'", "'labels'", "backbone"),
    ("prm.train", "td.gama=0.5", "'td.gama'", "'td.gamma'", "lam"),
    ("prm.train", "+text.max_lenght=128", "'text.max_lenght'", "'text.max_length'", "obs_tokens"),
    ("prm.search", "stratgy=beam", "'stratgy'", "'strategy'", "prior"),
    ("prm.search", "memory=working", "'memory'", None, "strategy"),
    ("prm.search", "env.kwarg.x=1", "'env.kwarg'", "'env.kwargs'", "entry_point"),
    ("prm.dense", "batchsize=3", "'batchsize'", "'batch_size'", "chunk"),
    ("societies.run", "foo=1", "'foo'", None, "rounds"),
    ("societies.run", "opinion.treshold=0.1", "'opinion.treshold'", "'opinion.threshold'", "mu"),
    ("societies.run", "env=webshop", "'env'", None, "scenario"),
    ("societies.run", "+agnets=3", "'agnets'", "'agents'", "llm_fraction"),
]


def cli(module: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("module,typo,key,guess,valid", CASES, ids=[f"{c[0]} {c[1]}" for c in CASES])
def test_unknown_key_exits_2_naming_it_the_valid_keys_and_the_closest(
    tmp_path: Path, module: str, typo: str, key: str, guess: str | None, valid: str
) -> None:
    out = tmp_path / "out"
    res = cli(module, *REQUIRED[module], *typo.split(), f"out={out}")
    err = res.stderr
    assert res.returncode == 2, (typo, res.returncode, err[-2000:])
    assert err.startswith("error: "), err[-2000:]
    assert key in err and valid in err, err
    if guess is None:
        assert "did you mean" not in err, err
    else:
        assert f"did you mean {guess}" in err, err
    assert "Traceback" not in err and "not in struct" not in err and "HYDRA_FULL_ERROR" not in err, err
    made = [p.name for p in out.iterdir()] if out.exists() else []
    assert all(name == ".hydra" or name.endswith(".log") for name in made), made  # refused before anything ran


def test_right_keys_still_run_memory_composites_and_open_kwargs(tmp_path: Path) -> None:
    """`memory=working+facts` (no preset of that name) and `env.kwargs.<anything>` are accepted as typed."""
    out = tmp_path / "ok"
    args = [*CORRIDOR, "brain=scripted", "memory=working+facts", "memory.facts.multi_valued=[likes]"]
    res = cli("agents.run", *args, "env.kwargs.length=4", "episodes=2", "progress=false", f"out={out}")
    assert res.returncode == 0, res.stderr[-2000:]
    config = json.loads((out / "summary.json").read_text())["config"]
    assert config["memory"] == {"name": "working+facts", "facts": {"multi_valued": ["likes"]}}
    assert config["env"]["kwargs"] == {"length": 4}


def test_check_keys_reports_every_unknown_key_at_its_depth() -> None:
    cfg = {"env": {"id": "x", "kwargs": {"anything": 1}}, "out": "o", "episods": 3, "agent": {"perception": {"x": 1}}}
    with pytest.raises(UsageError) as e:
        check_keys(cfg, RunConfig)
    msg = str(e.value)
    assert "unknown key 'episods'" in msg and "did you mean 'episodes'" in msg
    assert "unknown key 'agent.perception.x'" in msg and "valid keys under 'agent.perception'" in msg
    assert "anything" not in msg  # env.kwargs is the user's own mapping
    check_keys({"env": {"id": "x", "kwargs": {"a": 1}}, "out": "o", "episodes": 3}, RunConfig)  # all known: no error


def test_closest_matches_a_word_of_a_key_and_nothing_far() -> None:
    assert closest("budjet", ["budget_tokens", "layout"]) == "budget_tokens"
    assert closest("temprature", ["temperature", "max_tokens"]) == "temperature"
    assert closest("no_such", ["mode", "slot_fill", "max_tokens"]) is None
