"""The contract every text environment in this project keeps (the map is in docs/architecture.md).

An env is a `gymnasium.Env` with `FreeText` observation and action spaces.

- `reset(seed=, options=) -> (obs, info)`; `step(action) -> (obs, reward, terminated, truncated, info)`.
- `info` always carries:
    - `instruction`: the goal in words (str),
    - `available_actions`: list[str] of concrete, complete actions valid now (where finite),
    - `action_templates`: list[str] of free-text action forms valid now, each with one `...`
      slot, e.g. `"search[...]"` (may be empty),
    - on a bad action, `error`: what was wrong and what is allowed. A bad action never raises
      and never silently no-ops; the state is unchanged.
- `info` may carry, for the agent side's generic helpers:
    - `success`: bool, at the step that ends the task: the env's verdict, which runs record as the episode's
      success unless `env.success_threshold` is set (BabyAI's reward for a solved level is below 1),
    - `slot_stopwords`: list[str], with `action_templates`: words of the env's domain that slot
      filling should not put into a template's slot (WebShop: "buy", "price", ...). A template
      whose verb also begins listed `available_actions` (`check[...]` beside `check[Fuse]`) is
      not filled from the task by the ranked-choice agent: the listed ones are its choices.
    - `task_slots`: list[str], the templates whose slot takes words of the task (absent: all of
      them). The ranked-choice agent fills only these from the task (TextCraft: none; its slots
      take recipes and items, which it lists).
- An action longer than `MAX_ACTION_CHARS` (or not a string) is a bad action; error messages echo
  at most `ECHO_CHARS` of the input (`excerpt`).
- `terminated` = the task ended (success or failure decided); `truncated` = outside cut-off.
- After the episode ended (the env answered `terminated` or `truncated` itself), every further
  step is a bad action: state unchanged, reward 0, the same `terminated`/`truncated` flags as
  the step that ended it, and an `error` saying the episode is over and to call `reset()`
  (`episode_over_message`).
- Step limits are not the env's business: envs are registered with `max_episode_steps`, so
  `gymnasium.make` wraps them in `TimeLimit`. Use `snapshot_env`/`restore_env` to branch
  through the wrapper: they also save and restore `TimeLimit`'s elapsed-step counter.
- Same seed + same actions = same trajectory.

Optional capabilities, detected with `isinstance(env.unwrapped, Protocol)`:
- `Snapshottable`: `snapshot() -> object` and `restore(snap)` so search can branch.
- `HasExpert`: `expert_action() -> str`, the scripted expert's deterministic choice in the
  current state (the agents' `scripted` brain adds epsilon noise on top).
- `CompactsObservations`: `compact_observation(text) -> str` (a staticmethod, so it works on
  the class found from a recorded env id): the same observation in fewer tokens, keeping what the
  state depends on (the PRM reads observations this way).

`check_text_env(env)` checks all of the above (and runs Gymnasium's own `check_env`).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, SupportsFloat, runtime_checkable

import gymnasium as gym
from gymnasium.spaces import Text
from gymnasium.utils.env_checker import check_env, data_equivalence
from gymnasium.wrappers import TimeLimit

SLOT = "..."
MAX_ACTION_CHARS = 1_000  # one cap for every env: long enough for any real action, short enough to parse fast
ECHO_CHARS = 80  # how much of a rejected input an error message may quote
CONTRACT_KEYS = ("instruction", "available_actions", "action_templates")


@runtime_checkable
class Snapshottable(Protocol):
    """An env whose state can be saved and restored, so search can branch from any step."""

    def snapshot(self) -> Any:
        """The env's full state, enough to continue from it later."""
        ...

    def restore(self, snapshot: Any) -> None:
        """Return to a state taken by snapshot()."""
        ...


@runtime_checkable
class HasExpert(Protocol):
    """An env with a scripted expert: its deterministic choice in the current state."""

    def expert_action(self) -> str:
        """The scripted expert's deterministic action in the current state."""
        ...


@runtime_checkable
class CompactsObservations(Protocol):
    """An env (class) that can shorten its own observation text for token-limited readers (the PRM)."""

    def compact_observation(self, text: str) -> str:
        """The observation shortened for a scorer with a small window, keeping what the env knows matters."""
        ...


# --- messages ------------------------------------------------------------------------------------


def invalid_action_message(
    problem: str, allowed: list[str], templates: list[str] | None = None, limit: int = 20
) -> str:
    """One wording for every env's bad-action feedback: what was wrong, then what is allowed."""
    shown = list(templates or []) + list(allowed[:limit])
    more = f" (and {len(allowed) - limit} more)" if len(allowed) > limit else ""
    return f"Invalid action: {problem}. Allowed actions: " + ", ".join(shown) + more + "."


def episode_over_message(how: str) -> str:
    """The error for any step after the episode ended (`how`: e.g. "the item was bought")."""
    return f"Invalid action: the episode is over ({how}); call reset() to start a new one."


def excerpt(text: str, limit: int = ECHO_CHARS) -> str:
    """A quotable, bounded echo of user input: repr of at most `limit` chars, plus the full length."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}… ({len(text):,} chars)"


def action_problem(action: object) -> str | None:
    """What makes `action` unacceptable before any parsing (type, length), or None.

    Every env calls this first, so a huge input costs O(1) and is never echoed in full."""
    if not isinstance(action, str):
        return f"an action must be a string, got {type(action).__name__}"
    if len(action) > MAX_ACTION_CHARS:
        return f"the action {excerpt(action)} is too long; at most {MAX_ACTION_CHARS:,} characters are allowed"
    return None


# --- branching through wrappers ------------------------------------------------------------------


@dataclass(frozen=True)
class EnvSnapshot:
    """The base env's snapshot plus how many steps `TimeLimit` had counted (None when not wrapped)."""

    state: Any
    steps_counted: int | None


def find_wrapper(env: gym.Env, kind: type[gym.Wrapper]) -> gym.Wrapper | None:
    """The outermost wrapper of type `kind` around `env`, if any."""
    while isinstance(env, gym.Wrapper):
        if isinstance(env, kind):
            return env
        env = env.env
    return None


def _snapshottable(env: gym.Env) -> Snapshottable:
    base = env.unwrapped
    if not isinstance(base, Snapshottable):
        raise TypeError(f"{type(base).__name__} has no snapshot()/restore()")
    return base


def snapshot_env(env: gym.Env) -> EnvSnapshot:
    """Snapshot `env` (wrapped or not), including how many steps `TimeLimit` has counted.

    Without the counter, a branch restored mid-episode would be truncated at the wrong step."""
    limit = find_wrapper(env, TimeLimit)
    counted = getattr(limit, "_elapsed_steps", None) if limit is not None else None
    return EnvSnapshot(_snapshottable(env).snapshot(), counted)


def restore_env(env: gym.Env, snap: EnvSnapshot) -> None:
    """Restore a `snapshot_env` snapshot: the base env's state and `TimeLimit`'s counter.

    `env` must have been reset once (Gymnasium's wrappers insist on reset before step); any
    episode will do, e.g. another env made from the same spec."""
    _snapshottable(env).restore(snap.state)
    limit = find_wrapper(env, TimeLimit)
    if limit is not None:
        limit._elapsed_steps = snap.steps_counted or 0  # type: ignore[attr-defined]


# --- the checker ---------------------------------------------------------------------------------

DEFAULT_BAD_ACTIONS: tuple[object, ...] = ("", "not an action at all ][", "\x00\x01", 123, None)
Step = tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]  # as gymnasium types it; read rewards with float()


class _Checker:
    """Runs the text contract on one env; every failure names the env and the broken rule."""

    def __init__(self, env: gym.Env, seed: int, bad_actions: Sequence[object], max_episode_len: int) -> None:
        self.wrapped, self.env = env, env.unwrapped
        self.seed, self.bad_actions, self.max_len = seed, bad_actions, max_episode_len
        self.name = env.spec.id if env.spec is not None else type(self.env).__name__

    def fail(self, rule: str, detail: str) -> AssertionError:
        return AssertionError(f"{self.name}: {rule}: {detail}")

    def require(self, ok: bool, rule: str, detail: str) -> None:
        if not ok:
            raise self.fail(rule, detail)

    # -- driving the env
    def reset(self, seed: int | None = None) -> tuple[Any, dict[str, Any]]:
        return self.env.reset(seed=self.seed if seed is None else seed)

    def step(self, action: object, rule: str, env: gym.Env | None = None) -> Step:
        try:
            return (env or self.env).step(action)
        except Exception as e:  # the contract: a step never raises, whatever the action
            raise self.fail(rule, f"step({excerpt(str(action))}) raised {type(e).__name__}: {str(e)[:300]}") from e

    def policy(self, info: dict[str, Any]) -> str:
        """A sensible action now: the expert's, else the first listed action, else a filled template."""
        if isinstance(self.env, HasExpert):
            return self.env.expert_action()
        if info.get("available_actions"):
            return info["available_actions"][0]
        templates = info.get("action_templates") or []
        return templates[0].replace(SLOT, "x") if templates else "x"

    def replay(self, actions: Sequence[object], rule: str, env: gym.Env | None = None) -> list[Step]:
        (env or self.env).reset(seed=self.seed)
        return [self.step(a, rule, env) for a in actions]

    def play(self, n: int, rule: str) -> tuple[list[str], list[Step], dict[str, Any]]:
        """Reset with the seed and follow `policy` for up to `n` steps or until the episode ends."""
        _, info = self.reset()
        actions: list[str] = []
        steps: list[Step] = []
        for _ in range(n):
            actions.append(self.policy(info))
            steps.append(self.step(actions[-1], rule))
            info = steps[-1][4]
            if steps[-1][2] or steps[-1][3]:
                break
        return actions, steps, info

    # -- the rules
    def gymnasium_checker(self, skip_render_check: bool) -> None:
        """Gymnasium's own `check_env`, with its warnings treated as failures."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                check_env(self.env, skip_render_check=skip_render_check or self.env.spec is None)
            except AssertionError as e:
                raise self.fail("gymnasium check_env", str(e)) from e
        messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
        self.require(not messages, "gymnasium check_env", "warnings: " + " | ".join(messages))

    def spaces(self) -> None:
        space = self.env.action_space
        self.require(
            isinstance(space, Text) and space.max_length <= MAX_ACTION_CHARS,
            "action space",
            f"expected a Text space of at most MAX_ACTION_CHARS={MAX_ACTION_CHARS} chars, got {space}",
        )
        self.require(
            isinstance(self.env.observation_space, Text),
            "observation space",
            f"expected a Text space, got {self.env.observation_space}",
        )

    def info_keys(self, info: dict[str, Any], where: str) -> None:
        rule = f"info keys after {where}"
        self.require(
            isinstance(info.get("instruction"), str) and bool(info["instruction"]),
            rule,
            f"'instruction' must be a non-empty str, got {info.get('instruction')!r}",
        )
        for key in ("available_actions", "action_templates"):
            value = info.get(key)
            self.require(
                isinstance(value, list) and all(isinstance(a, str) for a in value),
                rule,
                f"{key!r} must be a list[str], got {value!r}",
            )
        for t in info["action_templates"]:
            self.require(t.count(SLOT) == 1, rule, f"template {t!r} must contain exactly one {SLOT!r} slot")

    def reset_and_step_info(self) -> None:
        obs, info = self.reset()
        self.require(isinstance(obs, str), "reset", f"the observation must be a str, got {type(obs).__name__}")
        self.info_keys(info, "reset")
        _, steps, _ = self.play(3, "step")
        for s in steps:
            self.require(isinstance(s[0], str), "step", f"the observation must be a str, got {type(s[0]).__name__}")
            self.info_keys(s[4], "step")

    def view(self, s: Step) -> tuple[Any, ...]:
        """What the agent sees of a step, without counters (which a bad action may advance)."""
        return s[0], float(s[1]), bool(s[2]), bool(s[3]), tuple(_freeze(s[4].get(k)) for k in CONTRACT_KEYS)

    def refused(self, before: dict[str, Any], s: Step, action: object, rule: str) -> None:
        """A refused action: an error in words, no reward, no end, the same contract info."""
        shown = excerpt(str(action))
        error = s[4].get("error")
        self.require(isinstance(error, str) and bool(error.strip()), rule, f"{shown} gave no info['error']")
        self.require(
            float(s[1]) == 0.0 and not s[2] and not s[3],
            rule,
            f"{shown} gave reward={s[1]}, terminated={s[2]}, truncated={s[3]}; expected 0, False, False",
        )
        for k in CONTRACT_KEYS:
            self.require(data_equivalence(s[4].get(k), before.get(k)), rule, f"{shown} changed info[{k!r}]")

    def bad_action_leaves_state(self, action: object, prefix_len: int, rule: str) -> Step:
        """Refused, and the next good step is what it would have been without the bad action."""
        actions, steps, info = self.play(prefix_len, rule)
        if steps and (steps[-1][2] or steps[-1][3]):
            raise self.fail(rule, f"the episode ended within {prefix_len} steps; cannot test a bad action mid-episode")
        probe = self.policy(info)
        bad = self.step(action, rule)
        self.refused(info, bad, action, rule)
        after = self.step(probe, rule)
        direct = self.replay([*actions, probe], rule)[-1]
        self.require(
            self.view(after) == self.view(direct),
            rule,
            f"after {excerpt(str(action))} the next step ({probe!r}) differs from the same step without it",
        )
        return bad

    def bad_actions_refused(self) -> None:
        for prefix_len in (0, 1):
            for action in self.bad_actions:
                self.bad_action_leaves_state(action, prefix_len, "bad action -> error, state unchanged")

    def long_action_refused(self) -> None:
        rule = "over-long action refused with a bounded echo"
        _, info = self.reset()
        templates = info.get("action_templates") or ["..."]
        for n in (MAX_ACTION_CHARS + 1, 1_000_000):
            action = templates[0].replace(SLOT, "z" * n)
            s = self.bad_action_leaves_state(action, 0, rule)
            run = "z" * (ECHO_CHARS + 1)
            self.require(
                run not in s[4]["error"] and run not in str(s[0]),
                rule,
                f"a {n:,}-char action is echoed beyond {ECHO_CHARS} chars in the error or observation",
            )

    def determinism(self) -> None:
        rule = "same seed + same actions = same trajectory"
        actions, _, _ = self.play(6, rule)
        if len(actions) > 1:
            actions.insert(1, "not an action at all ][")
        first, second = self.replay(actions, rule), self.replay(actions, rule)
        self.same_steps(first, second, actions, "between two runs of one env")
        if self.env.spec is not None:  # a second instance: no state may leak through class or module globals
            other = self.env.spec.make()
            try:
                self.same_steps(first, self.replay(actions, rule, other.unwrapped), actions, "between two envs")
            finally:
                other.close()
        o1, i1 = self.reset()
        o2, i2 = self.reset()
        self.require(data_equivalence((o1, i1), (o2, i2)), rule, "reset(seed) twice gave different results")

    def same_steps(self, first: list[Step], second: list[Step], actions: Sequence[object], where: str) -> None:
        for i, (a, b) in enumerate(zip(first, second)):
            self.require(
                data_equivalence(a, b),
                "same seed + same actions = same trajectory",
                f"step {i} ({excerpt(str(actions[i]))}) differs {where}",
            )

    def snapshot_round_trip(self) -> None:
        rule = "snapshot()/restore() round trip"
        if not isinstance(self.env, Snapshottable):
            return
        actions, steps, info = self.play(2, rule)
        if steps and (steps[-1][2] or steps[-1][3]):
            raise self.fail(rule, "the episode ended within 2 steps; cannot branch mid-episode")
        snap = self.env.snapshot()
        branch: list[str] = []
        first: list[Step] = []
        for _ in range(4):
            branch.append(self.policy(info))
            first.append(self.step(branch[-1], rule))
            info = first[-1][4]
            if first[-1][2] or first[-1][3]:
                break
        self.env.restore(snap)
        again = [self.step(a, rule) for a in branch]
        self.require(data_equivalence(first, again), rule, "replaying after restore() gave a different branch")
        self.reset(self.seed + 1)
        self.env.restore(snap)
        across = [self.step(a, rule) for a in branch]
        self.require(
            data_equivalence(first, across), rule, "restore() after a reset to another seed gave a different branch"
        )

    def after_episode(self) -> None:
        rule = "a step after the episode ended"
        actions, steps, info = self.play(self.max_len, rule)
        if not steps or not (steps[-1][2] or steps[-1][3]):
            raise self.fail(
                rule,
                f"the episode did not end within {self.max_len} steps of the expert/first action; "
                "give the env an expert_action() or raise max_episode_len",
            )
        ended = (bool(steps[-1][2]), bool(steps[-1][3]))
        action = (info.get("available_actions") or [actions[-1]])[0]
        once, twice = self.step(action, rule), self.step(action, rule)
        error = once[4].get("error")
        self.require(
            isinstance(error, str) and "episode is over" in error and "reset" in error,
            rule,
            f"info['error'] must say the episode is over and to call reset(), got {error!r}",
        )
        self.require(
            float(once[1]) == 0.0 and (bool(once[2]), bool(once[3])) == ended,
            rule,
            f"expected reward 0 and (terminated, truncated)={ended} again, got {once[1]}, {once[2:4]}",
        )
        self.require(data_equivalence(once, twice), rule, "two steps after the end gave different results")
        for k in CONTRACT_KEYS:
            self.require(data_equivalence(once[4].get(k), info.get(k)), rule, f"the step changed info[{k!r}]")

    def time_limit(self) -> None:
        """Through `TimeLimit`: truncation exactly at the limit, also after `restore_env` mid-episode."""
        rule = "TimeLimit truncation and snapshot_env/restore_env"
        limit = find_wrapper(self.wrapped, TimeLimit)
        if limit is None or limit._max_episode_steps > self.max_len:  # type: ignore[attr-defined]
            return
        n = limit._max_episode_steps  # type: ignore[attr-defined]
        bad = "not an action at all ]["
        self.wrapped.reset(seed=self.seed)
        flags = [self.wrapped.step(bad)[3] for _ in range(n)]
        self.require(flags == [False] * (n - 1) + [True], rule, f"expected truncated only at step {n}, got {flags}")
        if not isinstance(self.env, Snapshottable) or n < 2:
            return
        self.wrapped.reset(seed=self.seed)
        self.wrapped.step(bad)
        snap = snapshot_env(self.wrapped)
        for _ in range(n):
            self.wrapped.step(bad)
        restore_env(self.wrapped, snap)
        flags = [self.wrapped.step(bad)[3] for _ in range(n - 1)]
        self.require(
            flags == [False] * (n - 2) + [True],
            rule,
            f"after restore_env at step 1, expected truncated only at step {n}, got {flags}",
        )


def _freeze(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def check_text_env(
    env: gym.Env,
    seed: int = 0,
    *,
    bad_actions: Sequence[object] = DEFAULT_BAD_ACTIONS,
    max_episode_len: int = 200,
    skip_gymnasium: bool = False,
    skip_render_check: bool = False,
) -> None:
    """Check that `env` (made with `gymnasium.make` or constructed) keeps the text-env contract.

    Runs Gymnasium's `check_env` (its warnings count as failures) and then the rules in this
    module's docstring. Actions come from the env's expert if it has one, else the first
    available action. `bad_actions` must be refused in every state; `max_episode_len` bounds how
    long the expert may take to end an episode. Raises `AssertionError` naming the env and the
    broken rule; leaves the env in an arbitrary state (reset it before use).
    """
    checker = _Checker(env, seed, bad_actions, max_episode_len)
    if not skip_gymnasium:
        checker.gymnasium_checker(skip_render_check)
    checker.spaces()
    checker.reset_and_step_info()
    checker.bad_actions_refused()
    checker.long_action_refused()
    checker.determinism()
    checker.snapshot_round_trip()
    checker.after_episode()
    checker.time_limit()


def hit_time_limit(env: gym.Env) -> bool:
    """True when `env`'s `TimeLimit` has counted its last step (a truncation by the step limit, not by the env)."""
    limit = find_wrapper(env, TimeLimit)
    if limit is None:
        return False
    elapsed, most = getattr(limit, "_elapsed_steps", None), getattr(limit, "_max_episode_steps", None)
    return elapsed is not None and most is not None and elapsed >= most
