"""What the BabyAI agent sees, in words, and where it can walk: read from minigrid's own view.

The agent sees minigrid's partial view (7x7 ahead, walls occlude). Each visible object is named
by colour and type (doors with their state: `blue locked door`) and numbered by distance among
objects of the same name (`red ball 1` is the nearest red ball), as AgentGym names them. A `go to`
path is a breadth-first search over (cell, direction) states through cells the agent can see and
walk on, ending facing the object; it never passes through unseen cells.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np

LEFT, RIGHT, FORWARD, PICKUP, DROP, TOGGLE = 0, 1, 2, 3, 4, 5
DIR_VEC = ((1, 0), (0, 1), (-1, 0), (0, -1))  # minigrid's agent_dir 0..3: east, south, west, north
OBJECTS = ("key", "ball", "box", "door", "goal", "lava")


@dataclass(frozen=True)
class Seen:
    """One visible object: its name with number, absolute cell, and offset (ahead, right) from the agent."""

    name: str
    pos: tuple[int, int]
    ahead: int
    right: int


def object_name(obj: Any) -> str:
    if obj.type == "door":
        state = "open" if obj.is_open else ("locked" if obj.is_locked else "closed")
        return f"{obj.color} {state} door"
    return f"{obj.color} {obj.type}"


def visible(game: Any) -> tuple[list[Seen], set[tuple[int, int]]]:
    """The objects in view (nearest first, numbered per name) and every visible cell (absolute)."""
    grid, mask = game.gen_obs_grid()
    size = game.agent_view_size
    px, py = (int(v) for v in game.agent_pos)
    fx, fy = DIR_VEC[game.agent_dir]
    rx, ry = -fy, fx  # minigrid's right_vec
    cells: set[tuple[int, int]] = set()
    found: list[tuple[int, int, int, str, tuple[int, int]]] = []
    for i in range(size):
        for j in range(size):
            if not mask[i, j]:
                continue
            ahead, right = size - 1 - j, i - size // 2
            x, y = px + fx * ahead + rx * right, py + fy * ahead + ry * right
            if not (0 <= x < game.width and 0 <= y < game.height):
                continue
            cells.add((x, y))
            if ahead == 0 and right == 0:
                continue  # the agent's own cell (minigrid draws the carried object there)
            obj = grid.get(i, j)
            if obj is not None and obj.type in OBJECTS:
                found.append((abs(ahead) + abs(right), ahead, right, object_name(obj), (x, y)))
    found.sort(key=lambda f: (f[0], -f[1], f[2]))
    counts: dict[str, int] = {}
    seen = []
    for _, ahead, right, name, pos in found:
        counts[name] = counts.get(name, 0) + 1
        seen.append(Seen(f"{name} {counts[name]}", pos, ahead, right))
    return seen, cells


def walkable(game: Any, pos: tuple[int, int]) -> bool:
    cell = game.grid.get(*pos)
    return cell is None or (cell.can_overlap() and cell.type != "lava")


def path_to_face(game: Any, target: tuple[int, int], cells: set[tuple[int, int]]) -> list[int] | None:
    """Shortest primitive moves (left/right/forward) through visible walkable cells to face `target`."""
    start = (int(game.agent_pos[0]), int(game.agent_pos[1]), int(game.agent_dir))
    back: dict[tuple[int, int, int], tuple[tuple[int, int, int], int] | None] = {start: None}
    queue = deque([start])
    while queue:
        state = queue.popleft()
        x, y, d = state
        if (x + DIR_VEC[d][0], y + DIR_VEC[d][1]) == target:
            moves: list[int] = []
            while back[state] is not None:
                state, move = back[state]  # type: ignore[misc]
                moves.append(move)
            return moves[::-1]
        nxt = [((x, y, (d - 1) % 4), LEFT), ((x, y, (d + 1) % 4), RIGHT)]
        fwd = (x + DIR_VEC[d][0], y + DIR_VEC[d][1])
        if fwd in cells and walkable(game, fwd):
            nxt.append(((fwd[0], fwd[1], d), FORWARD))
        for s, move in nxt:
            if s not in back:
                back[s] = (state, move)
                queue.append(s)
    return None


def _steps(n: int) -> str:
    return f"{n} step" + ("" if n == 1 else "s")


def where(s: Seen) -> str:
    if s.right == 0:
        return f"{_steps(s.ahead)} in front of you"
    side = f"{_steps(abs(s.right))} to your {'right' if s.right > 0 else 'left'}"
    return side if s.ahead == 0 else f"{_steps(s.ahead)} in front of you and {side}"


def describe(game: Any, seen: list[Seen]) -> str:
    """The agent's view in sentences: objects nearest first, what blocks the way ahead, what it carries."""
    if seen:
        parts = ["In front of you in this room, you can see several objects:"]
        parts += [f"There is a {s.name} {where(s)}." for s in seen]
    else:
        parts = ["You cannot see any objects within sight."]
    fx, fy = DIR_VEC[game.agent_dir]
    x, y = (int(v) for v in game.agent_pos)
    for dist in range(1, max(game.width, game.height)):
        cell = game.grid.get(x + fx * dist, y + fy * dist)
        if cell is not None and not cell.can_overlap():
            parts.append(f"You are facing a {object_name(cell)} {_steps(dist)} away.")
            break
    carrying = game.carrying
    parts.append(f"You are carrying a {object_name(carrying)}." if carrying else "You are not carrying anything.")
    return " ".join(parts)


def front_cell(game: Any) -> tuple[tuple[int, int], Any]:
    pos = tuple(int(v) for v in game.front_pos)
    return (pos[0], pos[1]), game.grid.get(*pos)


def primitive_problem(game: Any, move: int) -> str | None:
    """Why a primitive move would change nothing here (the contract refuses no-ops), or None."""
    _, cell = front_cell(game)
    if move == FORWARD and cell is not None and not cell.can_overlap():
        return f"you cannot move forward: a {object_name(cell)} is in front of you"
    if move == PICKUP:
        if game.carrying is not None:
            return f"you cannot pick up: you are already carrying a {object_name(game.carrying)}; drop it first"
        if cell is None or not cell.can_pickup():
            return "there is nothing in front of you to pick up"
    if move == DROP:
        if game.carrying is None:
            return "you cannot drop: you are not carrying anything"
        if cell is not None:
            return f"you cannot drop here: a {object_name(cell)} is in front of you"
    if move == TOGGLE:
        if cell is None or cell.type not in ("door", "box"):
            return "there is nothing in front of you to toggle (only doors and boxes)"
        if cell.type == "door" and cell.is_locked:
            key = game.carrying
            if key is None or key.type != "key" or key.color != cell.color:
                return f"the {object_name(cell)} needs a {cell.color} key to open"
    return None


def macro_problem(game: Any, verb: str, name: str) -> str | None:
    """Why AgentGym's `<verb> <object> <n>` cannot apply to the named object now, or None."""
    kind = name.rsplit(" ", 1)[0]  # "red ball 1" -> "red ball"; "blue locked door 2" -> "blue locked door"
    if verb == "pick up":
        if kind.split()[-1] not in ("key", "ball", "box"):
            return f"you cannot pick up the {name}: only keys, balls and boxes can be carried"
        if game.carrying is not None:
            return f"you cannot pick up: you are already carrying a {object_name(game.carrying)}; drop it first"
    if verb == "go through" and not kind.endswith(" open door"):
        return f"you cannot go through the {name}: it is not an open door (toggle and go through a closed one)"
    if verb == "toggle and go through":
        if not kind.endswith((" closed door", " locked door")):
            return f"you cannot toggle and go through the {name}: it is not a closed or locked door"
        if kind.endswith(" locked door"):
            color, key = kind.split()[0], game.carrying
            if key is None or key.type != "key" or key.color != color:
                return f"the {name} is locked: carry a {color} key to open it"
    return None


def grid_key(game: Any) -> tuple[Any, ...]:
    """A hashable digest of the game state (agent pose, carried object, every cell's encoding)."""
    carrying = object_name(game.carrying) if game.carrying else ""
    cells = np.ascontiguousarray(game.grid.encode()).tobytes()
    return (tuple(int(v) for v in game.agent_pos), int(game.agent_dir), carrying, cells)
