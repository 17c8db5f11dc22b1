from agents.action import action_tools, parse_react, parse_tool_call
from agents.brains.base import BrainOutput, ToolCall

AVAILABLE = ["click[buy now]", "click[< prev]", "move[left]"]


def test_react_thought_and_action():
    r = parse_react("Thought: the first item fits.\nAction: click[buy now]", AVAILABLE)
    assert r.ok and r.action == "click[buy now]" and r.thought == "the first item fits."


def test_react_takes_last_action_line_and_strips_markdown():
    r = parse_react("**Thought**: hmm\n**Action**: search[a]\nThought: no\nAction: `click[buy now]`")
    assert r.action == "click[buy now]"


def test_bare_action_is_accepted():
    assert parse_react("click[buy now]").action == "click[buy now]"
    assert parse_react("move[left]", AVAILABLE).action == "move[left]"


def test_missing_action_gives_feedback_with_allowed_actions():
    r = parse_react("I think I should buy it, definitely.", AVAILABLE, ["search[...]"])
    assert not r.ok
    assert "Action:" in r.error and "search[...]" in r.error and "click[buy now]" in r.error


def test_empty_and_oversized_actions_rejected():
    assert "empty" in parse_react("Thought: x\nAction:   ").error
    r = parse_react("Action: search[" + "a" * 5000 + "]")
    assert not r.ok and "5008 characters" in r.error


def test_tool_definitions_from_actions():
    tools = action_tools(["click[b01]", "click[next >]", "look"], ["search[...]"])
    by_name = {t["function"]["name"]: t["function"] for t in tools}
    assert "enum" not in by_name["search"]["parameters"]["properties"]["argument"]
    assert by_name["click"]["parameters"]["properties"]["argument"]["enum"] == ["b01", "next >"]
    assert "act" in by_name  # 'look' has no verb[arg] shape


def test_tool_call_parsing():
    out = BrainOutput(text="", tool_calls=[ToolCall("1", "click", '{"argument": "b01"}')])
    assert parse_tool_call(out).action == "click[b01]"
    out = BrainOutput(text="", tool_calls=[ToolCall("1", "act", '{"action": "look"}')])
    assert parse_tool_call(out).action == "look"


def test_tool_call_bad_json_and_missing_argument():
    bad = parse_tool_call(BrainOutput(text="", tool_calls=[ToolCall("1", "click", "{argument: b01")]), AVAILABLE)
    assert not bad.ok and "not valid JSON" in bad.error and "click[buy now]" in bad.error
    missing = parse_tool_call(BrainOutput(text="", tool_calls=[ToolCall("1", "click", "{}")]))
    assert not missing.ok and "no 'argument'" in missing.error


def test_tool_call_falls_back_to_react_text():
    assert parse_tool_call(BrainOutput(text="Action: move[left]")).action == "move[left]"
    r = parse_tool_call(BrainOutput(text="no idea"), AVAILABLE)
    assert not r.ok and "tool call" in r.error
