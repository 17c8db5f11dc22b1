"""Any registered text env as a TRL `GRPOTrainer(environment_factory=...)` environment (docs/rl.md).

TRL (>= 1.16) makes one environment per rollout with a zero-argument factory, calls
`reset(**row)` with the dataset row (the string it returns is appended to the prompt), exposes
every public method of the environment's class as a tool, and scores the finished rollout with
`get_reward()`. `environment_factory(env)` builds that for an env's short name or Gymnasium id:

    from agents.policy.trl_env import environment_factory, seed_dataset
    trainer = GRPOTrainer(model, args=config, train_dataset=seed_dataset(256),
                          environment_factory=environment_factory("faulttree"))

Tools come from the env's actions. An env whose class ships function tools (`tool_schemas()` and
`tool_call_action(name, args)`, as the coding env does) gets exactly those. Any other env gets one
tool per verb of its `verb[argument]` actions (`check(argument)` -> `check[argument]`; the verbs are
read from `action_templates` and `available_actions` while a probe plays a few episodes), plus
`act(action)` when some action has no such shape. A refused action returns the env's
`info["error"]` to the model as the tool's result. The step limit is the env's `TimeLimit`; once
the episode is over every tool call says so without stepping. The reward is the episode's return
plus, optionally, per-step rewards (`step_reward=` hooks, such as `prm.progress.PRMProgress`: a trained
AgentPRM's progress Q_t - Q_{t-1}), summed with a weight, since GRPO scores a rollout with one number.

The factory is a picklable callable (TRL's async trainer spawns its rollout worker), so hooks
must be module-level functions or callable instances, not lambdas, for that trainer.
"""

from __future__ import annotations

import inspect
import re
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Optional, Protocol, runtime_checkable

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator
from gymnasium.wrappers import TimeLimit

import envs  # noqa: F401  (registers the project's envs and installed plugins)
from envs.contract import HasExpert, find_wrapper, hit_time_limit
from envs.registry import env_id as resolve_env_id

if TYPE_CHECKING:
    from datasets import Dataset

VERB = re.compile(r"^([A-Za-z_][\w\- ]*)\[(.*)\]$", re.DOTALL)  # the `verb[argument]` action shape
GENERIC_TOOL = "act"
RESERVED = frozenset({"reset", "get_reward"})  # TRL's own names on an environment
JSON_TYPES: dict[str, type] = {"string": str, "integer": int, "number": float, "boolean": bool}
EXAMPLE_CHARS = 40  # how much of an example argument a tool's description quotes
GAME_OVER = "Invalid action: the episode is over; no more actions are accepted."


@runtime_checkable
class ProvidesTools(Protocol):
    """An env (class) that defines its own function tools and maps a call to its action string."""

    def tool_schemas(self) -> list[dict[str, Any]]:
        """OpenAI function-tool definitions of the env's actions."""
        ...

    def tool_call_action(self, name: str, arguments: dict[str, Any]) -> str:
        """The action string for a call of tool `name` with `arguments`."""
        ...


@dataclass
class StepContext:
    """One action of a rollout (accepted or refused), as a `step_reward` hook sees it."""

    env: gym.Env
    instruction: str
    observations: list[str]  # s_0 .. s_t: what the agent saw before each action
    actions: list[str]  # a_0 .. a_t (the last one is this step's)
    reward: float  # the env's reward for this step
    terminated: bool
    truncated: bool
    info: dict[str, Any]
    error: str | None  # the env's `info["error"]` when it refused the action


StepReward = Callable[[StepContext], float]


@dataclass(frozen=True)
class ToolSpec:
    """One tool, as plain data: its name, what it maps to, its description and parameters."""

    name: str  # the tool's (Python) name
    kind: Literal["verb", "act", "schema"]  # verb: `target[argument]`; act: the action as given; schema: the env's
    target: str  # the verb, or the env's own tool name
    description: str
    params: tuple[tuple[str, str, str, bool], ...]  # (name, JSON type, description, required)


@dataclass
class Step:
    """One tool call that reached the env."""

    action: str
    observation: str
    reward: float
    terminated: bool
    truncated: bool
    error: str | None = None
    step_reward: float = 0.0  # the hooks' sum (unweighted)


class TRLEnv:
    """Base class of the generated environments: one Gymnasium text env behind TRL's protocol.

    Read after a rollout: `env`, `instruction`, `steps`, `done`, `resets`, `env_return`,
    `step_return`, `max_episode_steps`. Only `reset`, `get_reward` and the generated tools are
    public functions: TRL turns every other public function of the class into a tool.
    """

    factory: ClassVar[EnvFactory]

    def __init__(self) -> None:
        f = self.factory
        kwargs = dict(f.make_kwargs)
        if f.max_episode_steps is not None:
            kwargs["max_episode_steps"] = f.max_episode_steps
        self.env: gym.Env = gym.make(f.env_id, **kwargs)
        self._finalizer = weakref.finalize(self, self.env.close)  # TRL never closes its environments
        self.instruction = ""
        self.steps: list[Step] = []
        self.done = False
        self.resets = 0
        self._observations: list[str] = []
        self._actions: list[str] = []

    # --- TRL's protocol ---------------------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None, **row: Any) -> str:
        """Start an episode (the dataset row's `seed` / `options` pick it); return the task and first observation."""
        obs, info = self.env.reset(seed=None if seed is None else int(seed), options=options)
        self.instruction = str(info.get("instruction", ""))
        self.steps, self.done = [], False
        self._observations, self._actions = [str(obs)], []
        self.resets += 1
        text = str(obs) if self.instruction and self.instruction in str(obs) else f"{self.instruction}\n\n{obs}"
        return f"{text.strip()}{self._listed(info)}\n\nAct by calling the tools; each call is one action."

    def get_reward(self) -> float:
        """The rollout's reward: the env's return plus the weighted per-step rewards."""
        return self.env_return + self.factory.step_reward_weight * self.step_return

    # --- state -------------------------------------------------------------------------------------
    @property
    def env_return(self) -> float:
        """The sum of the env's rewards this episode."""
        return float(sum(s.reward for s in self.steps))

    @property
    def step_return(self) -> float:
        """The sum of the `step_reward` hooks' rewards this episode (unweighted)."""
        return float(sum(s.step_reward for s in self.steps))

    @property
    def max_episode_steps(self) -> int | None:
        """The env's step limit (its `TimeLimit`), or None."""
        limit = find_wrapper(self.env, TimeLimit)
        return None if limit is None else int(limit._max_episode_steps)  # type: ignore[attr-defined]

    # --- what every tool goes through ------------------------------------------------------------------
    def _listed(self, info: dict[str, Any]) -> str:
        listed, most = list(info.get("available_actions") or []), self.factory.shown_actions
        if not listed or most <= 0:
            return ""
        more = f" (and {len(listed) - most} more)" if len(listed) > most else ""
        return "\nAvailable actions: " + ", ".join(listed[:most]) + more

    def _to_action(self, spec: ToolSpec, arguments: dict[str, Any]) -> str:
        if spec.kind == "verb":
            return f"{spec.target}[{arguments.get('argument', '')}]"
        if spec.kind == "act":
            return str(arguments["action"])
        env_cls: Any = type(self.env.unwrapped)
        return str(env_cls.tool_call_action(spec.target, arguments))

    def _act(self, action: str) -> str:
        """Step the env with one action; the text the model reads back (observation, or why it was refused)."""
        if not self._observations:
            raise RuntimeError("reset() must be called before any tool")
        if self.done:
            return self._refuse(GAME_OVER)
        obs, reward, terminated, truncated, info = self.env.step(action)
        error = info.get("error")
        step = Step(action, str(obs), float(reward), bool(terminated), bool(truncated), error)
        self._actions.append(action)
        self.steps.append(step)
        self.done = step.terminated or step.truncated
        hooks = self.factory.step_rewards
        if hooks:
            ctx = StepContext(
                self.env,
                self.instruction,
                list(self._observations),
                list(self._actions),
                step.reward,
                step.terminated,
                step.truncated,
                info,
                error,
            )
            step.step_reward = float(sum(hook(ctx) for hook in hooks))
        self._observations.append(step.observation)
        if self.done:
            why = "the step limit is reached" if step.truncated and hit_time_limit(self.env) else "the episode ended"
            text = str(error or obs)
            return f"{text}\n\n(The episode is over: {why}; reward {self.env_return:.2f}. Stop calling tools.)"
        if error:
            return self._refuse(str(error))
        return str(obs) + self._listed(info)

    def _refuse(self, message: str) -> str:
        if self.factory.errors_raise:
            raise ValueError(message)  # TRL shows {"error": message} to the model and counts a tool failure
        return message


# --- tools ------------------------------------------------------------------------------------------


def _tool_name(raw: str, taken: set[str]) -> str:
    name = re.sub(r"\W", "_", raw.strip()) or "action"
    if name[0].isdigit() or name.startswith("_"):
        name = "do_" + name.lstrip("_")
    while name in RESERVED or name in taken:
        name += "_action"
    return name


def _make_method(spec: ToolSpec) -> Callable[..., str]:
    """A function with `spec`'s name, Google-style docstring and typed signature (what TRL's tool schema reads)."""
    required = [p for p in spec.params if p[3]]
    ordered = required + [p for p in spec.params if not p[3]]
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = [inspect.Parameter("self", kind)]
    annotations: dict[str, Any] = {}
    for pname, ptype, _, needed in ordered:
        py = JSON_TYPES.get(ptype, str)
        hint: Any = py if needed else Optional[py]  # noqa: UP045  (a runtime type object, not an annotation)
        params.append(inspect.Parameter(pname, kind, annotation=hint, **({} if needed else {"default": None})))
        annotations[pname] = hint
    annotations["return"] = str
    signature = inspect.Signature(params, return_annotation=str)

    def tool(self: TRLEnv, *args: Any, **kwargs: Any) -> str:
        bound = signature.bind(self, *args, **kwargs)  # TypeError on unknown or missing arguments
        arguments = {k: v for k, v in bound.arguments.items() if k != "self" and v is not None}
        return self._act(self._to_action(spec, arguments))

    doc = [spec.description, ""]
    if ordered:
        doc += ["Args:", *[f"    {p[0]}: {p[2]}" for p in ordered], ""]
    doc += ["Returns:", "    The environment's observation after the action, or why the action was refused."]
    tool.__name__ = tool.__qualname__ = spec.name
    tool.__doc__ = "\n".join(doc)
    tool.__signature__ = signature  # type: ignore[attr-defined]
    tool.__annotations__ = annotations
    return tool


def schema_tools(env_cls: ProvidesTools) -> list[ToolSpec]:
    """Tools from an env's own function schemas (`tool_schemas()`); calls map through its `tool_call_action`."""
    specs: list[ToolSpec] = []
    taken: set[str] = set()
    for schema in env_cls.tool_schemas():
        fn = schema.get("function", schema)
        raw = str(fn["name"])
        name = _tool_name(raw, taken)
        taken.add(name)
        parameters = fn.get("parameters") or {}
        needed = set(parameters.get("required", []))
        params = tuple(
            (p, str(s.get("type", "string")), str(s.get("description") or f"the {p}"), p in needed)
            for p, s in (parameters.get("properties") or {}).items()
        )
        specs.append(ToolSpec(name, "schema", raw, str(fn.get("description") or f"Call {raw}."), params))
    return specs


def verb_tools(verbs: dict[str, list[str]], generic: bool) -> list[ToolSpec]:
    """One `verb(argument)` tool per verb, plus `act(action)` if `generic`.

    `verbs` maps each verb to arguments seen with it; "" among them makes the argument optional."""
    specs: list[ToolSpec] = []
    taken: set[str] = {GENERIC_TOOL} if generic else set()
    for verb, examples in verbs.items():
        name = _tool_name(verb, taken)
        taken.add(name)
        seen = ", ".join(f"{verb}[{e[:EXAMPLE_CHARS]}]" for e in examples if e)
        desc = f"Take the action {verb}[<argument>] in the environment." + (f" For example: {seen}." if seen else "")
        optional = "" in examples
        arg = f"what goes inside the brackets of {verb}[...]" + (" (may be left out)" if optional else "")
        specs.append(ToolSpec(name, "verb", verb, desc, (("argument", "string", arg, not optional),)))
    if generic:
        desc = "Take one action in the environment, written exactly as the environment lists it."
        arg = "the action text, e.g. one of the available actions"
        specs.append(ToolSpec(GENERIC_TOOL, "act", "", desc, (("action", "string", arg, True),)))
    return specs


def probe_verbs(
    env_id: str, make_kwargs: dict[str, Any], episodes: int = 2, max_steps: int = 30
) -> tuple[dict[str, list[str]], bool]:
    """The verbs of `env_id`'s actions (each with up to 3 example arguments), and whether some action has no verb.

    Plays `episodes` seeded episodes with the env's expert (else its first listed action) for at
    most `max_steps` steps each, reading `action_templates` and `available_actions` at every state.
    A verb seen with an empty argument (`submit[]`) gets "" among its examples."""
    verbs: dict[str, list[str]] = {}
    plain = False

    def read(info: dict[str, Any]) -> None:
        nonlocal plain
        for text in [*(info.get("action_templates") or []), *(info.get("available_actions") or [])]:
            m = VERB.match(str(text))
            if m is None:
                plain = True
                continue
            examples = verbs.setdefault(m.group(1), [])
            arg = m.group(2)
            if arg != "..." and arg not in examples and (not arg or len([e for e in examples if e]) < 3):
                examples.append(arg)

    env = gym.make(env_id, **make_kwargs)
    try:
        for seed in range(episodes):
            _, info = env.reset(seed=seed)
            read(info)
            for _ in range(max_steps):
                base, listed = env.unwrapped, info.get("available_actions") or []
                if isinstance(base, HasExpert):
                    action = base.expert_action()
                elif listed:
                    action = listed[0]
                else:
                    break
                _, _, terminated, truncated, info = env.step(action)
                read(info)
                if terminated or truncated:
                    break
    finally:
        env.close()
    return verbs, plain


# --- the factory --------------------------------------------------------------------------------------


@dataclass
class EnvFactory:
    """TRL's `environment_factory`: calling it makes one environment (a `TRLEnv` of the generated class).

    Plain data plus the hooks, so it pickles; the class is built once per process (`env_class`)."""

    env_id: str
    make_kwargs: dict[str, Any]
    max_episode_steps: int | None
    tools: tuple[ToolSpec, ...]
    step_rewards: tuple[StepReward, ...] = ()
    step_reward_weight: float = 1.0
    shown_actions: int = 20
    errors_raise: bool = False
    _cls: type[TRLEnv] | None = field(default=None, init=False, repr=False, compare=False)

    def __call__(self) -> TRLEnv:
        return self.env_class()

    @property
    def env_class(self) -> type[TRLEnv]:
        """The generated class: `TRLEnv` with one method per tool, named after the env (TRL logs its reward so)."""
        if self._cls is None:
            namespace: dict[str, Any] = {t.name: _make_method(t) for t in self.tools}
            namespace |= {
                "factory": self,
                "__module__": __name__,
                "__doc__": f"{self.env_id} as a TRL environment (tools: {', '.join(t.name for t in self.tools)}).",
            }
            name = re.sub(r"\W", "", self.env_id.split("/")[-1].split("-v")[0]) + "Tools"
            self._cls = type(name, (TRLEnv,), namespace)
        return self._cls

    @property
    def tool_names(self) -> list[str]:
        """The tools' names, in the order the prompt lists them."""
        return [t.name for t in self.tools]

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_cls"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _cls=None)


def environment_factory(
    env: str,
    *,
    env_kwargs: dict[str, Any] | None = None,
    max_episode_steps: int | None = None,
    verbs: Sequence[str] | None = None,
    generic_tool: bool | None = None,
    probe_episodes: int = 2,
    step_reward: StepReward | Sequence[StepReward] | None = None,
    step_reward_weight: float = 1.0,
    shown_actions: int = 20,
    errors_raise: bool = False,
) -> EnvFactory:
    """TRL's `environment_factory` for `env` (a short name such as `faulttree`, or a Gymnasium id).

    - `env_kwargs`: constructor kwargs for `gymnasium.make`; `max_episode_steps` overrides the
      registration's `TimeLimit` (-1: none).
    - `verbs`: the verb tools to expose (skips the probe); `generic_tool` forces `act(action)` on or
      off (default: on when some action has no `verb[...]` shape). Envs that ship their own tool
      schemas ignore both.
    - `step_reward`: hooks called after every action with a `StepContext` (a trained AgentPRM's
      progress: `prm.progress.PRMProgress`). The hooks' sum times `step_reward_weight` is added to the
      env's return in `get_reward`.
    - `shown_actions`: how many of `info["available_actions"]` each observation lists (0: none).
    - `errors_raise`: refuse bad actions by raising, so TRL shows `{"error": ...}` and counts a tool
      failure (`tools/failure_frequency`), instead of returning the error text.
    """
    gym_id = resolve_env_id(env)
    kwargs = dict(env_kwargs or {})
    spec = gym.spec(gym_id)
    env_cls = load_env_creator(spec.entry_point) if isinstance(spec.entry_point, str) else spec.entry_point
    if isinstance(env_cls, type) and isinstance(env_cls, ProvidesTools):
        tools = schema_tools(env_cls)
    else:
        if verbs is not None:
            found: dict[str, list[str]] = {v: [] for v in verbs}
            plain = False
        else:
            limit = max_episode_steps if max_episode_steps and max_episode_steps > 0 else spec.max_episode_steps
            found, plain = probe_verbs(gym_id, kwargs, probe_episodes, min(limit or 50, 50))
        tools = verb_tools(found, (plain or not found) if generic_tool is None else generic_tool)
    hooks: list[StepReward] = []
    if step_reward is not None:
        hooks += [step_reward] if callable(step_reward) else list(step_reward)
    return EnvFactory(
        gym_id, kwargs, max_episode_steps, tuple(tools), tuple(hooks), step_reward_weight, shown_actions, errors_raise
    )


def seed_dataset(n: int, start: int = 0, prompt: str = "") -> Dataset:
    """`n` rows with a `seed` column (`start`, `start + 1`, ...) and a user `prompt`, for `train_dataset=`.

    TRL repeats each row `num_generations` times and passes the row to `reset`, so a group of
    rollouts plays the same episode and GRPO's group baseline compares like with like."""
    from datasets import Dataset

    content = f"{prompt}\n\n" if prompt else ""  # reset's text is appended to this message
    rows = [[{"role": "user", "content": content}] for _ in range(n)]
    return Dataset.from_dict({"prompt": rows, "seed": list(range(start, start + n))})
