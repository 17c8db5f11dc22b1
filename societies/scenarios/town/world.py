"""The town's world: the map of places and their activities, and the cast of residents (`town_personas`).

Static data and the personas built from it; `scenario.py` plays a day on it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from societies.personas import FIRST_NAMES, Persona

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
