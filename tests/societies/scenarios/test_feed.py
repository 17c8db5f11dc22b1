"""The feed scenario: the env contract, text == arrays, bad actions, pluggable recommenders, known results, the runner."""

from __future__ import annotations

import json
import random
import sqlite3
import warnings
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from pettingzoo.test import parallel_api_test, parallel_seed_test
from pydantic import ValidationError
from scipy import stats

from agents.config import validate_config
from agents.trajectories.store import TRAJECTORIES, TrajectoryStore
from envs.contract import MAX_ACTION_CHARS
from societies.config import SocietyRunConfig, build
from societies.env import OBS_CHARS, WAIT, Moves, SocietyEnv, agent_id
from societies.graphs import SocialGraph, from_edges, from_networkx, gnm
from societies.metrics import partition_modularity
from societies.rules import play_round, text_actions
from societies.run import run_society
from societies.scenarios.feed import (
    FOLLOW,
    LIKE,
    POST,
    POST_CHARS,
    RECOMMENDERS,
    REPOST,
    FeedRule,
    FeedScenario,
    load_recommender,
)
from societies.scenarios.feed.ranking import top_k_per_row

BUSY = FeedRule(p_repost=0.1, p_like=0.2, p_follow=0.5, p_post=0.2, off_topic=0.5)  # every kind of move happens
PLUGINS = "tests.societies.scenarios.feed_plugins"


def feed_env(n: int = 30, recommender: str = "recency", rounds: int = 8, seeds: int = 6, **kw) -> SocietyEnv:
    return SocietyEnv(FeedScenario(gnm(n, 4, np.random.default_rng(0)), recommender, n_seeds=seeds, **kw), rounds)


def busy_rounds(env: SocietyEnv, k: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(k):
        play_round(env, BUSY, rng)


# ------------------------------------------------------------------------------------------ env contract
@pytest.mark.parametrize("recommender", sorted(RECOMMENDERS))
def test_parallel_api_test_passes(recommender: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parallel_api_test(feed_env(recommender=recommender, rounds=20), num_cycles=15)


def test_parallel_seed_test_passes() -> None:
    parallel_seed_test(lambda: feed_env(recommender="similarity"), num_cycles=10)


@pytest.mark.parametrize("recommender", ["recency", "similarity"])
def test_every_round_every_info_keeps_the_contract_and_observations_stay_bounded(recommender: str) -> None:
    """OASIS #94 (garbled output after a few rounds): every observation, every round, is bounded and well-formed."""
    env = feed_env(n=40, recommender=recommender, rounds=12, feed_size=50)
    obs, infos = env.reset(seed=1)
    rng = np.random.default_rng(2)
    sc = env.scenario
    long = "x" * (POST_CHARS - 20) + "\n\t\x00 ]["
    for _ in range(11):
        for a in env.agents:
            info = infos[a]
            assert isinstance(obs[a], str) and 0 < len(obs[a]) <= OBS_CHARS
            assert not any(ord(ch) < 32 and ch != "\n" for ch in obs[a])
            assert info["instruction"] and info["available_actions"] and isinstance(info["action_templates"], list)
            if info["active"]:
                assert {"post", "nothing"} <= set(info["available_actions"])
                lines = [ln for ln in obs[a].splitlines() if ln.startswith("- #")]
                assert len(lines) == sc._feed_of(env.index(a)).size <= sc.feed_size
            else:
                assert info["available_actions"] == [WAIT] and info["action_templates"] == []
        moves = BUSY.decide(sc, sc.active, rng)
        actions = text_actions(env, moves)
        actions[agent_id(int(sc.active[0]))] = f"post[{long}]"  # a long, messy text post every round
        obs, _, _, _, infos = env.step(actions)
        assert not any("error" in i for i in infos.values())
    assert sc.posts.size > 50 and sc.counts["posts"] + sc.counts["reposts"] > 0


@pytest.mark.parametrize("recommender", sorted(RECOMMENDERS))
def test_text_path_and_array_path_give_the_same_run(recommender: str) -> None:
    """The feed rule's moves written as text and sent through `step` give the run `step_moves` gives."""
    fast, text = feed_env(n=40, recommender=recommender, rounds=10), feed_env(n=40, recommender=recommender, rounds=10)
    fast.start(7)
    text.reset(seed=7)
    r1, r2 = np.random.default_rng(9), np.random.default_rng(9)
    kinds = set()
    while fast.agents:
        m1 = BUSY.decide(fast.scenario, fast.scenario.active, r1)
        res = fast.step_moves(m1)
        m2 = BUSY.decide(text.scenario, text.scenario.active, r2)
        _, rewards, _, _, infos = text.step(text_actions(text, m2))
        assert not any("error" in i for i in infos.values())
        a, b = fast.scenario, text.scenario
        assert a.posts.size == b.posts.size and np.array_equal(a.follows.keys, b.follows.keys)
        for col in ("author", "root", "parent", "likes", "reposts", "generation"):
            assert np.array_equal(getattr(a.posts, col)[: a.posts.size], getattr(b.posts, col)[: b.posts.size])
        assert np.array_equal(a.feed, b.feed)
        assert [rewards[x] for x in sorted(rewards, key=text.index)] == res.rewards.tolist()
        kinds |= set(np.unique(m1.code).tolist())
    assert not text.agents
    # recency shows only followed accounts, so there is no one new to follow
    assert {POST, REPOST, LIKE} | ({FOLLOW} if recommender != "recency" else set()) <= kinds


# ----------------------------------------------------------------------------------------- bad actions
def _ready(seed: int = 3) -> tuple[SocietyEnv, str, int, np.ndarray]:
    env = feed_env(n=30, rounds=10)
    env.reset(seed=seed)
    busy_rounds(env, 2)
    sc = env.scenario
    i = next(int(i) for i in sc.active if sc._feed_of(int(i)).size >= 2)
    return env, agent_id(i), i, sc._feed_of(i)


def test_bad_actions_are_errors_that_say_what_is_allowed_and_change_nothing() -> None:
    env, me, i, feed = _ready()
    sc = env.scenario
    not_shown = next(x for x in range(sc.posts.size) if x not in feed)
    indptr, followees = sc.following()
    bad: list[tuple[object, str]] = [
        ("fly", "unknown action"),
        ("repost[99999]", "there is no post #99999"),
        (f"repost[{not_shown}]", "is not in your feed"),
        ("like[abc]", "is not a post id"),
        (f"follow[{me}]", "cannot follow yourself"),
        ("follow[agent_999]", "there is no agent_999"),
        (f"follow[agent_{int(followees[indptr[i]])}]", "already follow"),
        ("post[   ]", "needs text"),
        ("post[" + "y" * (POST_CHARS + 1) + "]", "at most"),
        ("x" * (MAX_ACTION_CHARS + 1), ""),
        (WAIT, "unknown action"),
        (None, ""),
        (3, ""),
    ]
    snap = env.snapshot()
    for action, says in bad:
        env.restore(snap)
        sc = env.scenario
        before = (sc.posts.size, len(sc.follows), len(sc.liked))
        _, rewards, _, _, infos = env.step({me: action})
        err = infos[me].get("error", "")
        assert err.startswith("Invalid action") and says in err and "Allowed actions" in err, (action, err)
        assert len(err) < 1200 and rewards[me] == 0.0
        assert (sc.posts.size, len(sc.follows), len(sc.liked)) == before


def _show(sc: FeedScenario, i: int, x: int) -> None:
    """Put post x first in agent i's feed (recency shows a post once; these checks need it twice)."""
    if sc.feed.shape[1] == 0:
        sc.feed = np.full((sc.feed.shape[0], 1), -1, np.int64)
    sc.feed[sc.row_of[i], 0] = x


def test_a_story_is_shared_once_and_a_post_liked_once() -> None:
    env, me, i, feed = _ready()
    x = int(feed[0])
    _, _, _, _, infos = env.step({me: f"like[{x}]"})
    assert "error" not in infos[me]
    _show(env.scenario, i, x)
    _, _, _, _, infos = env.step({me: f"like[#{x}]"})
    assert "already liked" in infos[me]["error"]
    env, me, i, feed = _ready(seed=4)
    y = int(feed[0])
    _, _, _, _, infos = env.step({me: f"repost[{y}]"})
    assert "error" not in infos[me]
    _show(env.scenario, i, y)
    assert f"repost[{y}]" not in env.info(me)["available_actions"] and f"like[{y}]" in env.info(me)["available_actions"]
    _, _, _, _, infos = env.step({me: f"repost[{y}]"})
    assert "already posted or shared this story" in infos[me]["error"]


def test_a_written_post_is_cleaned_and_reaches_followers_on_one_line() -> None:
    env = feed_env(n=20, rounds=5, seeds=0)
    env.reset(seed=0)
    sc = env.scenario
    a = int(np.argmax(sc.n_followers))
    _, _, _, _, infos = env.step({agent_id(a): 'post[Ferry "schedule"\nchanged!\x07 see   you]'})
    assert "error" not in infos[agent_id(a)]
    text = sc.post_text(0)
    assert text == 'Ferry "schedule" changed! see you' and sc.posts.author[0] == a
    indptr, followers = sc.followed_by()
    obs = env.observe(agent_id(int(followers[indptr[a]])))
    assert f"#0 by agent_{a}" in obs and "changed! see you" in obs
    assert sc.move_text(a, POST, 0.0) == f"post[{text}]"


def test_the_fast_path_drops_invalid_moves_without_raising() -> None:
    env = feed_env(n=20, rounds=5)
    env.start(0)
    sc = env.scenario
    idx = sc.active[:4]
    before = sc.posts.size
    env.step_moves(
        Moves(idx, np.array([REPOST, REPOST, FOLLOW, FOLLOW], np.int8), np.array([999, np.nan, idx[2], -3.0]))
    )
    assert sc.posts.size == before and sc.counts == {"posts": 0, "reposts": 0, "likes": 0, "follows": 0}


# -------------------------------------------------------------------------------------- recommenders
def test_a_custom_recommender_loads_by_import_path_and_its_answer_is_cleaned() -> None:
    env = feed_env(recommender=f"{PLUGINS}:Latest", rounds=6)
    env.reset(seed=0)
    sc = env.scenario
    assert sc.recommender.name == "latest"
    busy_rounds(env, 3)
    lo, hi = sc.window_range()
    for i in sc.active[:5]:
        feed = sc._feed_of(int(i))
        assert feed.size <= sc.feed_size and np.all(sc.posts.author[feed] != i) and np.all(feed >= lo)
    garbage = feed_env(recommender=f"{PLUGINS}:Garbage", rounds=4)
    garbage.reset(seed=0)  # ids that are not posts, repeats and 100 columns: dropped, not shown
    for i in garbage.scenario.active[:5]:
        feed = garbage.scenario._feed_of(int(i))
        assert len(set(feed.tolist())) == feed.size <= 4 and np.all(feed < garbage.scenario.posts.size)


@pytest.mark.parametrize(
    "spec,says",
    [
        (f"{PLUGINS}:NoRecommend", "has no recommend method"),
        (f"{PLUGINS}:TakesNoRng", "does not take (scenario, idx, k, rng)"),
        (f"{PLUGINS}:Missing", "has no attribute"),
        ("no_such_package.recs:Mine", "cannot import 'no_such_package.recs'"),
        ("trending", "unknown recommender 'trending'"),
    ],
)
def test_a_broken_recommender_is_a_clear_config_error(spec: str, says: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="recommender") as e:
        load_recommender(spec)
    assert says in str(e.value)
    with pytest.raises(ValidationError) as v:
        SocietyRunConfig(scenario="feed", out=str(tmp_path), feed={"recommender": spec})
    assert says in str(v.value)


def test_a_recommender_answer_of_the_wrong_shape_is_refused_clearly() -> None:
    env = feed_env(recommender=f"{PLUGINS}:WrongShape")
    with pytest.raises(ValueError, match="returned shape"):
        env.reset(seed=0)


def test_top_k_per_row_ranks_by_score_then_newer_and_merges_repeats() -> None:
    rows = np.array([0, 0, 0, 0, 1, 1, 0])
    posts = np.array([5, 6, 7, 8, 1, 2, 7])
    score = np.array([1.0, 3.0, 2.0, 3.0, 0.0, 0.0, 2.0])
    out = top_k_per_row(rows, posts, score, 3, 3)
    assert out.tolist() == [[8, 6, 7], [2, 1, -1], [-1, -1, -1]]


# ------------------------------------------------------------------------------------- known results
def ic_reference(g: nx.Graph, seed: int, p: float, rnd: random.Random) -> tuple[int, int]:
    """Independent cascade directly on the networkx graph: (size, depth)."""
    active, frontier, depth = {seed}, [seed], 0
    while frontier:
        new = []
        for u in frontier:
            for v in g.neighbors(u):
                if v not in active and rnd.random() < p:
                    active.add(v)
                    new.append(v)
        depth += bool(new)
        frontier = new
    return len(active), depth


def disjoint_copies(g: nx.Graph, c: int) -> SocialGraph:
    """c disjoint copies of g in one graph: c independent cascades per run, one seed in each copy."""
    base = from_networkx(g)
    src = np.repeat(np.arange(base.n), np.diff(base.indptr))
    off = np.repeat(np.arange(c) * base.n, src.size)
    return from_edges(base.n * c, np.tile(src, c) + off, np.tile(base.indices, c) + off)


def feed_cascades(g: nx.Graph, p: float, copies: int, runs: int) -> np.ndarray:
    """(size, depth) of every cascade: recency feed, follows = the graph both ways, reposts only, p per exposure."""
    n, big = g.number_of_nodes(), disjoint_copies(g, copies)
    out = []
    for seed in range(runs):
        seeds = np.arange(copies) * n + np.random.default_rng([seed, 5]).integers(0, n, size=copies)
        sc = FeedScenario(big, "recency", feed_size=50, window=1, topics=1, n_seeds=copies, seed_authors=seeds)
        env = SocietyEnv(sc, max_rounds=1000)
        env.start(seed)
        rng = np.random.default_rng([seed, 1])
        while env.agents:
            play_round(env, FeedRule(p), rng)
            if sc.counts["reposts"] == 0:  # no new posts: nothing more can be shown
                break
        assert max(int(np.diff(big.indptr).max()), 1) < sc.feed_size  # nothing was cut from a feed
        orig, sizes = sc.cascade_sizes()
        depth = np.zeros(sc.posts.size, np.int64)
        np.maximum.at(depth, sc.posts.root[: sc.posts.size], sc.posts.generation[: sc.posts.size])
        out += list(zip(sizes.tolist(), depth[orig].tolist()))
    return np.array(out)


@pytest.mark.parametrize("p,edges", [(0.3, 600), (0.15, 900)], ids=["p0.3-deg4", "p0.15-deg6"])
def test_recency_feed_cascades_are_independent_cascades(p: float, edges: int) -> None:
    """The feed with recency, follows = the graph both ways, no new posts, reposts only with p per exposure.

    An agent shown k reposts of a story in a round reposts it with 1 - (1 - p)^k: the k independent
    chances of its k newly active neighbours in the IC model. It sees each post once (recency
    shows what is new since its last visit) and is never asked again once in the story.
    Same G(300, m) and p as the diffusion check, 1,500 cascades each way (300 disjoint copies x 5 runs).
    Measured: p 0.3, deg 4: size 31.0 (networkx) vs 31.2 (feed), SE 1.6, KS p 0.60, depth 6.75 vs 6.90 (KS p 0.75),
    P(>= 20) 0.325 vs 0.348, q90 113 vs 113; p 0.15, deg 6: 6.38 vs 6.57, SE 0.4, KS p 0.985, depth 2.40 vs 2.49."""
    g = nx.gnm_random_graph(300, edges, seed=7)
    rnd = random.Random(1)
    nodes = list(g.nodes())
    ref = np.array([ic_reference(g, rnd.choice(nodes), p, rnd) for _ in range(1500)])
    ours = feed_cascades(g, p, copies=300, runs=5)
    assert len(ours) == len(ref) == 1500
    for col in (0, 1):  # size, then depth (generations)
        a, b = ref[:, col], ours[:, col]
        assert stats.ks_2samp(a, b).pvalue > 0.01, col
        se = np.sqrt(a.var() / a.size + b.var() / b.size)
        assert abs(a.mean() - b.mean()) < 4 * se, (col, a.mean(), b.mean(), se)
    big_ref, big_ours = np.mean(ref[:, 0] >= 20), np.mean(ours[:, 0] >= 20)
    assert abs(big_ref - big_ours) < 4 * np.sqrt((big_ref * (1 - big_ref) + big_ours * (1 - big_ours)) / 1500) + 1e-9
    for q in (50, 90):
        a, b = np.percentile(ref[:, 0], q), np.percentile(ours[:, 0], q)
        assert abs(a - b) <= 0.15 * a + 1, (q, a, b)


def test_feed_cascade_extremes_are_exact() -> None:
    """p = 1: the story reaches the seed's whole component, each agent at its BFS distance; p = 0: only the seed."""
    g = nx.gnm_random_graph(200, 180, seed=3)
    for p in (1.0, 0.0):
        sc = FeedScenario(from_networkx(g), "recency", feed_size=50, topics=1, n_seeds=1, seed_authors=np.array([5]))
        env = SocietyEnv(sc, max_rounds=300)
        env.start(0)
        rng = np.random.default_rng(0)
        while env.agents:
            play_round(env, FeedRule(p), rng)
            if sc.counts["reposts"] == 0:
                break
        authors = sc.posts.author[: sc.posts.size]
        if p == 0:
            assert authors.tolist() == [5]
            continue
        dist = nx.single_source_shortest_path_length(g, 5)
        assert sorted(authors.tolist()) == sorted(dist)
        assert all(sc.posts.generation[k] == dist[int(a)] for k, a in enumerate(authors))


def homophily_run(recommender: str, seed: int) -> tuple[float, float, float]:
    """(modularity at the start, at the end, mean in-group exposure share) with topic-blind agents."""
    sc = FeedScenario(gnm(600, 6, np.random.default_rng(seed)), recommender, feed_size=10, topics=4, n_seeds=20)
    env = SocietyEnv(sc, 15)
    env.start(seed)
    rule = FeedRule(p_repost=0.02, p_like=0.2, p_follow=0.5, p_post=0.1, off_topic=1.0)
    rng = np.random.default_rng([seed, 1])
    q0, shares = sc.metrics()["modularity"], []
    while env.agents:
        play_round(env, rule, rng)
        shares.append(sc.metrics()["in_group_exposure"])
    return q0, sc.metrics()["modularity"], float(np.mean(shares))


def test_a_similarity_feed_builds_echo_chambers_a_random_feed_does_not() -> None:
    """600 agents in 4 interest groups, ER degree 6, 15 rounds; the agents ignore topics (off_topic = 1).

    Only the recommender's homophily can sort the follow graph. Measured (seeds 0-2):
    similarity: in-group exposure 0.50, follow-graph modularity by interest 0.004 -> 0.117;
    random: 0.25 (= 1/4 groups), modularity 0.004 -> 0.002."""
    sim = np.array([homophily_run("similarity", s) for s in range(3)])
    rnd = np.array([homophily_run("random", s) for s in range(3)])
    assert sim[:, 2].mean() > rnd[:, 2].mean() + 0.15
    assert abs(rnd[:, 2].mean() - 0.25) < 0.05
    assert np.all(sim[:, 1] > rnd[:, 1] + 0.05)
    assert np.all(sim[:, 1] > sim[:, 0] + 0.05) and np.all(np.abs(rnd[:, 1]) < 0.03)


@pytest.mark.parametrize("directed", [False, True])
def test_partition_modularity_matches_networkx(directed: bool) -> None:
    g = nx.gnp_random_graph(60, 0.08, seed=4, directed=directed)
    labels = np.random.default_rng(1).integers(0, 3, size=60)
    if directed:
        edges = np.array(list(g.edges()))
        order = np.lexsort((edges[:, 1], edges[:, 0]))
        src, dst = edges[order, 0], edges[order, 1]
        indptr = np.concatenate([[0], np.cumsum(np.bincount(src, minlength=60))])
        indices = dst
    else:
        csr = from_networkx(g)
        indptr, indices = csr.indptr, csr.indices
    ours = partition_modularity(indptr, indices, labels)
    ref = nx.community.modularity(g, [set(np.flatnonzero(labels == k).tolist()) for k in range(3)])
    assert ours == pytest.approx(ref, abs=1e-12)


def test_a_feed_seat_keeps_the_single_agent_contract() -> None:
    """One agent's seat (the rest played by the feed rule) passes the single-agent env checker."""
    from envs.contract import check_text_env
    from societies.gym_conversions import SocietyAgentEnv

    check_text_env(SocietyAgentEnv(scenario="feed", agents=30, rounds=8, agent=3, feed={"recommender": "similarity"}))


# ------------------------------------------------------------------------------------------- the runner
def test_the_runner_writes_a_feed_run(tmp_path: Path) -> None:
    c = validate_config(
        SocietyRunConfig,
        {"scenario": "feed", "agents": 80, "rounds": 6, "seed": 2, "out": str(tmp_path / "run"), "trajectory_agents": 20,
         "feed": {"recommender": "popularity", "p_like": 0.3, "p_follow": 0.5, "p_repost": 0.1}},
    )  # fmt: skip
    summary = run_society(c)
    out = Path(c.out)
    for name in ("events.sqlite", "metrics.json", "metrics.png", "network.png", "summary.json", TRAJECTORIES):
        assert (out / name).stat().st_size > 0, name
    metrics = json.loads((out / "metrics.json").read_text())
    for key in ("posts", "reposts", "likes", "follows", "cascade_size_max", "cascade_depth", "cascade_breadth",
                "cascade_size_mean", "in_group_exposure", "modularity"):  # fmt: skip
        assert len(metrics["series"][key]) == summary["rounds_played"] + 1 == 7
    with sqlite3.connect(out / "events.sqlite") as db:
        actions = {r[0] for r in db.execute("SELECT DISTINCT action FROM events")}
    assert {"repost", "like", "follow", "nothing"} <= actions <= {"post", "nothing", "repost", "like", "follow"}
    episodes = list(TrajectoryStore(out / TRAJECTORIES).read(strict=True))
    assert len(episodes) == 20 and all(e.env == "society-feed" for e in episodes)
    steps = [s for e in episodes for s in e.steps]
    assert all(s.observation and len(s.observation) <= OBS_CHARS for s in steps)
    assert {s.action.split("[")[0] for s in steps} <= {"post", "nothing", "repost", "like", "follow"}
    env, _ = build(c)
    assert env.scenario.personas and "interest" in env.scenario.personas[0].traits
