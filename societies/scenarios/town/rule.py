"""The town scenario's rule: a deterministic day of routine, conversations, the news passed on and the party."""

from __future__ import annotations

import numpy as np

from societies.env import NOOP, Moves, Scenario
from societies.scenarios.town.scenario import TownScenario
from societies.scenarios.town.text import DO, GO, SAY, TALK


class TownRoutine:
    """A town day by rule, deterministic (the Generative Agents behaviours the diffusion check needs).

    In order: speak once in a conversation (the news if one knows it, the host's invitation, else
    small talk); head for the party in time (one round of slack) if one knows of it and goes to
    parties; open a conversation with a free acquaintance here not talked with for `cooldown`
    rounds (the least recent first); at the party, celebrate; else follow the routine (walk towards its place, then do its
    activity). So the news passes along every conversation an informed agent holds."""

    name = "town_routine"

    def __init__(self, cooldown: int = 3) -> None:
        if cooldown < 0:
            raise ValueError(f"cooldown must be >= 0, got {cooldown}")
        self.cooldown = cooldown

    def decide(self, sc: Scenario, idx: np.ndarray, rng: np.random.Generator) -> Moves:
        assert isinstance(sc, TownScenario)
        idx = np.asarray(idx, dtype=np.int64)
        r = sc.round
        loc = sc.loc[idx]
        code = np.zeros(idx.size, dtype=np.int8)
        value = np.full(idx.size, np.nan)
        open_ = np.ones(idx.size, dtype=bool)  # not decided yet

        def put(mask: np.ndarray, c: int, v: np.ndarray | int) -> None:
            m = mask & open_
            code[m] = c
            value[m] = v[m] if isinstance(v, np.ndarray) else v
            open_[m] = False

        knows = sc.knows[idx]
        host = (idx == 0) & (sc.n_informed > 0)
        line = np.where(knows, np.where(host, sc.invite_line, sc.news_line), sc.smalltalk_line[idx])
        put((sc.partner[idx] >= 0) & (sc.spoke[idx] == 0), SAY, line)
        party = sc.party_loc
        going = knows & sc.willing[idx] & (r >= sc.party_round - sc.dist[loc, party] - 1) & (r < sc.party_end)
        put(going & (loc != party), GO, sc.next_hop[loc, party])
        # free: not in a conversation, or in one where both have spoken (so a rule agent moves on)
        done_talking = (sc.spoke > 0) & (sc.spoke[np.maximum(sc.partner, 0)] > 0)
        free_now = (sc.partner < 0) | done_talking
        free = (sc.loc[None, :] == loc[:, None]) & free_now[None, :] & (r - sc.last_talk[idx] > self.cooldown)
        pick = sc.know[idx] & free  # the acquaintance talked with least recently (ties: the lowest index)
        put(pick.any(axis=1), TALK, np.where(pick, sc.last_talk[idx], np.iinfo(np.int64).max).argmin(axis=1))
        at_party = going & (loc == party)
        put(at_party & sc.party_on(), DO, sc.party_act)
        target, act = sc.routine_target(idx, r)
        put(at_party & (target != party), NOOP, 0)  # early: wait here for the party
        put(loc != target, GO, sc.next_hop[loc, target])
        put(open_, DO, act)
        return Moves(idx, code, value)
