"""Small town: a day in the style of Generative Agents (Park et al. 2023), small, offline and measurable.

A handful of agents live a day in a town of named places joined as a small graph (homes, main
street, cafe, park, library, town hall, grocery). One round is `step_minutes` of the clock, from
`start_hour` to `end_hour` (default 7:00 to 23:00, hourly: 16 rounds); the scenario terminates when
the day is over. Each persona (`town_personas`) has an occupation, a home, a daily routine (its
plan for the day, shown in its observation) and acquaintances (the relationships), kept in the
persona's `traits` and validated with `TownTraits`.

An active agent's action each round is one of (all listed in `available_actions`, the two free-text
ones as `action_templates`):

- `go[<place>]`: move to a neighbouring place (arrives for the next round);
- `talk[<person>]`: open a conversation with someone at the same place (it fails if they are busy
  or leaving);
- `say[<text>]`: speak in one's conversation (bounded); the partner hears it next round;
- `do[<activity>]`: one of the place's activities;
- `plan[<text>]`: write one's plan for the day (replaces the routine shown);
- `wait`: nothing (it keeps a conversation open).

A conversation lasts while both sides `say` or `wait`, at most `max_conversation_turns` rounds; any
other move ends it for both. Utterances go into the listener's next observation, so a seat's
memory records them.

The measured result is the information-diffusion test of the paper: the first `informed` agents
(agent 0, the host) start with a piece of news ("Isabella is hosting a Valentine's Day party at the
cafe at 17:00"). An agent learns it when it hears an utterance that mentions a news keyword
(default "party"; a keyword test, so an LLM that invents a party also "informs": such utterances
by agents who did not know are counted in `mentions_uninformed`). Attendance is counted at the
party place during the party window. Metrics per round: agents who know, conversations started,
utterances, agents at each place, the party's attendance and its informed guests.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from envs.contract import excerpt
from societies.config import TownParams
from societies.env import NOOP, WAIT, Moves, Scenario
from societies.graphs import SocialGraph, from_edges
from societies.personas import FIRST_NAMES, Persona
from societies.scenarios import register_scenario

if TYPE_CHECKING:
    from societies.config import SocietyRunConfig
    from societies.env import SocietyEnv
    from societies.rules import Rule


GO, TALK, SAY, DO, PLAN = 1, 2, 3, 4, 5
VERBS = ("go", "talk", "say", "do", "plan")  # move code k is VERBS[k - 1]
TEMPLATES = ("say[...]", "plan[...]")
_ACTION = re.compile(r"^(go|talk|say|do|plan)\[(.*)\]$", re.DOTALL)
NEVER = -(10**6)  # "a long time ago" for the round two agents last talked
CONVERSATION_SHOWN = 4  # lines of the current conversation shown in an observation
MAX_PLAN_CHARS = 300
TRANSCRIPT_MAX = 5000  # utterances kept for the report
PARTY_ACTIVITY = "celebrate at the party"
NOTE_BUSY, NOTE_LEFT, NOTE_ENDED = 1, 2, 3

# The map: place -> (neighbouring places, activities). Downtown places all adjoin each other and main
# street; each home adjoins main street and one downtown place: every place is within two steps.
HOME_ACTIVITIES = ["sleep", "have breakfast", "cook dinner", "relax"]
DOWNTOWN = ("cafe", "park", "library", "town hall", "grocery")
TOWN_MAP: dict[str, tuple[list[str], list[str]]] = {
    "Willow house": (["main street", "cafe"], HOME_ACTIVITIES),
    "Maple house": (["main street", "park"], HOME_ACTIVITIES),
    "Cedar house": (["main street", "grocery"], HOME_ACTIVITIES),
    "college dorm": (["main street", "library"], ["sleep", "have breakfast", "study", "relax"]),
    "main street": (["Willow house", "Maple house", "Cedar house", "college dorm", *DOWNTOWN], ["stroll", "window-shop"]),
    "cafe": (["main street", "park", "library", "town hall", "grocery"],
             ["serve customers", "drink coffee", "eat lunch", "read the paper"]),
    "park": (["main street", "cafe", "library", "town hall", "grocery"], ["take a walk", "jog", "paint", "sit on a bench"]),
    "library": (["main street", "cafe", "park", "town hall", "grocery"], ["study", "read", "help readers", "write"]),
    "town hall": (["main street", "cafe", "park", "library", "grocery"], ["work at the desk", "attend a meeting"]),
    "grocery": (["main street", "cafe", "park", "library", "town hall"], ["stock shelves", "buy groceries"]),
}  # fmt: skip
PLACES = tuple(TOWN_MAP)
HOMES = ("Willow house", "Maple house", "Cedar house", "college dorm")


class RoutineStep(BaseModel):
    """From `hour` on, be at `place` doing `activity` (until the next step)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    hour: float = Field(ge=0, lt=24)
    place: str
    activity: str


class TownTraits(BaseModel):
    """A town persona's traits (kept in `Persona.traits`, validated here): the rule agent's day and ties."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    occupation: str
    home: str
    routine: list[RoutineStep]
    acquaintances: list[str] = Field(default_factory=list)  # full names; the relation is made symmetric
    goes_to_parties: bool = True  # a rule agent that knows of the party goes only if this holds


def _routine(home: str, *steps: tuple[float, str, str]) -> list[dict[str, Any]]:
    day = [(7.0, home, "have breakfast"), *steps]
    return [{"hour": h, "place": p, "activity": a} for h, p, a in day]


# The cast: a connected acquaintance network for every prefix (each person knows someone before them).
CAST: list[dict[str, Any]] = [
    {"name": "Isabella Rodriguez", "occupation": "the owner of the cafe", "home": "Willow house",
     "routine": _routine("Willow house", (8, "cafe", "serve customers"), (20, "Willow house", "cook dinner"),
                         (22, "Willow house", "sleep")),
     "acquaintances": ["Klaus Mueller", "Maria Lopez", "Tom Moreno", "Carlos Gomez"]},
    {"name": "Klaus Mueller", "occupation": "a sociology student", "home": "college dorm",
     "routine": _routine("college dorm", (9, "library", "study"), (12, "cafe", "eat lunch"), (14, "library", "study"),
                         (17, "park", "take a walk"), (19, "college dorm", "relax"), (23, "college dorm", "sleep")),
     "acquaintances": ["Isabella Rodriguez", "Maria Lopez", "Ayesha Khan"]},
    {"name": "Maria Lopez", "occupation": "a painter", "home": "Maple house",
     "routine": _routine("Maple house", (9, "park", "paint"), (12, "cafe", "eat lunch"), (14, "library", "read"),
                         (16, "park", "paint"), (19, "Maple house", "cook dinner"), (22, "Maple house", "sleep")),
     "acquaintances": ["Isabella Rodriguez", "Klaus Mueller", "Sam Moore"]},
    {"name": "Tom Moreno", "occupation": "the grocery clerk", "home": "Cedar house",
     "routine": _routine("Cedar house", (8, "grocery", "stock shelves"), (12, "cafe", "eat lunch"),
                         (15, "grocery", "stock shelves"), (18, "town hall", "attend a meeting"),
                         (20, "Cedar house", "relax"), (22, "Cedar house", "sleep")),
     "acquaintances": ["Isabella Rodriguez", "Sam Moore", "Jane Hill"]},
    {"name": "Sam Moore", "occupation": "the town clerk", "home": "Cedar house", "goes_to_parties": False,
     "routine": _routine("Cedar house", (9, "town hall", "work at the desk"), (12, "park", "sit on a bench"),
                         (14, "town hall", "work at the desk"), (17, "grocery", "buy groceries"),
                         (18, "town hall", "attend a meeting"), (20, "Cedar house", "cook dinner"),
                         (21, "Cedar house", "sleep")),
     "acquaintances": ["Tom Moreno", "Maria Lopez", "Jane Hill"]},
    {"name": "Ayesha Khan", "occupation": "the librarian", "home": "Maple house",
     "routine": _routine("Maple house", (9, "library", "help readers"), (13, "cafe", "drink coffee"),
                         (15, "library", "help readers"), (18, "park", "jog"), (19, "Maple house", "relax"),
                         (22, "Maple house", "sleep")),
     "acquaintances": ["Klaus Mueller", "Jane Hill"]},
    {"name": "Jane Hill", "occupation": "a retired teacher", "home": "Willow house",
     "routine": _routine("Willow house", (9, "park", "take a walk"), (11, "library", "read"),
                         (13, "Willow house", "relax"), (15, "main street", "window-shop"),
                         (16, "cafe", "drink coffee"), (18, "Willow house", "cook dinner"),
                         (21, "Willow house", "sleep")),
     "acquaintances": ["Tom Moreno", "Sam Moore", "Ayesha Khan"]},
    {"name": "Carlos Gomez", "occupation": "a poet", "home": "college dorm",
     "routine": _routine("college dorm", (10, "cafe", "read the paper"), (12, "park", "sit on a bench"),
                         (15, "library", "write"), (19, "college dorm", "relax"), (23, "college dorm", "sleep")),
     "acquaintances": ["Isabella Rodriguez", "Jane Hill"]},
]  # fmt: skip


def town_personas(n: int, seed: int = 0, activity: float = 1.0) -> list[Persona]:
    """n town personas: the cast first, then generated townsfolk (a cast member's day from another home,
    knowing the previous person and one earlier person drawn by the seed, so the network stays connected)."""
    rng = np.random.default_rng([seed, 0x70])
    rows: list[dict[str, Any]] = []
    for i in range(n):
        if i < len(CAST):
            rows.append(dict(CAST[i]))
            continue
        base = CAST[i % len(CAST)]
        home = HOMES[i % len(HOMES)]
        old_home = base["home"]
        routine = [{**s, "place": home if s["place"] == old_home else s["place"]} for s in base["routine"]]
        name = f"{FIRST_NAMES[i % len(FIRST_NAMES)]} {i}"
        known = {rows[i - 1]["name"], rows[int(rng.integers(0, i))]["name"]}
        rows.append({"name": name, "occupation": base["occupation"], "home": home, "routine": routine,
                     "acquaintances": sorted(known)})  # fmt: skip
    names = {r["name"] for r in rows}
    out = []
    for r in rows:
        traits = TownTraits(
            occupation=r["occupation"],
            home=r["home"],
            routine=[RoutineStep(**s) for s in r["routine"]],
            acquaintances=[a for a in r["acquaintances"] if a in names],
            goes_to_parties=r.get("goes_to_parties", True),
        )
        ties = ", ".join(traits.acquaintances) or "nobody yet"
        bio = f"You are {traits.occupation}. You live at {traits.home}. You know {ties}."
        out.append(Persona(name=r["name"], bio=bio, activity=activity, traits=traits.model_dump()))
    return out


def _hhmm(minutes: int) -> str:
    return f"{minutes // 60:d}:{minutes % 60:02d}"


class TownScenario(Scenario):
    """A day in a small town: places, a clock, routines, conversations, and a piece of news spreading."""

    name = "town"
    state_name = "0 = never heard of the party, 0.5 = knows of it, 1 = knew and came"
    actions = ()
    extra_moves = VERBS

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
        fill = {"{host}": self.names[0], "{place}": party_location, "{time}": _hhmm(int(party_hour * 60))}
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
                f"{_hhmm(int(s.hour * 60))} {s.activity} at {s.place}" for s in sorted(t.routine, key=lambda s: s.hour)
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
                                        f"at {_hhmm(self.start_min + self.party_round * self.step_min)}. Please come!")  # fmt: skip
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

    # -- lifecycle ------------------------------------------------------------------------------
    def reset(self, rng: np.random.Generator) -> None:
        self._empty()

    def begin_round(self, rng: np.random.Generator) -> None:
        super().begin_round(rng)
        if self.done():
            self.active = np.empty(0, dtype=np.int64)
            self.is_active = np.zeros(self.n, dtype=bool)
        here = self.loc == self.party_loc
        if self.party_on():
            self.attended |= here
            self.attended_knowing |= here & self.knows
            self.party_present = int(here.sum())
        else:
            self.party_present = 0

    def done(self) -> bool:
        return self.round >= self.day_rounds

    def apply(self, moves: Moves, rng: np.random.Generator) -> np.ndarray:
        n, r = self.n, self.round
        code = np.zeros(n, dtype=np.int64)
        val = np.full(n, -1, dtype=np.int64)
        code[moves.idx] = moves.code
        v = moves.values()
        val[moves.idx] = np.where(np.isnan(v), -1, v).astype(np.int64)
        self.heard_line[:] = -1
        self.heard_from[:] = -1
        self.said_line[:] = -1
        self.note[:] = 0
        self.note_arg[:] = -1
        self.round_conversations = self.round_utterances = 0
        # 1. utterances, heard by the partner; the news passes when an utterance mentions it
        knew = self.knows.copy()
        for i in np.flatnonzero((code == SAY) & (self.partner >= 0) & (val >= 0)).tolist():
            j, line = int(self.partner[i]), int(val[i])
            self.heard_line[j], self.heard_from[j], self.said_line[i] = line, i, line
            self.spoke[i] += 1
            self.conv_lines[i].append((i, line))
            self.conv_lines[j].append((i, line))
            if len(self.transcript) < TRANSCRIPT_MAX:
                self.transcript.append((r, i, j, line))
            self.round_utterances += 1
            if self.line_mentions[line]:
                self.mentions_uninformed += int(not knew[i])
                if not self.knows[j]:
                    self.knows[j], self.learned[j], self.told_by[j] = True, r, i
        # 2. conversations end when a side does anything but say or wait, or after max_turns rounds
        talking = self.partner >= 0
        self.conv_rounds[talking] += 1
        leaves = talking & ~np.isin(code, (NOOP, SAY))
        over = talking & (self.conv_rounds >= self.max_turns)
        end = leaves | over
        end |= talking & end[np.maximum(self.partner, 0)]
        for i in np.flatnonzero(end).tolist():
            if over[i]:
                self.note[i], self.note_arg[i] = NOTE_ENDED, self.partner[i]
            elif not leaves[i]:
                self.note[i], self.note_arg[i] = NOTE_LEFT, self.partner[i]
            self.conv_lines[i].clear()
        self.partner[end] = -1
        self.conv_rounds[end] = 0
        self.spoke[end] = 0
        # 3. new conversations, in agent order: both must be free, together, and the other not leaving
        for i in np.flatnonzero(code == TALK).tolist():
            j = int(val[i])
            ok = 0 <= j < n and j != i and self.loc[j] == self.loc[i] and code[j] != GO
            if ok and self.partner[i] < 0 and self.partner[j] < 0:
                self.partner[i], self.partner[j] = j, i
                self.last_talk[i, j] = self.last_talk[j, i] = r
                self.round_conversations += 1
                self.conversations_total += 1
            elif self.partner[i] != j or j < 0:  # (both asking each other is one conversation)
                self.note[i], self.note_arg[i] = NOTE_BUSY, j
        # 4. moves, activities, plans
        go = np.flatnonzero(code == GO)
        dest = val[go]
        ok = (dest >= 0) & (dest < len(self.places))
        ok[ok] &= self.adj[self.loc[go[ok]], dest[ok]]
        self.loc[go[ok]] = dest[ok]
        self.doing[:] = np.where(code == DO, val, -1)
        plans = code == PLAN
        self.plan_line[plans] = val[plans]
        return np.zeros(n)

    # -- text -----------------------------------------------------------------------------------
    def instruction(self, i: int) -> str:
        end = _hhmm(self.clock(self.day_rounds))
        text = (
            f"{self.persona(i)} Today is a day in a small town, from {_hhmm(self.start_min)} to {end}; each turn "
            f"is {self.step_min} minutes. Each turn choose one action: go[place] to walk to a neighbouring place, "
            "talk[person] to start a conversation with someone at the same place, say[text] to speak in your "
            "conversation, do[activity] for something to do where you are, plan[text] to write your plan for the "
            "day, or wait. Live the day as your character would: follow your plan, meet people and talk with them."
        )
        if self.knows[i] and i < self.n_informed:
            text += f" You know this news: {self.news}"
            if i == 0:
                text += " You are the host: invite the people you meet."
        return text

    def _said(self, speaker: int, line: int, me: int) -> str:
        who = "You" if speaker == me else self.names[speaker]
        return f'{who}: "{self.lines[line]}"'

    def observe(self, i: int) -> str:
        if self.done():
            return f"It is {_hhmm(self.clock())}. The day is over."
        here = int(self.loc[i])
        parts = [
            f"It is {_hhmm(self.clock())} (turn {self.round + 1} of {self.day_rounds}). You are at the {self.places[here]}."
        ]
        j = int(self.partner[i])
        if j >= 0:
            parts.append(f"You are in a conversation with {self.names[j]}.")
            if self.conv_lines[i]:
                parts.append("So far: " + " ".join(self._said(s, ln, i) for s, ln in self.conv_lines[i]))
            else:
                parts.append("Nobody has spoken yet.")
        elif self.heard_line[i] >= 0:
            parts.append(f"{self._said(int(self.heard_from[i]), int(self.heard_line[i]), i)}")
        if self.note[i] == NOTE_BUSY:
            parts.append(f"You could not talk with {self._name(int(self.note_arg[i]))}: they were busy or leaving.")
        elif self.note[i] == NOTE_LEFT:
            parts.append(f"{self._name(int(self.note_arg[i]))} ended your conversation.")
        elif self.note[i] == NOTE_ENDED:
            parts.append(f"Your conversation with {self._name(int(self.note_arg[i]))} has ended.")
        others = [k for k in np.flatnonzero(self.loc == here).tolist() if k != i]
        if others:
            parts.append("Here with you: " + ", ".join(self._doing(k) for k in others) + ".")
        else:
            parts.append("Nobody else is here.")
        if self.party_on() and here == self.party_loc:
            parts.append("A party is going on here.")
        if self.plan_line[i] >= 0:
            parts.append(f"Your plan: {self.lines[int(self.plan_line[i])]}")
        else:
            parts.append(f"Your plan for today: {self.routine_text[i]}.")
        r = min(self.round, self.day_rounds - 1)
        parts.append(
            f"Your routine now: {self.activities[self.route_act[i, r]]} at the {self.places[self.route_loc[i, r]]}."
        )
        return " ".join(parts)

    def _name(self, j: int) -> str:
        return self.names[j] if 0 <= j < self.n else "someone"

    def _doing(self, k: int) -> str:
        if self.partner[k] >= 0:
            return f"{self.names[k]} (talking with {self.names[int(self.partner[k])]})"
        if self.doing[k] >= 0:
            return f"{self.names[k]} ({self.activities[int(self.doing[k])]})"
        return self.names[k]

    def _acts_here(self, i: int) -> list[int]:
        here = int(self.loc[i])
        acts = list(self.place_acts[here])
        if here == self.party_loc and self.party_on():
            acts.append(self.party_act)
        return acts

    def available(self, i: int) -> list[str]:
        if not self.is_active[i]:
            return [WAIT]
        here = int(self.loc[i])
        out = [WAIT]
        out += [f"go[{self.places[q]}]" for q in np.flatnonzero(self.adj[here]).tolist()]
        out += [
            f"talk[{self.names[k]}]"
            for k in np.flatnonzero(self.loc == here).tolist()
            if k != i and k != self.partner[i]
        ]
        out += [f"do[{self.activities[a]}]" for a in self._acts_here(i)]
        return out

    def templates(self, i: int) -> list[str]:
        if not self.is_active[i]:
            return []
        return list(TEMPLATES) if self.partner[i] >= 0 else [TEMPLATES[1]]

    def _find(self, names: list[str], arg: str) -> int | None:
        key = arg.strip().lower()
        for k, nm in enumerate(names):
            if nm.lower() == key:
                return k
        return None

    def _person(self, arg: str) -> int | None:
        """A person by full name, unique first name, or agent id."""
        k = self._find(self.names, arg)
        if k is not None:
            return k
        key = arg.strip().lower()
        first = [k for k, nm in enumerate(self.names) if nm.split()[0].lower() == key]
        if len(first) == 1:
            return first[0]
        m = re.fullmatch(r"agent_(\d+)", key)
        return int(m.group(1)) if m and int(m.group(1)) < self.n else None

    def parse(self, i: int, text: str) -> tuple[int, float] | str:
        act = text.strip()
        if act == WAIT:
            return NOOP, np.nan
        if not self.is_active[i]:
            return super().parse(i, text)
        m = _ACTION.match(act)
        if m is None:
            return (
                f"unknown action {excerpt(text)}; write go[place], talk[person], say[text], do[activity], "
                "plan[text] or wait"
            )
        verb, arg = m.group(1), m.group(2).strip()
        here = int(self.loc[i])
        if verb == "go":
            q = self._find(self.places, arg)
            near = ", ".join(self.places[k] for k in np.flatnonzero(self.adj[here]).tolist())
            if q is None:
                return f"unknown place {excerpt(arg)}; from the {self.places[here]} you can go to {near}"
            if not self.adj[here, q]:
                return f"the {self.places[q]} is not next to the {self.places[here]}; from here you can go to {near}"
            return GO, float(q)
        if verb == "talk":
            j = self._person(arg)
            if j is None:
                return f"nobody called {excerpt(arg)} lives here"
            if j == i:
                return "you cannot talk with yourself"
            if self.loc[j] != here:
                return f"{self.names[j]} is not at the {self.places[here]}; you can only talk with people here"
            if self.partner[i] == j:
                return f"you are already talking with {self.names[j]}; use say[...] to speak"
            return TALK, float(j)
        if verb == "say":
            if self.partner[i] < 0:
                return "you are not in a conversation; start one with talk[person] first"
            if not arg:
                return "say[...] needs something to say"
            if len(arg) > self.max_say_chars:
                return f"say[...] takes at most {self.max_say_chars} characters, got {len(arg):,}"
            return SAY, float(self.line_id(arg))
        if verb == "do":
            acts = self._acts_here(i)
            a = self._find([self.activities[k] for k in acts], arg)
            if a is None:
                listed = ", ".join(self.activities[k] for k in acts)
                return f"{excerpt(arg)} is not something to do at the {self.places[here]}; here you can: {listed}"
            return DO, float(acts[a])
        if not arg:
            return "plan[...] needs a plan"
        if len(arg) > MAX_PLAN_CHARS:
            return f"plan[...] takes at most {MAX_PLAN_CHARS} characters, got {len(arg):,}"
        return PLAN, float(self.line_id(arg))

    def move_text(self, i: int, code: int, value: float) -> str:
        v = int(value) if not np.isnan(value) else -1
        if code == GO:
            return f"go[{self.places[v]}]"
        if code == TALK:
            return f"talk[{self.names[v]}]"
        if code in (SAY, PLAN):
            return f"{VERBS[code - 1]}[{self.lines[v]}]"
        if code == DO:
            return f"do[{self.activities[v]}]"
        return WAIT

    # -- measurement ----------------------------------------------------------------------------
    def metrics(self) -> dict[str, float]:
        out = {
            "hour": self.clock() / 60.0,
            "informed": float(self.knows.sum()),
            "conversations": float(self.round_conversations),
            "conversations_total": float(self.conversations_total),
            "utterances": float(self.round_utterances),
            "in_conversation": float((self.partner >= 0).sum()),
            "party_present": float(self.party_present),
            "party_attendance": float(self.attended.sum()),
            "party_guests_informed": float(self.attended_knowing.sum()),
            "mentions_uninformed": float(self.mentions_uninformed),
        }
        counts = np.bincount(self.loc, minlength=len(self.places))
        for k, p in enumerate(self.places):
            out[f"at_{p.replace(' ', '_')}"] = float(counts[k])
        return out

    def node_state(self) -> np.ndarray:
        """0 = never heard of the party, 0.5 = knows of it, 1 = knew and came."""
        return 0.5 * self.knows + 0.5 * self.attended_knowing

    def agent_outcome(self, i: int) -> tuple[float, bool]:
        came = bool(self.attended_knowing[i])
        return float(came), came

    def report(self) -> dict[str, Any]:
        """The day in words: who knew and from whom, who came, every utterance, the plans written."""
        t = lambda r: _hhmm(self.clock(r))  # noqa: E731
        return {
            "news": self.news,
            "party": {
                "place": self.places[self.party_loc],
                "from": t(self.party_round),
                "until": t(self.party_end),
                "attendees": [self.names[k] for k in np.flatnonzero(self.attended).tolist()],
                "informed_guests": [self.names[k] for k in np.flatnonzero(self.attended_knowing).tolist()],
            },
            "informed": [
                {
                    "agent": self.names[k],
                    "heard_at": t(int(self.learned[k])) if self.told_by[k] >= 0 else "start",
                    "from": self.names[int(self.told_by[k])] if self.told_by[k] >= 0 else None,
                }
                for k in np.flatnonzero(self.knows).tolist()
            ],
            "conversations": self.conversations_total,
            "mentions_uninformed": self.mentions_uninformed,
            "utterances": [
                {"time": t(r), "speaker": self.names[s], "listener": self.names[j], "text": self.lines[ln]}
                for r, s, j, ln in self.transcript
            ],
            "plans": {
                self.names[k]: self.lines[int(self.plan_line[k])] for k in np.flatnonzero(self.plan_line >= 0).tolist()
            },
        }


@register_scenario("town", params=TownParams)
def build_town(cfg: SocietyRunConfig, params: TownParams, personas: list[Persona] | None) -> tuple[SocietyEnv, Rule]:
    """The small town: its own cast of personas (occupation, home, routine, acquaintances in the traits)."""
    from societies.env import SocietyEnv
    from societies.rules import TownRoutine

    t = params
    sc = TownScenario(
        town_personas(cfg.agents, cfg.seed, activity=cfg.activity),
        start_hour=t.start_hour,
        end_hour=t.end_hour,
        step_minutes=t.step_minutes,
        news=t.news,
        news_keywords=t.news_keywords,
        informed=t.informed,
        party_location=t.party_location,
        party_hour=t.party_hour,
        party_hours=t.party_hours,
        max_conversation_turns=t.max_conversation_turns,
        max_say_chars=t.max_say_chars,
    )
    return SocietyEnv(sc, cfg.rounds), TownRoutine(t.talk_cooldown)
