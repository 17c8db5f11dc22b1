"""The town's state: the map built from `world.py`, the residents, the clock and who knows what.

`TownState` builds and holds the arrays a day plays on; `text.py` reads them for the residents, and
`scenario.py` plays the rounds and measures them.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Sequence

import numpy as np

from societies.env import Scenario
from societies.graphs import SocialGraph, from_edges
from societies.personas import Persona
from societies.scenarios.town.world import PLACES, TOWN_MAP, TownTraits

NEVER = -(10**6)  # "a long time ago" for the round two agents last talked
CONVERSATION_SHOWN = 4  # lines of the current conversation shown in an observation
PARTY_ACTIVITY = "celebrate at the party"
NOTE_BUSY, NOTE_LEFT, NOTE_ENDED = 1, 2, 3


def hhmm(minutes: int) -> str:
    """Minutes since midnight as H:MM."""
    return f"{minutes // 60:d}:{minutes % 60:02d}"


class TownState(Scenario):
    """The town's map, residents and clock, and the arrays of a day (where each is, who talks, who knows)."""

    def __init__(
        self,
        personas: list[Persona],
        *,
        start_hour: int = 7,
        end_hour: int = 23,
        step_minutes: int = 60,
        news: str = "{host} is hosting a Valentine's Day party at the {place} at {time}.",
        news_keywords: Sequence[str] = ("party",),
        informed: int = 1,
        party_location: str = "cafe",
        party_hour: float = 17.0,
        party_hours: float = 2.0,
        max_conversation_turns: int = 3,
        max_say_chars: int = 200,
    ) -> None:
        super().__init__(len(personas), personas)
        if not 0 <= start_hour < end_hour <= 24:
            raise ValueError(f"need 0 <= start_hour < end_hour <= 24, got {start_hour} and {end_hour}")
        if step_minutes <= 0 or 60 % step_minutes:
            raise ValueError(f"step_minutes must divide 60, got {step_minutes}")
        if party_location not in TOWN_MAP:
            raise ValueError(f"unknown party_location {party_location!r}; places: {', '.join(PLACES)}")
        party_round = (party_hour - start_hour) * 60 / step_minutes
        if not (0 <= party_round < (end_hour - start_hour) * 60 / step_minutes and party_round == int(party_round)):
            raise ValueError(
                f"party_hour {party_hour:g} must fall on a {step_minutes}-minute step between {start_hour} and {end_hour}"
            )
        if not news_keywords or not all(k.strip() for k in news_keywords):
            raise ValueError("news_keywords must name at least one non-empty word")
        if not 0 <= informed <= self.n:
            raise ValueError(f"informed must be between 0 and {self.n}, got {informed}")
        self.traits = [TownTraits.model_validate(p.traits) for p in personas]
        self.names = [p.name for p in personas]
        self.start_min, self.step_min = start_hour * 60, step_minutes
        self.day_rounds = (end_hour - start_hour) * 60 // step_minutes
        self.party_round = int(party_round)
        self.party_end = min(self.day_rounds, self.party_round + max(1, int(round(party_hours * 60 / step_minutes))))
        self.max_turns = max_conversation_turns
        self.max_say_chars = max_say_chars
        self.n_informed = informed
        fill = {"{host}": self.names[0], "{place}": party_location, "{time}": hhmm(int(party_hour * 60))}
        self.news = re.sub(r"\{host\}|\{place\}|\{time\}", lambda m: fill[m.group(0)], news)
        self._keywords = re.compile(r"\b(" + "|".join(re.escape(k.strip()) for k in news_keywords) + r")\b", re.I)
        self._build_map(party_location)
        self._build_people()
        self._empty()

    # -- static parts ---------------------------------------------------------------------------
    def _build_map(self, party_location: str) -> None:
        """Places, adjacency, shortest-path distances and next hops (BFS on a graph of ~10 places)."""
        self.places = list(PLACES)
        pidx = {p: k for k, p in enumerate(self.places)}
        L = len(self.places)
        self.adj = np.zeros((L, L), dtype=bool)
        for p, (nbrs, _) in TOWN_MAP.items():
            for q in nbrs:
                self.adj[pidx[p], pidx[q]] = self.adj[pidx[q], pidx[p]] = True
        self.dist = np.full((L, L), L, dtype=np.int64)
        self.next_hop = np.tile(np.arange(L), (L, 1))  # next_hop[a, b]: first step from a towards b
        for b in range(L):  # BFS from each target: a's next hop is a neighbour one step closer to b
            self.dist[b, b] = 0
            frontier = [b]
            while frontier:
                nxt = []
                for u in frontier:
                    for v in np.flatnonzero(self.adj[u]):
                        if self.dist[v, b] > self.dist[u, b] + 1:
                            self.dist[v, b] = self.dist[u, b] + 1
                            self.next_hop[v, b] = u
                            nxt.append(int(v))
                frontier = nxt
        self.activities: list[str] = []
        self.place_acts: list[list[int]] = []
        for p in self.places:
            ids = []
            for a in TOWN_MAP[p][1]:
                if a not in self.activities:
                    self.activities.append(a)
                ids.append(self.activities.index(a))
            self.place_acts.append(ids)
        self.activities.append(PARTY_ACTIVITY)
        self.party_act = len(self.activities) - 1
        self.party_loc = pidx[party_location]

    def _build_people(self) -> None:
        """Homes, acquaintances (symmetric), and each agent's routine target for every round of the day."""
        pidx = {p: k for k, p in enumerate(self.places)}
        by_name = {nm: k for k, nm in enumerate(self.names)}
        if len(by_name) != self.n:
            raise ValueError("town personas need distinct names")
        self.home = np.array([pidx[t.home] for t in self.traits], dtype=np.int64)
        self.willing = np.array([t.goes_to_parties for t in self.traits], dtype=bool)
        self.know = np.zeros((self.n, self.n), dtype=bool)
        for i, t in enumerate(self.traits):
            for a in t.acquaintances:
                if a in by_name and by_name[a] != i:
                    self.know[i, by_name[a]] = self.know[by_name[a], i] = True
        u, v = np.nonzero(np.triu(self.know))
        self.graph: SocialGraph = from_edges(self.n, u, v)  # the acquaintance network (plots colour it)
        R = self.day_rounds
        clock = (self.start_min + self.step_min * np.arange(R)) / 60.0
        self.route_loc = np.zeros((self.n, R), dtype=np.int64)
        self.route_act = np.zeros((self.n, R), dtype=np.int64)
        for i, t in enumerate(self.traits):
            steps = sorted(t.routine, key=lambda s: s.hour)
            for s in steps:
                if s.place not in pidx:
                    raise ValueError(f"{self.names[i]}'s routine names an unknown place {s.place!r}")
                if s.activity not in TOWN_MAP[s.place][1]:
                    raise ValueError(f"{self.names[i]}'s routine: {s.activity!r} is not an activity at {s.place}")
            hours = np.array([s.hour for s in steps])
            k = np.maximum(np.searchsorted(hours, clock, side="right") - 1, 0)
            self.route_loc[i] = [pidx[steps[j].place] for j in k]
            self.route_act[i] = [self.activities.index(steps[j].activity) for j in k]
        self.routine_text = [
            "; ".join(
                f"{hhmm(int(s.hour * 60))} {s.activity} at {s.place}" for s in sorted(t.routine, key=lambda s: s.hour)
            )
            for t in self.traits
        ]

    def _empty(self) -> None:
        n = self.n
        self.loc = self.home.copy()
        self.partner = np.full(n, -1, dtype=np.int64)
        self.conv_rounds = np.zeros(n, dtype=np.int64)  # rounds the current conversation has run
        self.spoke = np.zeros(n, dtype=np.int64)  # utterances in the current conversation
        self.knows = np.zeros(n, dtype=bool)
        self.knows[: self.n_informed] = True
        self.learned = np.where(self.knows, 0, -1).astype(np.int64)  # round the news was heard (-1 = not)
        self.told_by = np.full(n, -1, dtype=np.int64)
        self.heard_line = np.full(n, -1, dtype=np.int64)  # what the partner said last round
        self.heard_from = np.full(n, -1, dtype=np.int64)
        self.said_line = np.full(n, -1, dtype=np.int64)
        self.last_talk = np.full((n, n), NEVER, dtype=np.int64)  # round a conversation between i and j began
        self.doing = np.full(n, -1, dtype=np.int64)
        self.plan_line = np.full(n, -1, dtype=np.int64)
        self.note = np.zeros(n, dtype=np.int64)
        self.note_arg = np.full(n, -1, dtype=np.int64)
        self.conv_lines: list[deque[tuple[int, int]]] = [deque(maxlen=CONVERSATION_SHOWN) for _ in range(n)]
        # every utterance and plan as text once: moves carry a line's index (rule lines come first)
        self.lines: list[str] = []
        self.line_ids: dict[str, int] = {}
        self.line_mentions: list[bool] = []
        self.news_line = self.line_id(self.news)
        self.invite_line = self.line_id(f"I'm hosting a Valentine's Day party at the {self.places[self.party_loc]} "
                                        f"at {hhmm(self.start_min + self.party_round * self.step_min)}. Please come!")  # fmt: skip
        self.smalltalk_line = np.array(
            [self.line_id(f"Nice to see you! It's a busy day for me as {t.occupation}.") for t in self.traits]
        )
        self.transcript: list[tuple[int, int, int, int]] = []  # (round, speaker, listener, line)
        self.attended = np.zeros(n, dtype=bool)  # at the party place during the party
        self.attended_knowing = np.zeros(n, dtype=bool)  # ... and knew of the party by then
        self.party_present = 0
        self.conversations_total = 0
        self.round_conversations = 0
        self.round_utterances = 0
        self.mentions_uninformed = 0

    def line_id(self, text: str) -> int:
        """The index of an utterance or plan (whitespace collapsed); new text is added once."""
        text = " ".join(text.split())
        k = self.line_ids.get(text)
        if k is None:
            k = self.line_ids[text] = len(self.lines)
            self.lines.append(text)
            self.line_mentions.append(bool(self._keywords.search(text)))
        return k

    # -- clock ----------------------------------------------------------------------------------
    def clock(self, r: int | None = None) -> int:
        """Minutes since midnight at the start of round r (default: now)."""
        return self.start_min + self.step_min * (self.round if r is None else r)

    def routine_target(self, idx: np.ndarray, r: int) -> tuple[np.ndarray, np.ndarray]:
        """Where each agent's routine wants it now, and what to do once there, leaving in time: a walk
        takes one round per step, so head for the place of round r + k when it is k or more steps away
        (smallest such k), else for the place of round r."""
        last = self.day_rounds - 1
        loc = self.loc[idx]
        target = self.route_loc[idx, min(r, last)].copy()
        act = self.route_act[idx, min(r, last)].copy()
        decided = np.zeros(idx.size, dtype=bool)
        for k in range(1, int(self.dist.max()) + 1):
            place, then = self.route_loc[idx, min(r + k, last)], self.route_act[idx, min(r + k, last)]
            leave = ~decided & (self.dist[loc, place] >= k)
            target[leave], act[leave] = place[leave], then[leave]
            decided |= leave
        return target, act

    def party_on(self, r: int | None = None) -> bool:
        r = self.round if r is None else r
        return self.party_round <= r < self.party_end
