"""Turning model output into an env action: ReAct text or OpenAI tool calls.

Parsing never raises on bad model output: it returns a `ParseResult` whose `error` says what
was wrong and what form is expected; the agent feeds that back to the model.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from pydantic import BaseModel, ValidationError, field_validator

from agents.brains.base import BrainOutput
from envs.contract import MAX_ACTION_CHARS  # one limit for every env and the parser

_ACTION_RE = re.compile(r"^\s*(?:\*\*)?action(?:\*\*)?\s*:\s*(.*)$", re.IGNORECASE | re.MULTILINE)
_THOUGHT_RE = re.compile(
    r"^\s*(?:\*\*)?thought(?:\*\*)?\s*:\s*(.*?)(?=^\s*(?:\*\*)?action(?:\*\*)?\s*:|\Z)",
    re.IGNORECASE | re.MULTILINE | re.DOTALL,
)
_VERB_RE = re.compile(r"^([A-Za-z_][\w\- ]*)\[(.*)\]$", re.DOTALL)


class ParsedAction(BaseModel):
    """A validated action: one line of text, non-empty, bounded."""

    action: str
    thought: str | None = None

    @field_validator("action")
    @classmethod
    def _check_action(cls, v: str) -> str:
        v = v.strip().strip("`").strip()
        if not v:
            raise ValueError("the action is empty")
        if len(v) > MAX_ACTION_CHARS:
            raise ValueError(f"the action is {len(v)} characters long; at most {MAX_ACTION_CHARS} are allowed")
        return v


class ToolArguments(BaseModel):
    """Arguments of an action tool call: `{"argument": "..."}` (or `{"action": "..."}` for `act`)."""

    argument: str | None = None
    action: str | None = None


@dataclass
class ParseResult:
    action: str | None
    thought: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.action is not None


REACT_FORMAT = "Reply in exactly this form:\nThought: <one short sentence of reasoning>\nAction: <one action>"


def _why(e: ValidationError) -> str:
    return str(e.errors()[0]["msg"]).removeprefix("Value error, ")


def _allowed_hint(available: list[str] | None, templates: list[str] | None, limit: int = 15) -> str:
    shown = list(templates or []) + list((available or [])[:limit])
    if not shown:
        return ""
    more = f" (and {len(available) - limit} more)" if available and len(available) > limit else ""
    return " Allowed actions now: " + ", ".join(shown) + more + "."


def parse_react(text: str, available: list[str] | None = None, templates: list[str] | None = None) -> ParseResult:
    """Take the last `Action:` line (and the `Thought:` before it) from ReAct-style output."""
    matches = _ACTION_RE.findall(text or "")
    hint = _allowed_hint(available, templates)
    if not matches:
        bare = (text or "").strip()
        # A reply that is *only* an action (e.g. `click[Buy Now]`) is accepted as is.
        if bare and "\n" not in bare and (_VERB_RE.match(bare) or (available and bare in available)):
            matches = [bare]
        else:
            return ParseResult(
                None,
                None,
                "Could not find an action in your reply: there is no line starting with "
                f"'Action:'. {REACT_FORMAT}{hint}",
            )
    thought_m = _THOUGHT_RE.search(text or "")
    thought = thought_m.group(1).strip() if thought_m else None
    try:
        parsed = ParsedAction(action=matches[-1], thought=thought)
    except ValidationError as e:
        return ParseResult(None, thought, f"The action in your reply is not valid: {_why(e)}. {REACT_FORMAT}{hint}")
    return ParseResult(parsed.action, parsed.thought)


# ---------------------------------------------------------------- tool calls


def action_tools(available: list[str] | None, templates: list[str] | None) -> list[dict]:
    """OpenAI tool definitions for the actions valid now: one function per verb (`click`, `search`, ...).

    A verb whose every form is concrete gets an `enum` of its arguments; a verb with a free-text
    template takes any string; actions without the `verb[arg]` shape go through a generic `act`.
    """
    verbs: dict[str, set[str] | None] = {}
    plain = False
    for t in templates or []:
        m = _VERB_RE.match(t)
        if m:
            verbs[m.group(1)] = None
        else:
            plain = True
    for a in available or []:
        m = _VERB_RE.match(a)
        if not m:
            plain = True
            continue
        verb, arg = m.group(1), m.group(2)
        if verb in verbs and verbs[verb] is None:
            continue
        verbs.setdefault(verb, set()).add(arg)  # type: ignore[union-attr]
    tools = []
    for verb, args in verbs.items():
        prop: dict = {"type": "string", "description": f"the argument of {verb}[...]"}
        if args is not None:
            prop["enum"] = sorted(args)
        tools.append(
            {
                "type": "function",
                "function": {
                    "name": verb,
                    "description": f"Perform the action {verb}[<argument>].",
                    "parameters": {"type": "object", "properties": {"argument": prop}, "required": ["argument"]},
                },
            }
        )
    if plain or not tools:
        tools.append(
            {
                "type": "function",
                "function": {
                    "name": "act",
                    "description": "Perform one action, written exactly as the environment lists it.",
                    "parameters": {
                        "type": "object",
                        "properties": {"action": {"type": "string"}},
                        "required": ["action"],
                    },
                },
            }
        )
    return tools


def parse_tool_call(
    output: BrainOutput, available: list[str] | None = None, templates: list[str] | None = None
) -> ParseResult:
    """Turn the first tool call into `verb[argument]`; fall back to ReAct text if there is none."""
    hint = _allowed_hint(available, templates)
    if not output.tool_calls:
        res = parse_react(output.text, available, templates)
        if not res.ok:
            res.error = (
                "Your reply had no tool call and no 'Action:' line. Call exactly one of the provided tools." + hint
            )
        return res
    call = output.tool_calls[0]
    try:
        raw = json.loads(call.arguments or "{}")
        if not isinstance(raw, dict):
            raise ValueError("arguments must be a JSON object")
        args = ToolArguments.model_validate(raw)
    except (ValueError, ValidationError) as e:
        return ParseResult(
            None,
            output.text or None,
            f"The arguments of tool call '{call.name}' are not valid JSON of the form "
            f'{{"argument": "..."}}: {str(e)[:200]}.{hint}',
        )
    if call.name == "act":
        text = args.action or args.argument
    else:
        text = None if args.argument is None else f"{call.name}[{args.argument}]"
    if text is None:
        return ParseResult(None, output.text or None, f"Tool call '{call.name}' has no 'argument'.{hint}")
    try:
        parsed = ParsedAction(action=text, thought=output.text or None)
    except ValidationError as e:
        return ParseResult(None, output.text or None, f"The tool call's action is not valid: {_why(e)}.{hint}")
    return ParseResult(parsed.action, parsed.thought)
