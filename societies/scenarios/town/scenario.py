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

from typing import Any

import numpy as np

from societies.env import NOOP, Moves
from societies.scenarios.town.state import NOTE_BUSY, NOTE_ENDED, NOTE_LEFT, hhmm
from societies.scenarios.town.text import DO, GO, PLAN, SAY, TALK, VERBS, TownText

TRANSCRIPT_MAX = 5000  # utterances kept for the report


class TownScenario(TownText):
    """A day in a small town: places, a clock, routines, conversations, and a piece of news spreading."""

    name = "town"
    state_name = "0 = never heard of the party, 0.5 = knows of it, 1 = knew and came"
    actions = ()
    extra_moves = VERBS

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
        t = lambda r: hhmm(self.clock(r))  # noqa: E731
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
