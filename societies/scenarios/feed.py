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
most `feed_size` posts from the recommender (`societies.recommenders`: recency, popularity,
similarity, random, or a custom one by import path). Each then makes one move: `post` (a post on
its interest) or `post[<text>]`, `repost[<post id>]` or `like[<post id>]` for a post in its feed,
`follow[<agent id>]`, or `nothing`. Moves see the state at the round's start. New posts reach
feeds from the next round, and an agent's reward is the likes and reposts its posts received.
A story (a cascade) is shared at most once per agent, and a post is liked at most once.

Observations stay bounded and well-formed every round (the garbled output of camel-ai/oasis #94):
a feed holds at most `feed_size` (at most 50) posts, a post's text is cleaned of control
characters and newlines and clipped to fit, the whole observation stays under `OBS_CHARS`, and
whatever a recommender returns is checked (shape, ids, duplicates, own posts) before anyone sees it.

Known result (tests/societies/test_feed.py): take `recency`, a large feed, the follow graph equal
to the social graph both ways, no posts after the seeds, no likes or follows, and repost
probability p per exposure (`societies.rules.FeedRule`). Each cascade is then an independent
cascade. An agent sees a post once, in the round after it was made, because recency shows only
what is new since the agent's last visit. An agent shown k reposts of one story in a round
reposts it with probability 1 - (1 - p)^k. That is the k independent chances its k newly active
neighbours have in the IC model, and an agent in the story already is never asked again.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Literal

import numpy as np

from envs.contract import excerpt
from societies.config import FeedParams
from societies.env import OBS_CHARS, WAIT, Moves, Scenario, agent_id
from societies.graphs import SocialGraph, build_graph, from_edges
from societies.metrics import cascade_stats, partition_modularity
from societies.personas import Persona
from societies.recommenders import Recommender, check_recommender, load_recommender
from societies.scenarios import register_scenario

if TYPE_CHECKING:
    from societies.config import SocietyRunConfig
    from societies.env import SocietyEnv
    from societies.rules import Rule


log = logging.getLogger(__name__)

POST, NOTHING, REPOST, LIKE, FOLLOW = 1, 2, 3, 4, 5
FEED_MAX = 50  # the largest feed: its text must fit in one observation
POST_CHARS = 280  # the longest post[<text>]
TOPIC_DIM = 16  # topic vectors without a text embedder
SHIFT = 32  # PairSet keys: a << 32 | b
MASK = (1 << SHIFT) - 1
EmbedderName = Literal["topics", "hashing", "minilm"]

TOPICS = (
    ("football", "football matches, players and the league table"),
    ("cooking", "recipes, cooking at home and restaurants"),
    ("climate", "climate change, heat waves and clean energy"),
    ("technology", "new phones, software and artificial intelligence"),
    ("music", "concerts, new albums and musicians"),
    ("gardening", "plants, vegetables and gardens"),
    ("film", "cinema, new films and series"),
    ("travel", "trips, trains, flights and holidays"),
    ("science", "space, physics and medical research"),
    ("local news", "the town council, roads and schools"),
    ("books", "novels, authors and reading"),
    ("fitness", "running, the gym and healthy habits"),
)
TOPICS_MAX = 64
_MOVE = re.compile(r"^(post|repost|like|follow)\[(.*)\]$", re.DOTALL)
_POST_ID = re.compile(r"^#?\s*(\d{1,12})$")
_AGENT = re.compile(r"^@?(?:agent_)?(\d{1,12})$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def topic_table(k: int) -> list[tuple[str, str]]:
    """k topics as (name, description); past the named ones they are numbered."""
    return [TOPICS[t] if t < len(TOPICS) else (f"topic {t}", f"topic number {t}") for t in range(k)]


def clean_text(text: str, limit: int = POST_CHARS) -> str:
    """A post's text on one line: control characters and runs of whitespace become one space; at most `limit` chars."""
    text = " ".join(_CONTROL.sub(" ", text).split())
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


class PairSet:
    """A growing set of (a, b) pairs of non-negative ints, as sorted int64 keys `a << 32 | b`.

    Membership is one vectorised binary search, so a round's checks (has agent i liked post x?
    does i follow j?) cost a few array operations, and adding a round's pairs costs one merge."""

    def __init__(self, keys: np.ndarray | None = None) -> None:
        k = np.empty(0, np.int64) if keys is None else np.asarray(keys, dtype=np.int64).ravel()
        self.keys = k if k.size < 2 or bool(np.all(k[1:] > k[:-1])) else np.unique(k)  # CSR keys come sorted

    @staticmethod
    def key(a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
        """The keys of pairs (a, b), broadcast; a pair with a negative id gets a negative key, never in a set."""
        return (np.asarray(a, dtype=np.int64) << SHIFT) | np.asarray(b, dtype=np.int64)

    def _has(self, k: np.ndarray) -> np.ndarray:
        if self.keys.size == 0:
            return np.zeros(k.shape, dtype=bool)
        pos = np.minimum(np.searchsorted(self.keys, k), self.keys.size - 1)
        return self.keys[pos] == k

    def contains(self, a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
        """Elementwise (a, b) in the set, broadcast; negative ids (padding) are never in it."""
        return self._has(self.key(a, b))

    def add(self, a: np.ndarray, b: np.ndarray) -> int:
        """Add the pairs; returns how many were new."""
        k = np.unique(self.key(a, b).ravel())
        k = k[~self._has(k)]
        if k.size:
            self.keys = np.insert(self.keys, np.searchsorted(self.keys, k), k)
        return int(k.size)

    def firsts(self) -> np.ndarray:
        return self.keys >> SHIFT

    def seconds(self) -> np.ndarray:
        return self.keys & MASK

    def __len__(self) -> int:
        return int(self.keys.size)


class PostTable:
    """Posts as columns (row = post id), grown by doubling: a round's new posts cost O(new), not O(all)."""

    def __init__(self, capacity: int = 1024) -> None:
        self.size = 0
        self.author = np.zeros(capacity, np.int64)
        self.created = np.zeros(capacity, np.int32)  # the round the post first appears in feeds
        self.topic = np.zeros(capacity, np.int32)
        self.root = np.zeros(capacity, np.int64)  # the original post of its cascade (itself for an original)
        self.parent = np.zeros(capacity, np.int64)  # the post reposted; -1 for an original
        self.generation = np.zeros(capacity, np.int32)  # 0 for an original, parent's + 1 for a repost
        self.likes = np.zeros(capacity, np.int32)
        self.reposts = np.zeros(capacity, np.int32)  # direct reposts of this post
        self.text = np.zeros(capacity, np.int64)  # index into the scenario's texts; -1 = a rule post on its topic

    COLUMNS = ("author", "created", "topic", "root", "parent", "generation", "likes", "reposts", "text")

    def add(
        self,
        author: np.ndarray,
        created: int,
        topic: np.ndarray,
        parent: np.ndarray,
        text: np.ndarray,
    ) -> np.ndarray:
        """Append posts (parent -1 = an original); returns their ids."""
        k = int(author.size)
        need = self.size + k
        cap = self.author.size
        if need > cap:
            new_cap = max(need, 2 * cap)
            for name in self.COLUMNS:
                old = getattr(self, name)
                grown = np.zeros(new_cap, old.dtype)
                grown[: self.size] = old[: self.size]
                setattr(self, name, grown)
        ids = np.arange(self.size, need, dtype=np.int64)
        orig = parent < 0
        par = np.maximum(parent, 0)
        self.author[ids] = author
        self.created[ids] = created
        self.topic[ids] = topic
        self.parent[ids] = parent
        self.root[ids] = np.where(orig, ids, self.root[par])
        self.generation[ids] = np.where(orig, 0, self.generation[par] + 1)
        self.likes[ids] = 0
        self.reposts[ids] = 0
        self.text[ids] = text
        self.size = need
        return ids


class FeedScenario(Scenario):
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

    def _empty(self) -> None:
        g = self.graph
        src = np.repeat(np.arange(self.n, dtype=np.int64), np.diff(g.indptr))
        self.follows = PairSet(PairSet.key(src, g.indices))  # (follower, followee)
        # (followee, follower): how posts reach followers. A SocialGraph stores each edge both ways, so at
        # the start this is the same set of keys
        self.followers = PairSet(self.follows.keys.copy())
        self.n_followers = np.diff(g.indptr).astype(np.int64)
        self.interest = np.zeros(self.n, np.int64) if self.fixed_interest is None else self.fixed_interest.copy()
        self.posts = PostTable(max(1024, 2 * self.n_seeds))
        self.liked = PairSet()  # (agent, post)
        self.joined = PairSet()  # (agent, root): the agent posted or shared that story
        self.last_liked = np.full(self.n, -1, np.int64)
        self.last_seen = np.full(self.n, -1, np.int64)  # the last round the agent got a feed
        self.engagement = np.zeros(self.n)  # likes + reposts received, over the run
        self.texts: list[str] = []  # texts agents wrote with post[<text>]
        self.text_ids: dict[str, int] = {}
        self.text_vecs = np.zeros((0, self.topic_vecs.shape[1]), np.float32)  # embedder != topics only
        self.text_topic = np.zeros(0, np.int64)
        self.feed = np.empty((0, 0), np.int64)  # this round's feeds, one row per active agent
        self.row_of = np.full(self.n, -1, np.int64)  # agent -> its row in `feed`
        self.counts = {"posts": 0, "reposts": 0, "likes": 0, "follows": 0}
        self.exposures = 0
        self.in_group = 0
        self._csr: tuple[np.ndarray, np.ndarray] | None = None
        self._rcsr: tuple[np.ndarray, np.ndarray] | None = None
        self._flat: tuple[np.ndarray, np.ndarray] | None = None  # this round's exposures of all active agents
        self._by_author: tuple[int, int, np.ndarray, np.ndarray] | None = None

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

    # -- queries for recommenders (vectorised) -------------------------------------------------
    def window_range(self) -> tuple[int, int]:
        """Post ids [lo, hi) made in the last `window` rounds (posts are stored in the order they appear)."""
        hi = self.posts.size
        lo = int(np.searchsorted(self.posts.created[:hi], self.round - self.window + 1, side="left"))
        return lo, hi

    def following(self) -> tuple[np.ndarray, np.ndarray]:
        """The follow graph as CSR (indptr, followees), rebuilt only after follows change."""
        if self._csr is None:
            self._csr = _csr(self.follows, self.n)
        return self._csr

    def followed_by(self) -> tuple[np.ndarray, np.ndarray]:
        """The reverse follow graph as CSR (indptr, followers)."""
        if self._rcsr is None:
            self._rcsr = _csr(self.followers, self.n)
        return self._rcsr

    def _window_by_author(self) -> tuple[int, np.ndarray, np.ndarray]:
        lo, hi = self.window_range()
        if self._by_author is None or self._by_author[:2] != (lo, hi):
            auth = self.posts.author[lo:hi]
            order = np.argsort(auth, kind="stable")
            ptr = np.zeros(self.n + 1, np.int64)
            np.cumsum(np.bincount(auth, minlength=self.n), out=ptr[1:])
            self._by_author = (lo, hi, ptr, lo + order)
        _, _, ptr, posts = self._by_author
        return lo, ptr, posts

    def in_network(self, idx: np.ndarray, since: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(row, post) pairs, in no set order: the window's posts by accounts agents `idx` follow; `row` indexes `idx`.

        `since[row]`: keep only posts created in that round or later. Walks from the agents to their
        followees' posts, or from the posts to their authors' followers, whichever meets fewer pairs
        (a recency round with few new posts costs those posts' followers, not every agent's follows)."""
        idx = np.asarray(idx, np.int64)
        lo, hi = self.window_range()
        if since is not None and idx.size:
            lo = max(lo, int(np.searchsorted(self.posts.created[:hi], int(np.min(since)), side="left")))
        indptr, followees = self.following()
        from_agents = int((indptr[idx + 1] - indptr[idx]).sum())
        from_posts = int(self.n_followers[self.posts.author[lo:hi]].sum())
        if from_posts < from_agents:
            rptr, fol = self.followed_by()
            r1, agents = csr_gather(rptr, fol, self.posts.author[lo:hi])
            row_of = np.full(self.n, -1, np.int64)
            row_of[idx] = np.arange(idx.size)
            rows, posts = row_of[agents], lo + r1
            keep = rows >= 0
            rows, posts = rows[keep], posts[keep]
        else:
            r1, authors = csr_gather(indptr, followees, idx)
            _, ptr, by_author = self._window_by_author()
            r2, posts = csr_gather(ptr, by_author, authors)
            rows = r1[r2]
        if since is not None:
            keep = self.posts.created[posts] >= np.asarray(since)[rows]
            rows, posts = rows[keep], posts[keep]
        return rows, posts

    def engaged(self, agents: np.ndarray, posts: np.ndarray) -> np.ndarray:
        """Per pair: the agent already liked the post, or already posted or shared its story."""
        return self.liked.contains(agents, posts) | self.joined.contains(agents, self.posts.root[posts])

    def popularity(self, posts: np.ndarray) -> np.ndarray:
        """Likes plus direct reposts per post."""
        return self.posts.likes[posts].astype(np.float64) + self.posts.reposts[posts]

    def post_vectors(self, posts: np.ndarray) -> np.ndarray:
        """Each post's unit vector: its text's embedding when it has one, else its topic's vector."""
        out = self.topic_vecs[self.posts.topic[posts]]
        t = self.posts.text[posts]
        has = t >= 0
        if self.text_vecs.shape[0] and has.any():
            out = out.copy()
            out[has] = self.text_vecs[t[has]]
        return out

    def interest_vectors(self, agents: np.ndarray) -> np.ndarray:
        return self.topic_vecs[self.interest[agents]]

    def similarity(self, agents: np.ndarray, posts: np.ndarray) -> np.ndarray:
        """Cosine of each agent's interest and each post, per pair: a topic-by-topic lookup unless the post has its own text vector."""
        s = self.topic_sim[self.interest[agents], self.posts.topic[posts]]
        t = self.posts.text[posts]
        has = t >= 0
        if self.text_vecs.shape[0] and has.any():
            s[has] = np.einsum("ij,ij->i", self.interest_vectors(agents[has]), self.text_vecs[t[has]])
        return s

    # -- rounds --------------------------------------------------------------------------------
    def begin_round(self, rng: np.random.Generator) -> None:
        prev = self.active
        super().begin_round(rng)
        self.row_of[prev] = -1
        idx = self.active
        m = idx.size
        raw = self.recommender.recommend(self, idx, self.feed_size, rng) if m else np.empty((0, 0), np.int64)
        self.feed = self._checked(raw, idx)
        self.row_of[idx] = np.arange(m)
        self._flat = None
        pos, post = self._flat = self.exposures_of(idx)
        self.exposures = int(post.size)
        self.in_group = int((self.posts.topic[post] == self.interest[idx[pos]]).sum())
        self.last_seen[idx] = self.round

    def _checked(self, raw: object, idx: np.ndarray) -> np.ndarray:
        """A recommender's answer made safe: shape checked; ids that are not posts, own posts and repeats dropped."""
        name = getattr(self.recommender, "name", type(self.recommender).__name__)
        m, k = idx.size, self.feed_size
        f = np.asarray(raw)
        if f.ndim != 2 or f.shape[0] != m:
            raise ValueError(
                f"recommender {name!r} returned shape {f.shape} for {m} agents; "
                f"expected ({m}, <= {k}) post ids padded with -1"
            )
        if f.dtype.kind == "f":
            f = np.where(np.isfinite(f), f, -1)
            if np.any(f != np.round(f)):
                raise ValueError(f"recommender {name!r} returned non-integer post ids")
        elif f.dtype.kind not in "iu":
            raise ValueError(f"recommender {name!r} returned {f.dtype} values; expected integer post ids")
        f = f[:, :k].astype(np.int64)
        valid = (f >= 0) & (f < self.posts.size)
        bad = int((~valid & (f != -1)).sum())
        if bad:
            log.warning("recommender %r returned %d ids that are not posts; dropped", name, bad)
        valid &= self.posts.author[np.where(valid, f, 0)] != idx[:, None]  # never one's own post
        f[~valid] = -1
        multi = np.flatnonzero((f >= 0).sum(axis=1) > 1) if f.shape[1] > 1 else np.empty(0, np.int64)
        if multi.size:  # repeats need two posts in a row: only those rows are sorted
            sub = f[multi]
            order = np.argsort(sub, axis=1, kind="stable")
            s = np.take_along_axis(sub, order, axis=1)
            again = (s[:, 1:] == s[:, :-1]) & (s[:, 1:] >= 0)
            if again.any():  # a repeat within a row: the first one stays
                mark = np.zeros(sub.shape, dtype=bool)
                np.put_along_axis(mark, order[:, 1:], again, axis=1)
                sub[mark] = -1
                f[multi] = sub
        if f.shape[1] > 1 and ((f[:, 1:] >= 0) & (f[:, :-1] < 0)).any():  # gaps: posts first, in the given order
            f = np.take_along_axis(f, np.argsort(f < 0, axis=1, kind="stable"), axis=1)
        width = int((f >= 0).sum(axis=1).max()) if m else 0
        return np.ascontiguousarray(f[:, :width])

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

    def _feed_of(self, i: int) -> np.ndarray:
        r = int(self.row_of[i])
        if r < 0:
            return np.empty(0, np.int64)
        row = self.feed[r]
        return row[row >= 0]

    def _in_feed(self, agents: np.ndarray, posts: np.ndarray) -> np.ndarray:
        rows = self.row_of[agents]
        if self.feed.shape[0] == 0 or self.feed.shape[1] == 0:
            return np.zeros(agents.size, dtype=bool)
        return (rows >= 0) & (self.feed[np.maximum(rows, 0)] == posts[:, None]).any(axis=1)

    def can_repost(self, agents: np.ndarray, posts: np.ndarray) -> np.ndarray:
        """The post is in the agent's feed and the agent has not posted or shared its story."""
        ok = (posts >= 0) & (posts < self.posts.size)
        p = np.where(ok, posts, 0)
        return ok & self._in_feed(agents, p) & ~self.joined.contains(agents, self.posts.root[p])

    def can_like(self, agents: np.ndarray, posts: np.ndarray) -> np.ndarray:
        """The post is in the agent's feed and the agent has not liked it yet."""
        ok = (posts >= 0) & (posts < self.posts.size)
        p = np.where(ok, posts, 0)
        return ok & self._in_feed(agents, p) & ~self.liked.contains(agents, p)

    def can_follow(self, agents: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """The target is another agent the agent does not follow yet."""
        ok = (targets >= 0) & (targets < self.n) & (targets != agents)
        return ok & ~self.follows.contains(agents, np.where(ok, targets, 0))

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

    # -- text ----------------------------------------------------------------------------------
    def instruction(self, i: int) -> str:
        topic = self.topic_names[self.interest[i]]
        return (
            f"{self.persona(i)} You use a social network where people post about "
            f"{', '.join(self.topic_names)}. You care most about {topic}. Each round you see a feed of up to "
            f"{self.feed_size} posts chosen by a {self.recommender.name} recommender and make one move: "
            f"'post' (a post about {topic}), post[<your text>] (at most {POST_CHARS} characters), "
            "repost[<post id>] or like[<post id>] for a post in your feed, follow[<agent id>] to see "
            "someone's posts, or 'nothing'. You gain a point whenever someone likes or reposts one of your posts."
        )

    def observe(self, i: int) -> str:
        indptr, _ = self.following()
        head = (
            f"Round {self.round}. You follow {int(indptr[i + 1] - indptr[i])} accounts and "
            f"{int(self.n_followers[i])} follow you; your posts got {int(self.engagement[i])} likes and reposts."
        )
        if not self.is_active[i]:
            return head + f" You are offline this round; reply '{WAIT}'."
        feed = self._feed_of(i)
        if feed.size == 0:
            return head + " Your feed is empty."
        clip = max(40, min(POST_CHARS, (OBS_CHARS - 400) // feed.size - 120))
        lines = [head, f"Your feed ({feed.size} posts):"]
        lines += [self._post_line(i, int(x), clip) for x in feed]
        text = "\n".join(lines)
        return text if len(text) <= OBS_CHARS else text[: OBS_CHARS - 1] + "…"

    def post_text(self, x: int) -> str:
        """A post's text: what its story's author wrote, or a line on its topic for a rule post."""
        t = int(self.posts.text[x])
        if t >= 0:
            return self.texts[t]
        root = int(self.posts.root[x])
        return f"Thoughts on {self.topic_names[self.posts.topic[x]]} (story #{root})."

    def _post_line(self, i: int, x: int, clip: int) -> str:
        p = self.posts
        line = f"- #{x} by {agent_id(int(p.author[x]))}"
        if p.parent[x] >= 0:
            root = int(p.root[x])
            line += f", reposting #{root} by {agent_id(int(p.author[root]))}"
        line += f" [{self.topic_names[p.topic[x]]}; {int(p.likes[x])} likes, {int(p.reposts[x])} reposts]"
        if self.joined.contains(i, p.root[x]):
            line += " (you shared this story)"
        if self.liked.contains(i, x):
            line += " (you liked it)"
        body = clean_text(self.post_text(x), clip).replace('"', "'")
        return f'{line}: "{body}"'

    def available(self, i: int) -> list[str]:
        if not self.is_active[i]:
            return [WAIT]
        feed = self._feed_of(i)
        me = np.full(feed.size, i, np.int64)
        out = list(self.actions)
        out += [f"repost[{int(x)}]" for x in feed[self.can_repost(me, feed)]]
        out += [f"like[{int(x)}]" for x in feed[self.can_like(me, feed)]]
        authors = list(dict.fromkeys(self.posts.author[feed].tolist()))
        a = np.array(authors, np.int64)
        ok = self.can_follow(np.full(a.size, i, np.int64), a) if a.size else np.zeros(0, bool)
        out += [f"follow[{agent_id(int(j))}]" for j in a[ok]]
        return out

    def templates(self, i: int) -> list[str]:
        return ["post[...]", "repost[...]", "like[...]", "follow[...]"] if self.is_active[i] else []

    def parse(self, i: int, text: str) -> tuple[int, float] | str:
        act = text.strip()
        m = _MOVE.match(act)
        if m is None or not self.is_active[i]:
            return super().parse(i, text)
        kind, arg = m.group(1), m.group(2).strip()
        if kind == "post":
            if len(arg) > POST_CHARS:
                return f"a post has at most {POST_CHARS} characters, got {len(arg):,}"
            body = clean_text(arg)
            if not body:
                return "post[...] needs text; or write 'post' for a post about your interest"
            return POST, float(self._draft(body))
        if kind == "follow":
            ma = _AGENT.match(arg)
            if ma is None:
                return f"{excerpt(arg)} is not an agent id; write e.g. follow[agent_3]"
            j = int(ma.group(1))
            if j >= self.n:
                return f"there is no agent_{j} (agents are agent_0 to agent_{self.n - 1})"
            if j == i:
                return "you cannot follow yourself"
            if self.follows.contains(i, j):
                return f"you already follow agent_{j}"
            return FOLLOW, float(j)
        mp = _POST_ID.match(arg)
        if mp is None:
            return f"{excerpt(arg)} is not a post id; write e.g. {kind}[12] for post #12 of your feed"
        x = int(mp.group(1))
        feed = self._feed_of(i)
        if x >= self.posts.size:
            return f"there is no post #{x}"
        if x not in feed:
            shown = ", ".join(f"#{int(p)}" for p in feed[:10]) + (" …" if feed.size > 10 else "")
            return f"post #{x} is not in your feed" + (
                f" (your feed: {shown})" if feed.size else " (your feed is empty)"
            )
        if kind == "repost" and self.joined.contains(i, self.posts.root[x]):
            return f"you already posted or shared this story (#{int(self.posts.root[x])})"
        if kind == "like" and self.liked.contains(i, x):
            return f"you already liked post #{x}"
        return (REPOST if kind == "repost" else LIKE), float(x)

    def _draft(self, body: str) -> int:
        """The id of a text an agent wrote (the same text is stored once)."""
        t = self.text_ids.get(body)
        if t is None:
            t = self.text_ids[body] = len(self.texts)
            self.texts.append(body)
        return t

    def move_text(self, i: int, code: int, value: float) -> str:
        if code == POST:
            return "post" if not np.isfinite(value) or value < 0 else f"post[{self.texts[int(value)]}]"
        if code == NOTHING:
            return "nothing"
        if code == REPOST:
            return f"repost[{int(value)}]"
        if code == LIKE:
            return f"like[{int(value)}]"
        if code == FOLLOW:
            return f"follow[{agent_id(int(value))}]"
        return WAIT

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


def csr_gather(indptr: np.ndarray, indices: np.ndarray, sel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All (position in sel, neighbour) pairs of CSR rows `sel`, vectorised."""
    starts = indptr[sel]
    lens = indptr[sel + 1] - starts
    total = int(lens.sum())
    if total == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    pos = np.repeat(np.arange(sel.size, dtype=np.int64), lens)
    offsets = np.arange(total) - np.repeat(np.cumsum(lens) - lens, lens)
    return pos, np.asarray(indices[starts[pos] + offsets], dtype=np.int64)


def _csr(pairs: PairSet, n: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR (indptr, second ids) of a pair set over first ids 0..n-1 (its keys are sorted, so rows come in order)."""
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(pairs.firsts(), minlength=n), out=indptr[1:])
    return indptr, pairs.seconds()


@register_scenario("feed", params=FeedParams)
def build_feed(cfg: SocietyRunConfig, params: FeedParams, personas: list[Persona] | None) -> tuple[SocietyEnv, Rule]:
    """The feed: follows start as the social graph; interests are a seeded draw, kept in the personas' traits."""
    from societies.env import SocietyEnv
    from societies.rules import FeedRule

    f = params
    graph = build_graph(cfg.graph, cfg.agents, cfg.seed, default="erdos_renyi")
    interest = np.random.default_rng([cfg.seed, 0xFE]).integers(0, f.topics, size=graph.n)
    if personas is not None and len(personas) == graph.n:
        names = [name for name, _ in topic_table(f.topics)]
        personas = [
            p.model_copy(update={"traits": {**p.traits, "interest": names[t]}})
            for p, t in zip(personas, interest.tolist())
        ]
    else:
        personas = None
    sc = FeedScenario(
        graph,
        recommender=f.recommender,
        feed_size=f.feed_size,
        window=f.window,
        topics=f.topics,
        n_seeds=min(f.seeds, graph.n),
        interest=interest,
        personas=personas,
        activity=cfg.activity,
        embedder=f.embedder,
    )
    return SocietyEnv(sc, cfg.rounds), FeedRule(f.p_repost, f.p_like, f.p_follow, f.p_post, f.off_topic)
