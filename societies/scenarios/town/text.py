"""The town as text: what a resident reads (its day, the place, its conversation) and the moves it writes.

Moves: `go[<place>]`, `talk[<person>]`, `say[<text>]`, `do[<activity>]`, `plan[<text>]`, `wait`.
"""

from __future__ import annotations

import re

import numpy as np

from envs.contract import excerpt
from societies.env import NOOP, WAIT
from societies.scenarios.town.state import NOTE_BUSY, NOTE_ENDED, NOTE_LEFT, TownState, hhmm

GO, TALK, SAY, DO, PLAN = 1, 2, 3, 4, 5
VERBS = ("go", "talk", "say", "do", "plan")  # move code k is VERBS[k - 1]
TEMPLATES = ("say[...]", "plan[...]")
_ACTION = re.compile(r"^(go|talk|say|do|plan)\[(.*)\]$", re.DOTALL)
MAX_PLAN_CHARS = 300


class TownText(TownState):
    """The town's text side: instruction, observation, the moves on offer, and parsing and writing moves."""

    # -- text -----------------------------------------------------------------------------------
    def instruction(self, i: int) -> str:
        end = hhmm(self.clock(self.day_rounds))
        text = (
            f"{self.persona(i)} Today is a day in a small town, from {hhmm(self.start_min)} to {end}; each turn "
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
            return f"It is {hhmm(self.clock())}. The day is over."
        here = int(self.loc[i])
        parts = [
            f"It is {hhmm(self.clock())} (turn {self.round + 1} of {self.day_rounds}). You are at the {self.places[here]}."
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
