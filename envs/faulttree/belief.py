"""Posterior over candidate cause sets given the user's (noisy, vague, retractable) answers.

Shared by the scripted expert (which acts on it) and the env (which lists the still-relevant
checks and the most plausible diagnoses in `available_actions`). It only ever sees what the
agent saw: the structured form of the user's utterances, never the hidden fault state.

Noise model (assumed, not the env's true parameters): a crisp answer is wrong with probability
0.1, a vague answer leans the wrong way with probability 0.3, a correction from a rollback is
wrong with probability 0.02; "can't tell" answers carry no evidence. A rollback replaces every
earlier answer about that node.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from envs.faulttree.model import FaultTree
from envs.faulttree.scenario import Hypotheses
from envs.faulttree.simulator import Utterance

DEFAULT_NOISE: dict[str, float] = {"crisp": 0.10, "vague": 0.30, "corrected": 0.02}


@dataclass(frozen=True)
class Evidence:
    node: str
    faulty: bool
    strength: str  # "crisp" | "vague" | "corrected"


@dataclass
class Belief:
    tree: FaultTree
    hyp: Hypotheses
    noise: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_NOISE))

    def posterior(self, evidence: Iterable[Evidence]) -> np.ndarray:
        logp = np.log(self.hyp.prior)
        for e in evidence:
            eps = self.noise[e.strength]
            agrees = self.hyp.states[:, self.tree.index[e.node]] == e.faulty
            logp = logp + np.where(agrees, np.log1p(-eps), np.log(eps))
        logp -= logp.max()
        p = np.exp(logp)
        return p / p.sum()

    def marginals(self, post: np.ndarray) -> np.ndarray:
        """P(node faulty) for every node (tree.ids order)."""
        return post @ self.hyp.states

    def info_gain(self, marginals: np.ndarray, eps: float | None = None) -> np.ndarray:
        """Mutual information (bits) between a node's state and a noisy answer about it.

        I(H; answer) = I(X_node; answer) because the answer depends on the hypothesis only
        through the node's state, so this is the expected entropy drop over cause sets.
        """
        eps = self.noise["crisp"] if eps is None else eps
        q = marginals * (1 - eps) + (1 - marginals) * eps
        return np.clip(_h2(q) - _h2(np.array(eps)), 0.0, None)


def _h2(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return -(p * np.log2(p) + (1 - p) * np.log2(1 - p))


def evidence_from(utterances: Sequence[Utterance]) -> list[Evidence]:
    """Turn the dialogue into evidence, applying rollbacks (a correction supersedes the node's past)."""
    out: list[Evidence] = []
    for u in utterances:
        node = getattr(u, "node", None)
        says = getattr(u, "says_faulty", None)
        if node is None or says is None:
            continue
        if u.kind == "rollback":
            out = [e for e in out if e.node != node]
            out.append(Evidence(node, says, "corrected"))
        elif u.strength in ("crisp", "vague"):
            out.append(Evidence(node, says, u.strength))
    return out
