"""A generated LoCoMo-style long-horizon recall suite: personal facts told across many chat sessions
(thousands of turns, most of them chit-chat that reuses the same words), some facts later changed, then
one question per fact. Each question knows the turn that states its *current* answer.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

PEOPLE = ["Alice", "Bruno", "Chen", "Dalia", "Emeka", "Farah", "Goran", "Hana", "Ivan", "Jun", "Kemal", "Lena"]
ATTRS = {  # relation: (values, statement templates, update templates, question)
    "dog's name": (
        ["Rex", "Biscuit", "Luna", "Pepper", "Ziggy", "Mochi", "Otis", "Nala", "Bruno Jr", "Waffles"],
        ["My dog's name is {v}.", "Oh, my dog's name is {v}, he is very playful."],
        ["We renamed him, my dog's name is now {v}."],
        "What is {s}'s dog's name?",
    ),
    "favorite color": (
        ["teal", "crimson", "mustard", "lilac", "olive", "navy", "coral", "amber"],
        ["My favorite color is {v}.", "Honestly my favourite colour is {v}."],
        ["Funny, my favorite color is now {v}."],
        "What is {s}'s favorite color?",
    ),
    "lives in": (
        ["Lisbon", "Osaka", "Nairobi", "Quito", "Tallinn", "Perth", "Bergen", "Tucson", "Lyon"],
        ["I live in {v}, it is lovely.", "I live in {v} these days."],
        ["Big news: I just moved to {v}!", "I moved to {v} last month."],
        "Where does {s} live?",
    ),
    "works as": (
        ["nurse", "welder", "pilot", "baker", "translator", "geologist", "plumber", "teacher"],
        ["I work as a {v}.", "These days I work as a {v}, long hours."],
        ["I started a new job as a {v}!"],
        "What does {s} work as?",
    ),
    "car": (
        ["red Volvo", "green Fiat", "white Tesla", "blue Skoda", "black Jeep", "silver Honda"],
        ["My car is a {v}.", "My car is a {v}, still runs fine."],
        ["I sold the old one, my car is now a {v}."],
        "What car does {s} have?",
    ),
    "favorite food": (
        ["ramen", "paella", "pierogi", "tacos", "falafel", "risotto", "jollof rice", "pho"],
        ["My favorite food is {v}.", "My favourite food is {v}, no contest."],
        ["My favorite food is now {v}, I changed my mind."],
        "What is {s}'s favorite food?",
    ),
    "hobby": (
        ["climbing", "pottery", "chess", "birdwatching", "surfing", "knitting", "astronomy"],
        ["My hobby is {v}.", "My hobby is {v}, I do it every weekend."],
        ["My hobby is now {v}."],
        "What is {s}'s hobby?",
    ),
}
FILLER = [
    "Did you see the game last night?",
    "I walked a neighbour's dog in the park today.",
    "The weather is so grey, I miss some color.",
    "My cousin says the food at that new place is great.",
    "I washed the car this morning, took forever.",
    "Work was exhausting, so many meetings.",
    "I think I need a new hobby, any ideas?",
    "We should plan a trip somewhere warm.",
    "Haha, that is hilarious.",
    "I am reading a book about the history of maps.",
    "Traffic in the city was terrible again.",
    "Where did you buy that jacket?",
    "My phone battery dies so fast lately.",
    "Let us catch up next week.",
    "What is your favorite movie these days?",
    "The bakery on the corner closed down.",
    "I tried a new recipe, it was a disaster.",
    "Do you still live near the river?",
    "Sounds good to me!",
    "The concert tickets sold out in minutes.",
    "My name is on the list for the marathon.",
]


@dataclass(frozen=True)
class Turn:
    id: int
    session: int
    speaker: str
    text: str

    def line(self) -> str:
        return f"{self.speaker}: {self.text}"


@dataclass(frozen=True)
class Question:
    text: str
    subject: str
    relation: str
    answer: str
    target_turn: int  # the turn stating the current answer
    updated: bool  # the fact was told once and later changed
    old_answer: str | None


@dataclass
class Suite:
    turns: list[Turn]
    questions: list[Question]


def generate(sessions: int = 50, turns_per_session: int = 40, update_share: float = 0.35, seed: int = 0) -> Suite:
    rng = random.Random(seed)
    events: list[tuple[int, str, str, str, str, bool]] = []  # (session, speaker, relation, value, text, is_update)
    first_half = max(1, sessions // 2)
    for person in PEOPLE:
        for rel, (values, tpl, upd_tpl, _) in ATTRS.items():
            v1 = rng.choice(values)
            s1 = rng.randrange(0, first_half)
            events.append((s1, person, rel, v1, rng.choice(tpl).format(v=v1), False))
            if rng.random() < update_share:
                v2 = rng.choice([v for v in values if v != v1])
                s2 = rng.randrange(s1 + 1, sessions)
                events.append((s2, person, rel, v2, rng.choice(upd_tpl).format(v=v2), True))
    by_session: dict[int, list] = {}
    for e in events:
        by_session.setdefault(e[0], []).append(e)
    turns: list[Turn] = []
    latest: dict[tuple[str, str], tuple[str, int, bool, str | None]] = {}
    for s in range(sessions):
        facts = by_session.get(s, [])
        n_fill = max(0, turns_per_session - len(facts))
        slots: list = [None] * n_fill + facts
        rng.shuffle(slots)
        pair = rng.sample(PEOPLE, 2)
        for i, slot in enumerate(slots):
            tid = len(turns)
            if slot is None:
                turns.append(Turn(tid, s, pair[i % 2], rng.choice(FILLER)))
                continue
            _, person, rel, value, text, is_upd = slot
            turns.append(Turn(tid, s, person, text))
            prev = latest.get((person, rel))
            latest[(person, rel)] = (value, tid, is_upd, prev[0] if prev else None)
    questions = [
        Question(ATTRS[rel][3].format(s=person), person, rel, value, tid, upd, old)
        for (person, rel), (value, tid, upd, old) in sorted(latest.items())
    ]
    return Suite(turns, questions)
