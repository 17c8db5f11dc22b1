"""Information diffusion on a social feed: agents post, repost, like, follow or do nothing, and a recommender picks each feed.

State, all numpy, so 100k agents over 10 rounds take seconds:

- the follow graph, directed: a sorted set of (follower, followee) keys (`PairSet`). It starts as
  the run's social graph in both directions and grows with `follow` moves;
- posts, as rows of a `PostTable`: author, round created, topic, root (the original post of its
  cascade), parent (the post reposted), generation (0 for an original), likes and direct reposts;
- each agent's interest: a topic id from its persona (`traits["interest"]`) or the seed. Its
  vector is the topic's vector, and a rule post carries its topic's vector, so similarity needs
  no text model. `embedder=hashing|minilm` embeds the topics and the texts agents write with
  `post[<text>]` (`agents.memory.embeddings`). Only those texts are ever embedded.

A round: the active agents (persona activity, as in the other scenarios) each get a feed of at
most `feed_size` posts from the recommender (`recommenders.py`: recency, popularity,
similarity, random, or a custom one by import path). Each then makes one move: `post` (a post on
its interest) or `post[<text>]`, `repost[<post id>]` or `like[<post id>]` for a post in its feed,
`follow[<agent id>]`, or `nothing`. Moves see the state at the round's start. New posts reach
feeds from the next round, and an agent's reward is the likes and reposts its posts received.
A story (a cascade) is shared at most once per agent, and a post is liked at most once.

Observations stay bounded and well-formed every round (the garbled output of camel-ai/oasis #94):
a feed holds at most `feed_size` (at most 50) posts, a post's text is cleaned of control
characters and newlines and clipped to fit, the whole observation stays under `OBS_CHARS`, and
whatever a recommender returns is checked (shape, ids, duplicates, own posts) before anyone sees it.

Known result (tests/societies/scenarios/test_feed.py): take `recency`, a large feed, the follow graph equal
to the social graph both ways, no posts after the seeds, no likes or follows, and repost
probability p per exposure (`rule.py`, `FeedRule`). Each cascade is then an independent
cascade. An agent sees a post once, in the round after it was made, because recency shows only
what is new since the agent's last visit. An agent shown k reposts of one story in a round
reposts it with probability 1 - (1 - p)^k. That is the k independent chances its k newly active
neighbours have in the IC model, and an agent in the story already is never asked again.
"""

from __future__ import annotations

import logging
from typing import Literal

import numpy as np

from societies.env import Moves
from societies.graphs import SocialGraph, from_edges
from societies.metrics import cascade_stats, partition_modularity
from societies.personas import Persona
from societies.scenarios.feed.recommender import Recommender, check_recommender, checked_feed, load_recommender
from societies.scenarios.feed.text import (
    FEED_MAX,
    FOLLOW,
    LIKE,
    POST,
    REPOST,
    TOPICS_MAX,
    FeedText,
    topic_table,
)

log = logging.getLogger(__name__)

TOPIC_DIM = 16  # topic vectors without a text embedder
EmbedderName = Literal["topics", "hashing", "minilm"]


class FeedScenario(FeedText):
    """A social feed with a pluggable recommender; each active agent makes one move per round."""

    name = "feed"
    state_name = "interest group (scaled to 0..1)"
    actions = ("post", "nothing")
    extra_moves = ("repost", "like", "follow")

    def __init__(
        self,
        graph: SocialGraph,
        recommender: Recommender | str = "recency",
        feed_size: int = 10,
        window: int = 3,
        topics: int = 5,
        n_seeds: int = 10,
        seed_authors: np.ndarray | None = None,
        interest: np.ndarray | None = None,
        personas: list[Persona] | None = None,
        activity: float | None = None,
        embedder: EmbedderName = "topics",
    ) -> None:
        super().__init__(graph.n, personas)
        if graph.complete:
            raise ValueError("the feed needs a sparse follow graph, not complete mixing; use graph.kind=erdos_renyi")
        if activity is not None:
            self.activity = np.full(self.n, float(activity))
        if not 1 <= feed_size <= FEED_MAX:
            raise ValueError(f"feed_size must be in 1..{FEED_MAX}, got {feed_size}")
        if window < 1:
            raise ValueError(f"window must be >= 1 round, got {window}")
        if not 1 <= topics <= TOPICS_MAX:
            raise ValueError(f"topics must be in 1..{TOPICS_MAX}, got {topics}")
        if not 0 <= n_seeds <= graph.n:
            raise ValueError(f"n_seeds must be in 0..{graph.n}, got {n_seeds}")
        self.graph = graph  # the social graph the follows start from (static: rebuilt from the config)
        self.recommender = (
            load_recommender(recommender) if isinstance(recommender, str) else check_recommender(recommender)
        )
        self.feed_size = feed_size
        self.window = window  # rounds a post stays a candidate
        self.n_topics = topics
        self.n_seeds = n_seeds
        self.seed_authors = None if seed_authors is None else np.unique(np.asarray(seed_authors, dtype=np.int64))
        self.embedder = embedder
        table = topic_table(topics)
        self.topic_names = [name for name, _ in table]
        self.topic_vecs = self._topic_vectors([f"{name}: {about}" for name, about in table])
        self.topic_sim = (self.topic_vecs @ self.topic_vecs.T).astype(np.float64)
        self.fixed_interest = self._given_interest(interest)
        self._empty()

    # -- construction -------------------------------------------------------------------------
    def _topic_vectors(self, phrases: list[str]) -> np.ndarray:
        """Unit topic vectors: random in TOPIC_DIM dims (fixed seed), or the embedder's vectors of the topics."""
        if self.embedder == "topics":
            v = np.random.default_rng([0xFEED, len(phrases)]).standard_normal((len(phrases), TOPIC_DIM))
            return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)
        from agents.memory.embeddings import get_embedder

        return np.asarray(get_embedder(self.embedder).embed(phrases), dtype=np.float32)

    def _given_interest(self, interest: np.ndarray | None) -> np.ndarray | None:
        """Interests from the argument, else from every persona's `traits["interest"]` (name or id), else None."""
        if interest is not None:
            out = np.asarray(interest, dtype=np.int64)
            if out.shape != (self.n,) or out.min(initial=0) < 0 or out.max(initial=0) >= self.n_topics:
                raise ValueError(f"interest must be {self.n} topic ids in 0..{self.n_topics - 1}")
            return out
        if not self.personas or not all("interest" in p.traits for p in self.personas):
            return None
        ids = []
        for p in self.personas:
            t = p.traits["interest"]
            if isinstance(t, str):
                if t not in self.topic_names:
                    raise ValueError(f"{p.name}'s interest {t!r} is not a topic: {', '.join(self.topic_names)}")
                ids.append(self.topic_names.index(t))
            else:
                ids.append(int(t) % self.n_topics)
        return np.array(ids, dtype=np.int64)

    def reset(self, rng: np.random.Generator) -> None:
        self._empty()
        if self.fixed_interest is None:
            self.interest = rng.integers(0, self.n_topics, size=self.n).astype(np.int64)
        if self.seed_authors is not None:
            authors = self.seed_authors
        else:
            authors = np.sort(rng.choice(self.n, self.n_seeds, replace=False)).astype(np.int64)
        if authors.size:
            ids = self.posts.add(
                authors, 0, self.interest[authors], np.full(authors.size, -1), np.full(authors.size, -1)
            )
            self.joined.add(authors, ids)
        self.counts["posts"] = int(authors.size)

    # -- rounds --------------------------------------------------------------------------------
    def begin_round(self, rng: np.random.Generator) -> None:
        prev = self.active
        super().begin_round(rng)
        self.row_of[prev] = -1
        idx = self.active
        m = idx.size
        raw = self.recommender.recommend(self, idx, self.feed_size, rng) if m else np.empty((0, 0), np.int64)
        self.feed = checked_feed(raw, idx, self.feed_size, self.posts, self.recommender)
        self.row_of[idx] = np.arange(m)
        self._flat = None
        pos, post = self._flat = self.exposures_of(idx)
        self.exposures = int(post.size)
        self.in_group = int((self.posts.topic[post] == self.interest[idx[pos]]).sum())
        self.last_seen[idx] = self.round

    def exposures_of(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """This round's exposures of agents `idx` as flat pairs (position in idx, post), each row in feed order."""
        if idx is self.active and self._flat is not None:  # the whole round's, computed once in begin_round
            return self._flat
        rows = self.row_of[idx]
        has = np.flatnonzero(rows >= 0)
        if has.size == 0 or self.feed.shape[1] == 0:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        sub = self.feed[rows[has]]
        r, c = np.nonzero(sub >= 0)
        return has[r], sub[r, c]

    def apply(self, moves: Moves, rng: np.random.Generator) -> np.ndarray:
        """One round's moves on the state at the round's start; invalid ones are dropped (the text path refuses them)."""
        order = np.argsort(moves.idx, kind="stable")  # new post ids follow agent order: text and array paths agree
        idx, code = moves.idx[order].astype(np.int64), moves.code[order]
        val = moves.values()[order]
        arg = np.where(np.isfinite(val) & (np.abs(val) < 2**53), val, -1).astype(np.int64)
        rewards = np.zeros(self.n)
        rep, lik, fol = code == REPOST, code == LIKE, code == FOLLOW
        rep[rep] = self.can_repost(idx[rep], arg[rep])
        lik[lik] = self.can_like(idx[lik], arg[lik])
        fol[fol] = self.can_follow(idx[fol], arg[fol])
        pst = (code == POST) & (arg < len(self.texts))
        dropped = int(np.isin(code, (REPOST, LIKE, FOLLOW, POST)).sum()) - int((rep | lik | fol | pst).sum())
        if dropped:
            log.warning("feed: %d invalid moves dropped (round %d)", dropped, self.round)
        # likes
        a, x = idx[lik], arg[lik]
        np.add.at(self.posts.likes, x, 1)
        np.add.at(rewards, self.posts.author[x], 1.0)
        self.liked.add(a, x)
        self.last_liked[a] = x
        # posts and reposts, one new row each, in agent order
        new = rep | pst
        a, x = idx[new], arg[new]
        is_rep = rep[new]
        parent = np.where(is_rep, x, -1)
        text = np.where(is_rep, self.posts.text[np.maximum(x, 0)], np.maximum(x, -1))
        topic = np.where(is_rep, self.posts.topic[np.maximum(x, 0)], self._topics_of(a, text))
        ids = self.posts.add(a, self.round + 1, topic, parent, text)
        self.joined.add(a, self.posts.root[ids])
        par = x[is_rep]
        np.add.at(self.posts.reposts, par, 1)
        np.add.at(rewards, self.posts.author[par], 1.0)
        # follows
        a, t = idx[fol], arg[fol]
        if a.size:
            self.follows.add(a, t)
            self.followers.add(t, a)
            np.add.at(self.n_followers, t, 1)
            self._csr = self._rcsr = None
        self.engagement += rewards
        self.counts = {"posts": int((~is_rep).sum()), "reposts": int(is_rep.sum()), "likes": int(lik.sum()),
                       "follows": int(fol.sum())}  # fmt: skip
        return rewards

    def _topics_of(self, authors: np.ndarray, text: np.ndarray) -> np.ndarray:
        """An original post's topic: its text's nearest topic with an embedder, else the author's interest."""
        topic = self.interest[authors].copy()
        has = text >= 0
        if self.embedder != "topics" and has.any():
            self._embed_texts()
            topic[has] = self.text_topic[text[has]]
        return topic

    def _embed_texts(self) -> None:
        """Embed the texts written since the last call (only LLM-written posts ever get here)."""
        done = self.text_vecs.shape[0]
        if done == len(self.texts):
            return
        from agents.memory.embeddings import get_embedder

        vecs = np.asarray(get_embedder(self.embedder).embed(self.texts[done:]), dtype=np.float32)
        self.text_vecs = np.concatenate([self.text_vecs, vecs])
        self.text_topic = np.concatenate([self.text_topic, np.argmax(vecs @ self.topic_vecs.T, axis=1)])

    # -- measurement ---------------------------------------------------------------------------
    def cascade_sizes(self) -> tuple[np.ndarray, np.ndarray]:
        """(original post ids, their cascade sizes: the original plus every repost of its story)."""
        P = self.posts.size
        roots = self.posts.root[:P]
        orig = np.flatnonzero(self.posts.parent[:P] < 0)
        return orig, np.bincount(roots, minlength=P)[orig]

    def metrics(self) -> dict[str, float]:
        orig, sizes = self.cascade_sizes()
        stats = {"size": 0.0, "depth": 0.0, "breadth": 0.0}
        if orig.size:
            big = orig[int(np.argmax(sizes))]
            P = self.posts.size
            stats = cascade_stats(self.posts.generation[:P][self.posts.root[:P] == big])
        indptr, followees = self.following()
        same = self.interest[self.follows.firsts()] == self.interest[followees]
        return {
            **{k: float(v) for k, v in self.counts.items()},
            "cascade_size_max": stats["size"],
            "cascade_depth": stats["depth"],
            "cascade_breadth": stats["breadth"],
            "cascade_size_mean": float(sizes.mean()) if sizes.size else 0.0,
            "exposures": float(self.exposures),
            "in_group_exposure": self.in_group / self.exposures if self.exposures else float("nan"),
            "in_group_follows": float(same.mean()) if same.size else float("nan"),
            "modularity": partition_modularity(indptr, followees, self.interest),
        }

    def node_state(self) -> np.ndarray:
        """Each agent's interest group scaled to [0, 1] (network.png colours the groups)."""
        return self.interest / max(self.n_topics - 1, 1)

    def network(self) -> SocialGraph:
        """The follow graph, undirected, for plots."""
        return from_edges(self.n, self.follows.firsts(), self.follows.seconds())

    def agent_outcome(self, i: int) -> tuple[float, bool]:
        """(likes and reposts received, whether any were)."""
        return float(self.engagement[i]), bool(self.engagement[i] > 0)
