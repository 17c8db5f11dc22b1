"""The feed's state and the vectorised queries on it: what recommenders read, and whether a move is valid.

`FeedQueries` is the part of `FeedScenario` a recommender sees (`recommender.py` types against it, so
the recommenders never import the scenario); the scenario adds the rounds, the text and the metrics.
"""

from __future__ import annotations

import numpy as np

from societies.env import Scenario
from societies.graphs import SocialGraph
from societies.scenarios.feed.state import PairSet, PostTable, csr_gather, pairs_csr


class FeedQueries(Scenario):
    """The follow graph, the posts and who engaged with what, with the queries recommenders use."""

    graph: SocialGraph  # the social graph the follows start from (static: rebuilt from the config)
    feed_size: int
    window: int  # rounds a post stays a candidate
    n_topics: int
    n_seeds: int
    topic_names: list[str]
    topic_vecs: np.ndarray  # (topics, dim) unit vectors
    topic_sim: np.ndarray  # (topics, topics) cosines
    fixed_interest: np.ndarray | None

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

    # -- queries for recommenders (vectorised) -------------------------------------------------
    def window_range(self) -> tuple[int, int]:
        """Post ids [lo, hi) made in the last `window` rounds (posts are stored in the order they appear)."""
        hi = self.posts.size
        lo = int(np.searchsorted(self.posts.created[:hi], self.round - self.window + 1, side="left"))
        return lo, hi

    def following(self) -> tuple[np.ndarray, np.ndarray]:
        """The follow graph as CSR (indptr, followees), rebuilt only after follows change."""
        if self._csr is None:
            self._csr = pairs_csr(self.follows, self.n)
        return self._csr

    def followed_by(self) -> tuple[np.ndarray, np.ndarray]:
        """The reverse follow graph as CSR (indptr, followers)."""
        if self._rcsr is None:
            self._rcsr = pairs_csr(self.followers, self.n)
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
