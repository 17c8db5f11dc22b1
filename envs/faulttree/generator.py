"""Seeded fault-tree generator: realistic trees of 50-200 nodes from the domain vocabularies.

Shape: top event (OR) -> subsystem events (OR) -> component events (OR over failure modes),
with redundant parts turned into AND / k-of-n groups of numbered instances, and a few shared
components (common causes such as a control board or a ground strap) hung under several
subsystems, which makes the tree a DAG. The node budget is drawn per tree and filled by
growing the plan one step at a time (add a component, a failure mode or an instance), so
sizes spread over the whole range instead of clustering at the vocabulary's maximum.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field

from envs.faulttree.domains import DOMAINS, Domain
from envs.faulttree.model import Check, FaultTree, Gate, Kind, Node
from envs.faulttree.vocab_parts import TYPES

MIN_NODES = 50
MAX_NODES = 200


def stable_seed(*parts: object) -> int:
    """A seed from any parts, stable across processes (unlike `hash`)."""
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "little")


def cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def plural(name: str) -> str:
    if name.endswith("y") and name[-2:-1] not in "aeiou":
        return name[:-1] + "ies"
    if name.endswith(("s", "sh", "ch", "x")):
        return name + "es"
    return name + "s"


@dataclass
class _Part:
    """A component in the plan: which failure modes it has and how many redundant instances."""

    name: str
    type: str
    modes: list[int]
    instances: int = 1  # >1: a redundancy group
    k: int = 0  # failed instances needed; == instances means AND
    redundant_ok: bool = False

    def size(self) -> int:
        per = 1 + len(self.modes)
        return per if self.instances == 1 else 1 + self.instances * per


@dataclass
class _Plan:
    subsystems: dict[str, list[_Part]] = field(default_factory=dict)
    shared: list[tuple[_Part, list[str]]] = field(default_factory=list)

    def size(self) -> int:
        return (
            1
            + len(self.subsystems)
            + sum(p.size() for parts in self.subsystems.values() for p in parts)
            + sum(p.size() for p, _ in self.shared)
        )


def _parse(spec: str) -> tuple[str, str, bool]:
    redundant = spec.endswith("*")
    name, type_ = spec.rstrip("*").split("@")[0].split(":")
    return name, type_, redundant


def _shared_parents(spec: str) -> list[str]:
    return spec.split("@")[1].split(",") if "@" in spec else []


def generate_tree(
    domain: str, seed: int, *, target_nodes: int | None = None, min_nodes: int = MIN_NODES, max_nodes: int = MAX_NODES
) -> FaultTree:
    """A reproducible fault tree for `domain` (see `DOMAINS`) with about `target_nodes` nodes."""
    if domain not in DOMAINS:
        raise ValueError(f"unknown domain {domain!r}; choose from {sorted(DOMAINS)}")
    rng = random.Random(stable_seed("tree", domain, seed))
    dom = DOMAINS[domain]
    top = rng.choice(dom.tops)
    target = target_nodes or int(rng.triangular(min_nodes, max_nodes, 160))
    target = max(min_nodes, min(max_nodes, target))
    plan = _plan(dom, top.subsystems, target, max_nodes, rng)
    return _materialise(dom, top, plan, rng, name_seed=seed)


def _plan(dom: Domain, subsystem_keys: tuple[str, ...], target: int, max_nodes: int, rng: random.Random) -> _Plan:
    plan = _Plan()
    pool: list[tuple[str, _Part]] = []
    for key in subsystem_keys:
        plan.subsystems[key] = []
        specs = list(dom.subsystems[key].components)
        rng.shuffle(specs)
        for spec in specs:
            name, type_, redundant = _parse(spec)
            pool.append((key, _Part(name, type_, [], redundant_ok=redundant)))
    # Seed every subsystem with two components so none is an empty shell.
    for key in subsystem_keys:
        for _ in range(2):
            idx = next((i for i, (k, _) in enumerate(pool) if k == key), None)
            if idx is not None:
                _, part = pool.pop(idx)
                _init_part(part, rng)
                plan.subsystems[key].append(part)
    # One or two shared components, each under two or three subsystems.
    shared_specs = list(dom.shared)
    rng.shuffle(shared_specs)
    wanted = rng.randint(1, 2)
    for spec in shared_specs:
        allowed = [k for k in subsystem_keys if k in _shared_parents(spec)]
        if len(allowed) < 2 or len(plan.shared) >= wanted:
            continue
        name, type_, _ = _parse(spec)
        part = _Part(name, type_, [])
        _init_part(part, rng)
        parents = rng.sample(allowed, k=min(len(allowed), rng.randint(2, 3)))
        plan.shared.append((part, parents))

    def grow() -> bool:
        """One growth step; False when nothing can grow without passing `max_nodes`."""
        options = []
        if pool:
            options.append("add")
        parts = [p for ps in plan.subsystems.values() for p in ps] + [p for p, _ in plan.shared]
        can_mode = [p for p in parts if len(p.modes) < len(TYPES[p.type][1])]
        can_inst = [p for p in parts if p.redundant_ok and p.instances < 4]
        options += ["mode"] * bool(can_mode) + ["instance"] * bool(can_inst)
        rng.shuffle(options)
        for option in options:
            before = plan.size()
            if option == "add":
                key, part = pool.pop(rng.randrange(len(pool)))
                _init_part(part, rng)
                plan.subsystems[key].append(part)
            elif option == "mode":
                part = rng.choice(can_mode)
                free = [i for i in range(len(TYPES[part.type][1])) if i not in part.modes]
                part.modes.append(rng.choice(free))
            else:
                part = rng.choice(can_inst)
                part.instances = 2 if part.instances == 1 else part.instances + 1
                part.k = part.instances if part.instances == 2 else rng.randint(2, part.instances - 1)
            if plan.size() <= max_nodes:
                return True
            _undo(plan, option, part, key if option == "add" else None, pool, before)
        return False

    while plan.size() < target and grow():
        pass
    return plan


def _init_part(part: _Part, rng: random.Random) -> None:
    n_modes = len(TYPES[part.type][1])
    part.modes = sorted(rng.sample(range(n_modes), k=min(n_modes, 2)))


def _undo(plan: _Plan, option: str, part: _Part, key: str | None, pool: list, before: int) -> None:
    if option == "add" and key is not None:
        plan.subsystems[key].remove(part)
        pool.append((key, part))
    elif option == "mode":
        part.modes.pop()
    else:
        part.instances = 1 if part.instances == 2 else part.instances - 1
        part.k = part.instances if part.instances == 2 else min(part.k, part.instances - 1) if part.instances > 1 else 0


class _Ids:
    def __init__(self) -> None:
        self.n = {"E": 0, "B": 0}

    def next(self, prefix: str) -> str:
        self.n[prefix] += 1
        return f"{prefix}{self.n[prefix]}"


def _materialise(dom: Domain, top, plan: _Plan, rng: random.Random, name_seed: int) -> FaultTree:
    ids = _Ids()
    nodes: list[Node] = []
    sub_children: dict[str, list[str]] = {key: [] for key in plan.subsystems}
    sub_ids = {key: ids.next("E") for key in plan.subsystems}

    def component(name: str, type_: str, modes: list[int], alias: bool) -> str:
        (label, instr, faulty, fine), mode_list = TYPES[type_]
        cid = ids.next("E")
        children = []
        mode_nodes = []
        for m in modes:
            ml, mi, mf, mo = mode_list[m]
            bid = ids.next("B")
            children.append(bid)
            mode_nodes.append(
                Node(
                    id=bid,
                    label=cap(ml.format(C=cap(name), c=name)),
                    kind=Kind.BASIC,
                    description=f"Root cause in the {name}.",
                    check=Check(mi.format(C=cap(name), c=name), mf.format(c=name), mo.format(c=name)),
                )
            )
        nodes.append(
            Node(
                id=cid,
                label=cap(label.format(C=cap(name), c=name)),
                kind=Kind.INTERMEDIATE,
                description=f"The {name} fails; occurs when any one of its failure modes is present.",
                check=Check(instr.format(C=cap(name), c=name), faulty.format(c=name), fine.format(c=name)),
                gate=Gate.OR,
                children=tuple(children),
                aliases=(name,) if alias else (),
            )
        )
        nodes.extend(mode_nodes)
        return cid

    def part_node(part: _Part) -> str:
        if part.instances == 1:
            return component(part.name, part.type, part.modes, alias=True)
        gid = ids.next("E")
        placeholder = len(nodes)
        nodes.append(None)  # type: ignore[arg-type]  # keep document order: group before instances
        inst = [component(f"{part.name} {i + 1}", part.type, part.modes, alias=True) for i in range(part.instances)]
        many = plural(part.name)
        if part.k == part.instances:
            label = f"All {part.instances} {many} failed" if part.instances > 2 else f"Both {many} failed"
            desc = f"Every redundant {part.name} is down; one working {part.name} is enough."
            faulty, fine = f"none of the {many} is working", f"at least one {part.name} is working"
            gate, k = Gate.AND, None
        else:
            label = f"At least {part.k} of {part.instances} {many} failed"
            desc = f"The system needs {part.instances - part.k + 1} of its {part.instances} {many}; it fails when {part.k} or more are down."
            faulty = f"{part.k} or more of the {part.instances} {many} are not working"
            fine = f"at most {part.k - 1} of them {'is' if part.k == 2 else 'are'} down"
            gate, k = Gate.KOFN, part.k
        nodes[placeholder] = Node(
            id=gid,
            label=label,
            kind=Kind.INTERMEDIATE,
            description=desc,
            check=Check(f"Check how many of the {many} are working", faulty, fine),
            gate=gate,
            k=k,
            children=tuple(inst),
            aliases=(many,),
        )
        return gid

    top_node_index = len(nodes)
    nodes.append(None)  # type: ignore[arg-type]
    shared_ids: list[tuple[str, list[str]]] = []
    for key, parts in plan.subsystems.items():
        sub = dom.subsystems[key]
        index = len(nodes)
        nodes.append(None)  # type: ignore[arg-type]
        for part in parts:
            sub_children[key].append(part_node(part))
        for part, parents in plan.shared:
            if parents and parents[0] == key and part.name not in {n for n, _ in shared_ids}:
                sid = part_node(part)
                shared_ids.append((part.name, parents))
                for p in parents:
                    sub_children[p].append(sid)
        nodes[index] = (key, sub)  # type: ignore[call-overload]
    # Fill subsystem nodes now that shared children are known (a shared part may belong to a later subsystem).
    for i, item in enumerate(nodes):
        if isinstance(item, tuple):
            key, sub = item
            instr, faulty, fine = sub.check
            nodes[i] = Node(
                id=sub_ids[key],
                label=sub.label,
                kind=Kind.INTERMEDIATE,
                description=f"A {dom.title.lower()} subsystem problem; occurs when any one of its causes is present.",
                check=Check(instr, faulty, fine),
                gate=Gate.OR,
                children=tuple(sub_children[key]),
            )
    t_instr, t_faulty, t_fine = top.check
    symptom = rng.choice(top.symptoms)
    nodes[top_node_index] = Node(
        id="T",
        label=top.label,
        kind=Kind.TOP,
        description=f"The reported problem: {top.label.lower()}.",
        check=Check(t_instr, t_faulty, t_fine),
        gate=Gate.OR,
        children=tuple(sub_ids[k] for k in plan.subsystems),
    )
    return FaultTree.build(
        name=f"{dom.title}: {top.label.lower()} #{name_seed}", domain=dom.name, top="T", symptom=symptom, nodes=nodes
    )
