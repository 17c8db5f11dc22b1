"""Agent = Brain + Perception + Action + Memory.

Two ways to act, chosen per step by `mode`:
- `generate`: the brain writes text (ReAct) or tool calls, parsed into an action;
- `choose`: when the env lists its actions and the brain can rank (`ChoosingBrain`), the brain
  picks one by likelihood (argmax, or sampled at a temperature for diverse candidates).
`auto` = choose when possible, else generate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from agents.action import REACT_FORMAT, ParseResult, action_tools, parse_react, parse_tool_call
from agents.brains.base import AsyncChoosingBrain, Brain, BrainOutput, ChoosingBrain
from agents.config import AgentConfig
from agents.memory.base import Memory, MemoryItem
from agents.perception import Percept, Perception
from agents.slots import expand_templates
from agents.transcript import Transcript

_DEFAULTS = AgentConfig()  # the defaults live on the config model, once

Mode = Literal["auto", "generate", "choose"]
ActionFormat = Literal["react", "tool_calls"]
CHOOSE_PREFIX = "Action: "
CHOOSE_FORMAT = "Reply with one line: Action: <one of the available actions>"


@dataclass
class Decision:
    """One step's choice: the prompt it came from, the brain's output and the parsed action."""

    percept: Percept
    output: BrainOutput
    parsed: ParseResult
    mode: str


class PendingTurn(NamedTuple):
    """A step decided but not yet observed: `observe` turns it into a past turn of the transcript."""

    percept: Percept
    reply: str
    decided: str | None  # the parsed action (None: the reply did not parse)
    observation: str


class Agent:
    """Brain + perception + action + memory: turns an observation into one env action."""

    def __init__(
        self,
        brain: Brain,
        perception: Perception | None = None,
        memory: Memory | None = None,
        *,
        mode: Mode = _DEFAULTS.mode,
        action_format: ActionFormat = _DEFAULTS.action_format,
        temperature: float | None = _DEFAULTS.temperature,
        max_tokens: int = _DEFAULTS.max_tokens,
        memory_budget_tokens: int = _DEFAULTS.memory_budget_tokens,
        observation_memory_chars: int = _DEFAULTS.observation_memory_chars,
        slot_fill: str = _DEFAULTS.slot_fill,
        seed: int | None = None,
    ) -> None:
        if mode not in ("auto", "generate", "choose"):
            raise ValueError(f"agent mode must be one of auto, generate, choose; got {mode!r}")
        if action_format not in ("react", "tool_calls"):
            raise ValueError(f"action_format must be 'react' or 'tool_calls'; got {action_format!r}")
        if mode == "choose" and not isinstance(brain, ChoosingBrain):
            raise ValueError(
                f"mode=choose needs a brain that can rank actions (local, scripted); {brain.name!r} cannot"
            )
        self.brain = brain
        # abilities checked once: a runtime Protocol isinstance costs ~25 us, too much for every step
        self._chooser: ChoosingBrain | None = brain if isinstance(brain, ChoosingBrain) else None
        self._achooser: AsyncChoosingBrain | None = brain if isinstance(brain, AsyncChoosingBrain) else None
        self.perception = perception or Perception(count_tokens=brain.count_tokens)
        self.memory = memory
        self.mode = mode
        self.action_format = action_format
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.memory_budget_tokens = memory_budget_tokens
        self.observation_memory_chars = observation_memory_chars
        if slot_fill not in ("task", "generate"):
            raise ValueError(f"slot_fill must be 'task' (rank spans of the task text) or 'generate'; got {slot_fill!r}")
        self.slot_fill = slot_fill
        self.seed = seed
        self.instruction = ""
        self._feedback: str | None = None
        self._step = 0
        self.transcript = Transcript(self.perception.count_tokens, compact_chars=self.perception.config.compact_chars)
        self._pending: PendingTurn | None = None  # the step decided but not yet observed
        self._observation = ""

    # ------------------------------------------------------------------ episode hooks
    def reset(self, instruction: str, seed: int | None = None) -> None:
        """Start an episode: remember the instruction, reseed, and tell the memory."""
        self.instruction = instruction
        self._feedback = None
        self._step = 0
        self.transcript.clear()
        self._pending = None
        if seed is not None:
            self.seed = seed
        if self.memory is not None:
            self.memory.on_episode_start(instruction)

    def end(self, outcome: dict[str, Any]) -> None:
        """Finish an episode: hand the outcome to the memory (reflections, lessons)."""
        if self.memory is not None:
            self.memory.on_episode_end(outcome)

    def observe(
        self, action: str | None, observation: str, reward: float, info: dict[str, Any], feedback: str | None = None
    ) -> None:
        """Record what happened; the next prompt shows `feedback` if the last reply was rejected."""
        self._feedback = feedback
        self._step += 1
        self._extend_transcript(action)
        if self.memory is None:
            return
        if action is not None:
            self.memory.add(MemoryItem(text=action, kind="action", time=float(self._step)))
        text = feedback or observation
        if len(text) > self.observation_memory_chars:
            text = text[: self.observation_memory_chars] + " [...]"
        kind = "feedback" if feedback else "observation"
        self.memory.add(MemoryItem(text=text, kind=kind, time=float(self._step), importance=min(1.0, abs(reward))))

    def _extend_transcript(self, action: str | None) -> None:
        """Make the step just taken a past turn: its prompt turn and the reply that was acted on."""
        if self._pending is None:
            return
        percept, reply, decided, observation = self._pending
        self._pending = None
        if action is not None and decided != action:  # acted on another decision (e.g. a search picked it)
            reply = f"{CHOOSE_PREFIX}{action}"
        self.transcript.add(
            percept.turn, reply, observation, user_tokens=percept.turn_tokens, view_key=percept.view_key
        )

    @property
    def pending_turn(self) -> PendingTurn | None:
        """The step decided but not yet observed (None after `observe`): a search that tries several decisions at
        one state keeps each one's pending turn and hands it back before observing that decision's outcome."""
        return self._pending

    @pending_turn.setter
    def pending_turn(self, pending: PendingTurn | None) -> None:
        self._pending = pending

    def adopt_decision(self, observation: str, info: dict[str, Any], reply: str, action: str | None) -> None:
        """Make a decision taken elsewhere (a search's branch, a replayed step) this step's, without a brain call:
        the prompt `decide` would build is rebuilt, and the next `observe` records `reply` as the turn's answer."""
        percept, _ = self._prepare(observation, info)
        self._pending = PendingTurn(percept, reply, action, observation)

    def save_state(self) -> dict[str, Any]:
        """The episode state between steps as plain data (memory excluded: it has its own `save_state`)."""
        return {
            "instruction": self.instruction,
            "step": self._step,
            "feedback": self._feedback,
            "seed": self.seed,
            "transcript": self.transcript.save_state(),
        }

    def load_state(self, state: dict[str, Any]) -> None:
        """Restore what `save_state` returned, so the next prompt is the one the saved agent would have built."""
        self.instruction, self._step, self._feedback, self.seed = (
            state["instruction"],
            state["step"],
            state["feedback"],
            state["seed"],
        )
        self._pending = None
        if "transcript" in state:
            self.transcript.load_state(state["transcript"])
        else:
            self.transcript.clear()

    # ------------------------------------------------------------------ deciding
    def _choosing(self, info: dict[str, Any]) -> bool:
        if self.mode == "generate" or self._chooser is None:
            return False
        return bool(info.get("available_actions") or info.get("action_templates"))

    def _prepare(self, observation: str, info: dict[str, Any]) -> tuple[Percept, bool]:
        choosing = self._choosing(info)
        self._observation = observation
        memory_context = ""
        if self.memory is not None:
            memory_context = self.memory.build_context(
                f"{self.instruction}\n{observation}", self.memory_budget_tokens, self.brain.count_tokens
            )
        fmt = (
            CHOOSE_FORMAT
            if choosing
            else (REACT_FORMAT if self.action_format == "react" else "Call exactly one of the provided tools.")
        )
        percept = self.perception.build(
            instruction=self.instruction or str(info.get("instruction", "")),
            observation=observation,
            available_actions=info.get("available_actions"),
            action_templates=info.get("action_templates"),
            memory_context=memory_context,
            feedback=self._feedback,
            format_instructions=fmt,
            history=self.transcript,
        )
        return percept, choosing

    def _choose_temperature(self) -> float:
        if self.temperature is not None:
            return float(self.temperature)
        return float(getattr(self.brain, "temperature", 0.0) or 0.0)

    def _step_seed(self) -> int | None:
        return None if self.seed is None else self.seed * 1000 + self._step

    def _finish(self, percept: Percept, output: BrainOutput, choosing: bool, info: dict[str, Any]) -> Decision:
        available, templates = info.get("available_actions"), info.get("action_templates")
        if choosing:
            parsed = parse_react(output.text, available, templates)
        elif self.action_format == "tool_calls":
            parsed = parse_tool_call(output, available, templates)
        else:
            parsed = parse_react(output.text, available, templates)
        self._pending = PendingTurn(percept, output.text, parsed.action if parsed.ok else None, self._observation)
        return Decision(percept, output, parsed, "choose" if choosing else "generate")

    def _choose_args(self, info: dict[str, Any]) -> list[str]:
        templates = list(info.get("action_templates") or [])
        if self.slot_fill == "task":
            templates = expand_templates(
                templates,
                self.instruction or str(info.get("instruction", "")),
                stopwords=info.get("slot_stopwords") or (),
                listed=info.get("available_actions") or (),
                task_slots=info.get("task_slots"),
            )
        return templates + list(info.get("available_actions") or [])

    def _generate_kwargs(self, info: dict[str, Any]) -> dict[str, Any]:
        kw: dict[str, Any] = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        if self.action_format == "tool_calls":
            kw["tools"] = action_tools(info.get("available_actions"), info.get("action_templates"))
        return kw

    def decide(self, observation: str, info: dict[str, Any]) -> Decision:
        """Choose the next action for the current observation (ranked choice or generated text)."""
        percept, choosing = self._prepare(observation, info)
        if choosing:
            assert self._chooser is not None  # _choosing() checked it
            output = self._chooser.choose(
                percept.messages,
                self._choose_args(info),
                temperature=self._choose_temperature(),
                prefix=CHOOSE_PREFIX,
                seed=self._step_seed(),
            )
        else:
            output = self.brain.complete(percept.messages, **self._generate_kwargs(info))
        return self._finish(percept, output, choosing, info)

    async def adecide(self, observation: str, info: dict[str, Any]) -> Decision:
        """`decide`, awaitable (async brains run without blocking the event loop)."""
        percept, choosing = self._prepare(observation, info)
        if choosing:
            kw: dict[str, Any] = dict(
                temperature=self._choose_temperature(), prefix=CHOOSE_PREFIX, seed=self._step_seed()
            )
            if self._achooser is not None:
                output = await self._achooser.achoose(percept.messages, self._choose_args(info), **kw)
            else:
                assert self._chooser is not None  # _choosing() checked it
                output = self._chooser.choose(percept.messages, self._choose_args(info), **kw)
        else:
            output = await self.brain.acomplete(percept.messages, **self._generate_kwargs(info))
        return self._finish(percept, output, choosing, info)
