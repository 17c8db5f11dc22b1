"""The episode index: built once, caught up by byte offset as the store grows, rebuilt when the store is replaced."""

from __future__ import annotations

import os
from pathlib import Path

from agents.trajectories.store import TrajectoryStore
from agents.ui.index import INDEX_NAME, EpisodeIndex

from .conftest import prm_episode, write_store


def test_index_catches_up_by_offset_and_waits_for_a_torn_line(tmp_path: Path):
    out = write_store(tmp_path / "r", [prm_episode(s) for s in range(3)])
    store = out / "trajectories.jsonl"
    idx = EpisodeIndex(store)
    st = idx.refresh()
    assert (st.episodes, st.indexed_bytes, st.store_bytes) == (3, store.stat().st_size, store.stat().st_size)
    assert (out / INDEX_NAME).exists()
    rows = idx.query("SELECT episode_id, seed, success, steps, has_prm, has_candidates FROM episodes ORDER BY row")
    assert [r["episode_id"] for r in rows] == ["toy-0", "toy-1", "toy-2"]
    assert [r["success"] for r in rows] == [1, 0, 1] and all(r["has_prm"] and r["steps"] == 4 for r in rows)

    # half a line (a writer mid-append): not indexed, and the offset stays before it
    line = prm_episode(3).model_dump_json() + "\n"
    before = store.stat().st_size
    with open(store, "a") as f:
        f.write(line[:50])
    st = idx.refresh()
    assert st.episodes == 3 and st.indexed_bytes == before
    with open(store, "a") as f:
        f.write(line[50:])
    st = idx.refresh()
    assert st.episodes == 4 and st.indexed_bytes == store.stat().st_size
    r = idx.query("SELECT offset, length FROM episodes WHERE episode_id = 'toy-3'")[0]
    assert idx.read_line(r["offset"], r["length"])["seed"] == 3

    # a second index object (a restarted UI) reads nothing again: same rows, no duplicates
    again = EpisodeIndex(store)
    assert again.refresh().episodes == 4


def test_index_skips_unreadable_lines_and_reindexes_a_replaced_store(tmp_path: Path):
    out = write_store(tmp_path / "r", [prm_episode(0)])
    store = out / "trajectories.jsonl"
    with open(store, "a") as f:
        f.write("{not json}\n[1, 2]\n")
    TrajectoryStore(store).append(prm_episode(1))
    idx = EpisodeIndex(store)
    st = idx.refresh()
    assert st.episodes == 2 and st.skipped_lines == 2

    # societies.run replaces its store at the end: a new file, fewer bytes
    tmp = store.with_name("new.jsonl")
    TrajectoryStore(tmp).append(prm_episode(7))
    os.replace(tmp, store)
    st = idx.refresh()
    assert st.episodes == 1 and st.skipped_lines == 0
    assert idx.query("SELECT seed FROM episodes")[0]["seed"] == 7


def test_index_of_a_read_only_run_folder_lives_outside_it(tmp_path: Path, monkeypatch):
    out = write_store(tmp_path / "r", [prm_episode(0)])
    monkeypatch.setattr("agents.ui.index.os.access", lambda p, mode: False)  # as for a folder we may not write
    idx = EpisodeIndex(out / "trajectories.jsonl")
    assert idx.refresh().episodes == 1
    assert not (out / INDEX_NAME).exists() and idx.path.parent != out


def test_totals_and_the_last_episode_of_a_repeated_seed(tmp_path: Path):
    first, again = prm_episode(0), prm_episode(0).model_copy(update={"episode_id": "toy-0-again"})
    out = write_store(tmp_path / "r", [first, prm_episode(1), again])
    idx = EpisodeIndex(out / "trajectories.jsonl")
    idx.refresh()
    TrajectoryStore(out / "trajectories.jsonl").append(prm_episode(1).model_copy(update={"episode_id": "toy-1-again"}))
    idx.refresh()  # the repeat arrives in a later catch-up: the earlier row loses its flag
    latest = idx.query("SELECT episode_id FROM episodes WHERE latest = 1 ORDER BY seed")
    assert [r["episode_id"] for r in latest] == ["toy-0-again", "toy-1-again"]
    t = idx.totals()
    assert t["episodes"] == 4 and t["success_rate"] == 0.5 and t["mean_steps"] == 4 and t["env"] == "toy"
    assert t["tokens_in"] == 4 * sum(100 + n for n in range(4)) and t["with_prm"] == 4
