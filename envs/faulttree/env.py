"""FaultTreeEnv: help a simulated user localise a malfunction over a multi-turn dialogue.

Registered as `agentsim/FaultTree-v0`. The agent sees the fault tree (compact rendering) and
the user's complaint, then acts with `check[<node>]`, `ask[<question>]` or
`diagnose[<cause>; ...]`. The user answers from the hidden fault state through the rule-based
simulator (vague, sometimes wrong, later correcting himself). The episode terminates on a
diagnosis (reward in `reward.py`) and is truncated at `max_turns` dialogue turns (a limit of
the task, stated in the instruction). A bad action changes nothing but the `invalid_actions`
counter and returns an `error`. A limit on all steps, bad ones included, comes from the
registration (`max_episode_steps=80`, applied by `gymnasium.make` through `TimeLimit`).
After the episode ended every step is refused with the ending's flags again (the contract's rule).
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from envs.contract import MAX_ACTION_CHARS, episode_over_message, invalid_action_message
from envs.faulttree.actions import TEMPLATES, ActionError, AskAction, CheckAction, DiagnoseAction, parse_action
from envs.faulttree.belief import Belief, evidence_from
from envs.faulttree.dataset import DEFAULT_ENTRIES, DOMAIN_NAMES, Entry, load_dataset, make_entry, split_sizes
from envs.faulttree.expert import ExpertConfig, check_gains, decide
from envs.faulttree.model import FaultTree
from envs.faulttree.render import render_tree
from envs.faulttree.rephrase import as_rephraser
from envs.faulttree.reward import diagnosis_reward, used_retracted_fact
from envs.faulttree.scenario import hypotheses
from envs.faulttree.serving import SERVER
from envs.faulttree.simulator import SimState, UserSimulator, Utterance
from envs.registry import register_env
from envs.spaces import FreeText

log = logging.getLogger(__name__)

MAX_OBS_CHARS = 65_536


@dataclass
class _Episode:
    """Everything that changes during an episode (what `snapshot` copies)."""

    entry: Entry
    turn: int = 0
    checks: int = 0
    questions: int = 0
    invalid: int = 0
    dialogue: list[Utterance] = field(default_factory=list)
    done: bool = False
    ending: tuple[bool, bool] = (False, False)  # (terminated, truncated) of the step that ended it
    diagnosis: tuple[str, ...] = ()
    score: float = 0.0
    sim: SimState | None = None


@register_env("faulttree", id="agentsim/FaultTree-v0", max_episode_steps=40, server=SERVER)
class FaultTreeEnv(gym.Env):
    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(
        self,
        *,
        domain: str | None = None,
        vagueness: float = 0.3,
        error_rate: float = 0.1,
        rollback_distance: int = 8,
        rollback_prob: float = 0.8,
        max_turns: int = 40,
        split: str = "test",
        dataset_path: str | None = None,
        n_entries: int = DEFAULT_ENTRIES,
        base_seed: int = 0,
        max_listed_checks: int = 12,
        max_listed_diagnoses: int = 3,
        show_tree: bool = True,
        rephraser: Any = None,
        expert: ExpertConfig | None = None,
        render_mode: str | None = None,
    ) -> None:
        if domain is not None and domain not in DOMAIN_NAMES:
            raise ValueError(f"unknown domain {domain!r}; choose from {list(DOMAIN_NAMES)}")
        if max_turns < 1:
            raise ValueError("max_turns must be >= 1")
        self.domain, self.split = domain, split
        self.sim_params: dict[str, Any] = dict(  # UserSimulator keyword args (floats and an int)
            vagueness=vagueness, error_rate=error_rate, rollback_distance=rollback_distance, rollback_prob=rollback_prob
        )
        self.max_turns = max_turns
        self.base_seed = base_seed
        self.max_listed_checks, self.max_listed_diagnoses = max_listed_checks, max_listed_diagnoses
        self.show_tree = show_tree
        self.rephrase = as_rephraser(rephraser)
        self.expert_config = expert or ExpertConfig()
        self.render_mode = render_mode
        self.observation_space = FreeText(MAX_OBS_CHARS)
        self.action_space = FreeText(MAX_ACTION_CHARS, min_length=1)
        self._dataset = load_dataset(str(dataset_path)) if dataset_path else None
        if self._dataset is not None:
            pool = self._dataset.entries.get(split, [])
            self._pool = [e for e in pool if domain is None or e.domain == domain]
            if not self._pool:
                raise ValueError(f"dataset {dataset_path} has no entries for split={split!r} domain={domain!r}")
            self._n = len(self._pool)
        else:
            self._n = split_sizes(n_entries).get(split, 0)
            if self._n == 0:
                raise ValueError(f"unknown or empty split {split!r}")
        self._ep: _Episode | None = None
        self._tree: FaultTree | None = None
        self._sim: UserSimulator | None = None
        self._belief: Belief | None = None
        self._cache: tuple[int, Any] | None = None
        self._last_obs = ""

    # --- episode setup ---------------------------------------------------------------------------
    def _entry(self, index: int) -> tuple[Entry, FaultTree]:
        if self._dataset is not None:
            entry = self._pool[index]
            return entry, self._dataset.trees[entry.tree_id]
        return make_entry(self.split, index, self.base_seed, self.domain)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        options = options or {}
        index = options.get("entry_index")
        if index is None:
            index = int(self.np_random.integers(self._n))
        if not 0 <= int(index) < self._n:
            raise ValueError(f"entry_index {index} out of range [0, {self._n})")
        entry, tree = self._entry(int(index))
        self._tree = tree
        causes = frozenset(entry.causes)
        sim_seed = int(self.np_random.integers(2**31))
        self._sim = UserSimulator(tree, causes, sim_seed, **self.sim_params)
        self._belief = Belief(tree, hypotheses(tree))
        self._ep = _Episode(entry=entry)
        self._cache = None
        complaint = self._say(tree.symptom)
        parts = [self.instruction]
        if self.show_tree:
            parts.append(render_tree(tree))
        parts.append(f"User: {complaint}")
        self._last_obs = "\n\n".join(parts)
        return self._last_obs, self._info()

    @property
    def num_entries(self) -> int:
        """How many tasks the split holds (`reset(options={"entry_index": i})` picks one)."""
        return self._n

    @property
    def instruction(self) -> str:
        tree = self._require_tree()
        top = tree.nodes[tree.top]
        return (
            f"You are a maintenance assistant. A user reports a fault: {top.label.lower()} ({tree.domain}). "
            f"Find the root cause(s) in the fault tree by asking the user to perform checks with check[<node>], "
            f"asking questions with ask[<question>], and finish with diagnose[<root cause>; ...] naming basic events. "
            f"The user may be vague or mistaken and may correct earlier answers. At most {self.max_turns} turns."
        )

    # --- stepping -------------------------------------------------------------------------------
    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        ep, tree, sim = self._require_episode()
        if ep.done:
            return self._after_end(ep)
        try:
            parsed = parse_action(action, tree)
        except ActionError as exc:
            return self._invalid(ep, str(exc))
        ep.turn += 1
        self._cache = None
        reward, terminated = 0.0, False
        if isinstance(parsed, DiagnoseAction):
            ep.diagnosis = parsed.nodes
            ep.score = reward = diagnosis_reward(parsed.nodes, ep.entry.causes)
            ep.done = terminated = True
            named = "; ".join(tree.nodes[n].label for n in parsed.nodes)
            truth = "; ".join(tree.nodes[n].label for n in ep.entry.causes)
            obs = f"You diagnosed: {named}. The actual root cause(s): {truth}. Score {reward:.2f}."
        else:
            if isinstance(parsed, CheckAction):
                ep.checks += 1
                utt = sim.answer_check(parsed.node, ep.turn)
            else:
                assert isinstance(parsed, AskAction)
                ep.questions += 1
                utt = sim.answer_question(parsed.question, ep.turn)
            utt.text = self._say(utt.text)
            ep.dialogue.append(utt)
            lines = [f"User: {utt.text}"]
            for rb in sim.due_rollbacks(ep.turn):
                rb.text = self._say(rb.text)
                ep.dialogue.append(rb)
                lines.append(f"User: {rb.text}")
            obs = "\n".join(lines)
        truncated = not terminated and ep.turn >= self.max_turns
        if truncated:
            ep.done = True
            obs += f"\n(The turn limit of {self.max_turns} is reached without a diagnosis.)"
        ep.ending = (terminated, truncated)
        self._last_obs = obs
        return obs, float(reward), terminated, truncated, self._info()

    def _invalid(self, ep: _Episode, problem: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        ep.invalid += 1
        info = self._info()
        msg = invalid_action_message(problem, info["available_actions"], TEMPLATES)
        info["error"] = msg
        return msg, 0.0, False, False, info

    def _after_end(self, ep: _Episode) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """The contract's after-end rule: refused, nothing changes, the ending's flags again."""
        how = "a diagnosis was given" if ep.ending[0] else f"the turn limit of {self.max_turns} was reached"
        info = self._info()
        info["error"] = msg = episode_over_message(how)
        return msg, 0.0, ep.ending[0], ep.ending[1], info

    def _say(self, text: str) -> str:
        if self.rephrase is None:
            return text
        return self.rephrase(text, self._require_tree().nodes[self._require_tree().top].label)

    # --- belief, actions, expert -------------------------------------------------------------------
    def _analysis(self) -> tuple[np.ndarray, list, np.ndarray]:
        ep, _, _ = self._require_episode()
        key = len(ep.dialogue)
        if self._cache is None or self._cache[0] != key:
            evidence = evidence_from(ep.dialogue)
            post = self._belief.posterior(evidence)  # type: ignore[union-attr]
            self._cache = (key, (post, evidence, check_gains(self._belief, post, evidence, self.expert_config)))  # type: ignore[arg-type]
        return self._cache[1]

    def available_actions(self) -> list[str]:
        ep, tree, _ = self._require_episode()
        if ep.done:
            return []
        post, _, gains = self._analysis()
        idx = [j for j in np.argsort(-gains, kind="stable")[: self.max_listed_checks] if gains[j] > 1e-4]
        checks = [f"check[{tree.nodes[tree.ids[j]].label}]" for j in sorted(idx)]  # tree order: no ranking hint
        top_h = np.argsort(-post, kind="stable")[: self.max_listed_diagnoses]
        diags = sorted({self._diag_text(self._belief.hyp.sets[h]) for h in top_h})  # type: ignore[union-attr]
        expert = self.expert_action()
        actions = checks + diags
        if expert not in actions:  # e.g. when more checks tie than are listed
            actions.append(expert)
        return actions

    def _diag_text(self, causes: frozenset[str] | tuple[str, ...]) -> str:
        tree = self._require_tree()
        return "diagnose[" + "; ".join(tree.nodes[c].label for c in sorted(causes, key=tree.index.__getitem__)) + "]"

    def expert_action(self) -> str:
        """The scripted expert's choice now (deterministic); see `expert.py`."""
        ep, tree, _ = self._require_episode()
        _, evidence, _ = self._analysis()
        d = decide(self._belief, evidence, self.max_turns - ep.turn, self.expert_config)  # type: ignore[arg-type]
        if d.kind == "diagnose":
            return self._diag_text(d.causes)
        return f"check[{tree.nodes[d.node].label}]"  # type: ignore[index]

    # --- info, snapshot, render ----------------------------------------------------------------------
    def _info(self) -> dict[str, Any]:
        ep, tree, sim = self._require_episode()
        info: dict[str, Any] = {
            "instruction": self.instruction,
            "available_actions": self.available_actions(),
            "action_templates": [] if ep.done else list(TEMPLATES),
            "entry_id": ep.entry.id,
            "domain": tree.domain,
            "tree_nodes": len(tree),
            "turn": ep.turn,
            "turns": ep.turn,
            "max_turns": self.max_turns,
            "checks_used": ep.checks,
            "questions_asked": ep.questions,
            "invalid_actions": ep.invalid,
            "rollbacks_seen": sum(1 for u in ep.dialogue if u.kind == "rollback"),
        }
        if ep.done:
            retracted = [r for r in sim.state.retracted]
            info.update(
                {
                    "diagnosis": list(ep.diagnosis),
                    "true_causes": list(ep.entry.causes),
                    "success": bool(ep.diagnosis) and set(ep.diagnosis) == set(ep.entry.causes),
                    "score": ep.score,
                    "used_retracted_fact": used_retracted_fact(tree, ep.diagnosis, retracted),
                    "mistakes_made": sum(1 for _ in sim.state.mistakes) + len(retracted),
                }
            )
        return info

    def snapshot(self) -> dict[str, Any]:
        ep, _, sim = self._require_episode()
        ep_copy = copy.deepcopy(ep)
        ep_copy.sim = sim.snapshot()
        return {
            "episode": ep_copy,
            "tree": self._tree,
            "np_random": copy.deepcopy(self.np_random.bit_generator.state),
            "last_obs": self._last_obs,
        }

    def restore(self, snapshot: dict[str, Any]) -> None:
        ep: _Episode = copy.deepcopy(snapshot["episode"])
        tree: FaultTree = snapshot["tree"]
        self._tree = tree
        self._sim = UserSimulator(tree, frozenset(ep.entry.causes), 0, **self.sim_params)
        assert ep.sim is not None
        self._sim.restore(ep.sim)
        self._belief = Belief(tree, hypotheses(tree))
        self._ep = ep
        self._cache = None
        self.np_random.bit_generator.state = copy.deepcopy(snapshot["np_random"])
        self._last_obs = snapshot["last_obs"]

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return self._last_obs
        return None

    def _require_tree(self) -> FaultTree:
        if self._tree is None:
            raise RuntimeError("call reset() first")
        return self._tree

    def _require_episode(self) -> tuple[_Episode, FaultTree, UserSimulator]:
        if self._ep is None or self._tree is None or self._sim is None:
            raise RuntimeError("call reset() first")
        return self._ep, self._tree, self._sim
