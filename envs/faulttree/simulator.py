"""Rule-based user simulator: answers from the hidden fault state, vaguely, sometimes wrongly.

Reproducible from its seed (`random.Random`, state snapshottable). Per check:
- the *reported* state of a node is fixed the first time it is checked: the truth, flipped
  with probability `error_rate` (a mistake; asking again repeats it, like a person who misread
  a gauge) until a rollback corrects it;
- each answer is vague with probability `vagueness`: a quarter of vague answers are "can't
  tell", the rest lean towards the reported state but with 15% chance lean the other way
  (honest uncertainty, never corrected);
- a mistake is, with probability `rollback_prob`, corrected `rollback_distance` turns later by
  a message that quotes the earlier turn ("At turn 4, when you asked me to ..., I said ...").
The hidden bookkeeping (which answers were mistakes) stays in the simulator; utterances carry
only what the user said.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from rapidfuzz import fuzz, process

from envs.faulttree.domains import DOMAINS
from envs.faulttree.generator import cap
from envs.faulttree.model import FaultTree

VAGUE_BLANK = 0.25
VAGUE_FLIP = 0.15

CRISP = ("{Obs}.", "I checked: {obs}.", "Okay, done. {Obs}.", "Right, {obs}.")
REPEAT = ("Like I said before, {obs}.", "Same as last time: {obs}.")
VAGUE_FAULTY = (
    "Hmm, hard to say. Maybe {obs}? I'm not sure.",
    "I think {obs}, but honestly I'm not certain.",
    "It seems a bit off... kind of looks like {obs}, hard to say.",
    "Could be that {obs}. I couldn't see very well.",
)
VAGUE_FINE = (
    "I think {obs}, more or less.",
    "Probably fine? {Obs}, I guess.",
    "Seems okay to me, {obs}, though I'm no expert.",
    "Not sure, but {obs}, I think.",
)
BLANK = (
    "Honestly, I can't tell. I don't really know what I'm looking for.",
    "I tried, but I couldn't make sense of it.",
    "Sorry, I couldn't get a proper look, no idea.",
)
ROLLBACK = (
    "Wait, I need to correct something. At turn {turn}, when you asked me to {instr}, I said {old}. {Excuse}; actually {new}.",
    "Sorry, about turn {turn}: I told you {old} when I was asked to {instr}. {Excuse}. It is really like this: {new}.",
    "Going back to what I said at turn {turn} ({instr}): I said {old}, but {excuse}. In fact {new}.",
)
HISTORY_WORDS = re.compile(
    r"\b(when|start|started|happen|happened|before|history|recent|recently|change|changed|symptom|since|notice|else)\b",
    re.I,
)
CONFUSED = (
    "I'm not sure what you mean. Tell me what to look at and I'll check it.",
    "Sorry, I don't follow. What should I look at?",
)


@dataclass
class Utterance:
    """One user message as the agent saw it, plus its structured meaning."""

    turn: int
    kind: str  # "check" | "question" | "rollback" | "smalltalk"
    text: str
    node: str | None = None
    says_faulty: bool | None = None  # None: no information
    strength: str = "crisp"  # "crisp" | "vague" | "blank" | "corrected"
    refers_to: int | None = None  # rollback: the turn it corrects


@dataclass
class SimState:
    rng_state: tuple
    reported: dict[str, bool] = field(default_factory=dict)
    first_turn: dict[str, int] = field(default_factory=dict)  # turn of the first informative answer
    first_text: dict[str, str] = field(default_factory=dict)
    crisp_said: set[str] = field(default_factory=set)  # nodes the user has answered crisply
    mistakes: set[str] = field(default_factory=set)  # hidden: nodes currently misreported
    pending: list[tuple[int, str]] = field(default_factory=list)  # (due turn, node)
    retracted: list[tuple[str, bool, int]] = field(default_factory=list)  # (node, wrong value, turn) corrected so far


class UserSimulator:
    def __init__(
        self,
        tree: FaultTree,
        causes: frozenset[str],
        seed: int,
        *,
        vagueness: float = 0.3,
        error_rate: float = 0.1,
        rollback_distance: int = 8,
        rollback_prob: float = 0.8,
    ) -> None:
        for name, v in (("vagueness", vagueness), ("error_rate", error_rate), ("rollback_prob", rollback_prob)):
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {v}")
        if rollback_distance < 1:
            raise ValueError(f"rollback_distance must be >= 1 turn, got {rollback_distance}")
        self.tree, self.causes = tree, causes
        self.truth = tree.evaluate(causes)
        self.vagueness, self.error_rate = vagueness, error_rate
        self.rollback_distance, self.rollback_prob = rollback_distance, rollback_prob
        self.domain = DOMAINS[tree.domain]
        self._rng = random.Random(seed)
        self.state = SimState(rng_state=self._rng.getstate())

    # --- snapshot ---------------------------------------------------------------------------
    def snapshot(self) -> SimState:
        import copy

        self.state.rng_state = self._rng.getstate()
        return copy.deepcopy(self.state)

    def restore(self, state: SimState) -> None:
        import copy

        self.state = copy.deepcopy(state)
        self._rng.setstate(self.state.rng_state)

    # --- answers -----------------------------------------------------------------------------
    def answer_check(self, node_id: str, turn: int, *, kind: str = "check", min_vagueness: float = 0.0) -> Utterance:
        st, rng = self.state, self._rng
        node = self.tree.nodes[node_id]
        first = node_id not in st.reported
        if first:
            wrong = node_id != self.tree.top and rng.random() < self.error_rate
            st.reported[node_id] = self.truth[node_id] != wrong
            if wrong:
                st.mistakes.add(node_id)
        value = st.reported[node_id]
        obs = node.check.if_faulty if value else node.check.if_fine
        if rng.random() < max(self.vagueness, min_vagueness):
            if rng.random() < VAGUE_BLANK:
                return Utterance(turn, kind, rng.choice(BLANK), node_id, None, "blank")
            lean = value if rng.random() >= VAGUE_FLIP else not value
            lean_obs = node.check.if_faulty if lean else node.check.if_fine
            text = rng.choice(VAGUE_FAULTY if lean else VAGUE_FINE).format(obs=lean_obs, Obs=cap(lean_obs))
            utt = Utterance(turn, kind, text, node_id, lean, "vague")
        else:
            text = rng.choice(REPEAT if node_id in st.crisp_said else CRISP).format(obs=obs, Obs=cap(obs))
            st.crisp_said.add(node_id)
            utt = Utterance(turn, kind, text, node_id, value, "crisp")
        if node_id not in st.first_turn:
            st.first_turn[node_id] = turn
            st.first_text[node_id] = obs
            if node_id in st.mistakes and rng.random() < self.rollback_prob:
                st.pending.append((turn + self.rollback_distance, node_id))
        return utt

    def answer_question(self, question: str, turn: int) -> Utterance:
        """Free questions: about a node -> an informal (vaguer) check; about the history -> small talk."""
        node_id = self.match_node(question)
        if node_id is not None:
            return self.answer_check(node_id, turn, kind="question", min_vagueness=0.5)
        if HISTORY_WORDS.search(question):
            text = f"{self.tree.symptom} {self._rng.choice(self.domain.history)}"
        else:
            text = self._rng.choice(CONFUSED)
        return Utterance(turn, "smalltalk", text)

    def match_node(self, question: str) -> str | None:
        names = {n.label: n.id for n in self.tree.nodes.values()}
        names.update({a: n.id for n in self.tree.nodes.values() for a in n.aliases})
        best = process.extractOne(question, list(names), scorer=fuzz.token_set_ratio, score_cutoff=85)
        return names[best[0]] if best else None

    def due_rollbacks(self, turn: int) -> list[Utterance]:
        """Corrections that fall due at `turn` (after the agent's action at that turn)."""
        st, out = self.state, []
        for due, node_id in sorted(st.pending):
            if due > turn:
                continue
            st.pending.remove((due, node_id))
            node = self.tree.nodes[node_id]
            wrong, right = st.reported[node_id], self.truth[node_id]
            st.reported[node_id] = right
            st.mistakes.discard(node_id)
            st.retracted.append((node_id, wrong, st.first_turn[node_id]))
            old = node.check.if_faulty if wrong else node.check.if_fine
            new = node.check.if_faulty if right else node.check.if_fine
            excuse = self._rng.choice(self.domain.excuses)
            instr = node.check.instruction[:1].lower() + node.check.instruction[1:]
            text = self._rng.choice(ROLLBACK).format(
                turn=st.first_turn[node_id], instr=instr, old=f'"{old}"', new=new, excuse=excuse, Excuse=cap(excuse)
            )
            out.append(Utterance(turn, "rollback", text, node_id, right, "corrected", refers_to=st.first_turn[node_id]))
        return out
