"""The feed as text: what an agent reads (instruction, feed, available moves) and the moves it writes.

Observations stay bounded and well-formed every round (the garbled output of camel-ai/oasis #94):
a feed holds at most `FEED_MAX` posts, a post's text is cleaned of control characters and newlines
and clipped to fit, and the whole observation stays under `OBS_CHARS`.
"""

from __future__ import annotations

import re

import numpy as np

from envs.contract import excerpt
from societies.env import OBS_CHARS, WAIT, agent_id
from societies.scenarios.feed.queries import FeedQueries
from societies.scenarios.feed.recommender import Recommender

POST, NOTHING, REPOST, LIKE, FOLLOW = 1, 2, 3, 4, 5
FEED_MAX = 50  # the largest feed: its text must fit in one observation
POST_CHARS = 280  # the longest post[<text>]

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


class FeedText(FeedQueries):
    """The feed's text side: observations, the moves on offer, and parsing and writing moves."""

    recommender: Recommender

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
