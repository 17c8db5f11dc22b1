"""The coding env's tools: text actions, their parser, OpenAI tool schemas, and what they do.

Text actions (the argument is everything between the first `[` and the last `]`):

    bash[<command>]                  run in a persistent bash session (cwd and exported variables kept)
    view[<path>]                     a file with line numbers, or a folder's listing
    view[<path>:<start>-<end>]       lines start..end (1-based, inclusive)
    create[<path>]                   create / overwrite a file: the content follows on the next line,
    <content>                        either after the `]` or inside the brackets (`create[<path>\n<content>]`)
    str_replace[<path>]              replace one exact occurrence of SEARCH by REPLACE
    <<<<<<< SEARCH
    <old text>
    =======
    <new text>
    >>>>>>> REPLACE
    submit[]                         grade the workspace and end the episode

JSON form (what an OpenAI tool call maps to): `{"tool": "create", "path": "app.py", "content": "..."}`,
with `command` for bash, `path` (+ optional `start`, `end`) for view, `path` / `old` / `new` for
str_replace. Paths are relative to the session's current folder or absolute under /workspace;
anything outside the workspace is refused.
"""

from __future__ import annotations

import base64
import json
import os
import posixpath
import re
import shlex
from dataclasses import dataclass
from typing import Any

from envs.coding.sandbox import ExecResult, FileTooLargeError, NotRegularFileError, PathEscapeError, Sandbox

WORKSPACE = "/workspace"
VERBS = ("bash", "view", "create", "str_replace", "submit")
TEMPLATES = ["bash[...]", "view[...]", "create[...]", "str_replace[...]"]
SUBMIT = "submit[]"
MARKER = "\x1e__agentsim_state__\x1e"
VIEW_LINES = 400
# What one file action may read into the host's memory (issue 43): `view` streams and stops at
# VIEW_BYTES; `str_replace` edits files up to EDIT_BYTES and refuses bigger ones with the cap named.
VIEW_BYTES = 1024 * 1024
EDIT_BYTES = 4 * 1024 * 1024
SEARCH, DIVIDER, REPLACE = "<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE"


class ActionError(ValueError):
    """A malformed or refused action (becomes info['error'])."""


@dataclass(frozen=True)
class Call:
    """A parsed action."""

    tool: str
    args: dict[str, Any]


# --- parsing -------------------------------------------------------------------------------------


def _split_block(text: str) -> tuple[str, str]:
    m = re.fullmatch(
        rf"\n?{re.escape(SEARCH)}\n(.*?)\n?{re.escape(DIVIDER)}\n(.*?)\n?{re.escape(REPLACE)}\n?", text, re.S
    )
    if m is None:
        raise ActionError(
            f"str_replace needs a block: a line '{SEARCH}', the old text, a line '{DIVIDER}', the new text, "
            f"a line '{REPLACE}'"
        )
    return m.group(1), m.group(2)


def _path_and_body(verb: str, action: str) -> tuple[str, str]:
    """`verb[path]\\nbody` or `verb[path\\nbody]`."""
    m = re.match(rf"{verb}\[([^\]\n]*)\]\n(.*)\Z", action, re.S)
    if m is not None:
        return m.group(1).strip(), m.group(2)
    if not action.endswith("]"):
        raise ActionError(f"{verb}[...] must end with ']' or put its content on the lines after '{verb}[<path>]'")
    inner = action[len(verb) + 1 : -1]
    path, _, body = inner.partition("\n")
    return path.strip(), body


def parse_action(action: str) -> Call:
    """Parse one action (text or JSON form); `ActionError` says what is wrong."""
    stripped = action.strip()
    if stripped.startswith("{"):
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as e:
            raise ActionError(f"the JSON action does not parse ({e.msg})") from None
        if not isinstance(data, dict) or data.get("tool") not in VERBS:
            raise ActionError(f'a JSON action needs "tool": one of {", ".join(VERBS)}')
        tool = data.pop("tool")
        return _check(Call(tool, data))
    m = re.match(r"([a-z_]+)\[", stripped)
    if m is None or m.group(1) not in VERBS:
        raise ActionError("expected one of " + ", ".join(f"{v}[...]" for v in VERBS))
    verb = m.group(1)
    if verb in ("bash", "view", "submit"):
        if not stripped.endswith("]"):
            raise ActionError(f"{verb}[...] must end with ']'")
        arg = stripped[len(verb) + 1 : -1]
        if verb == "bash":
            return _check(Call("bash", {"command": arg}))
        if verb == "submit":
            if arg.strip():
                raise ActionError("submit takes no argument: submit[]")
            return Call("submit", {})
        vm = re.fullmatch(r"(.*?):(\d+)-(\d+)", arg.strip())
        if vm is not None:
            return _check(Call("view", {"path": vm.group(1), "start": int(vm.group(2)), "end": int(vm.group(3))}))
        return _check(Call("view", {"path": arg.strip()}))
    path, body = _path_and_body(verb, action.lstrip())
    if verb == "create":
        return _check(Call("create", {"path": path, "content": body}))
    old, new = _split_block(body)
    return _check(Call("str_replace", {"path": path, "old": old, "new": new}))


_ARGS = {
    "bash": {"command"},
    "view": {"path", "start", "end"},
    "create": {"path", "content"},
    "str_replace": {"path", "old", "new"},
    "submit": set(),
}
_REQUIRED = {
    "bash": {"command"},
    "view": {"path"},
    "create": {"path", "content"},
    "str_replace": {"path", "old", "new"},
}


def _check(call: Call) -> Call:
    extra = set(call.args) - _ARGS[call.tool]
    missing = _REQUIRED.get(call.tool, set()) - set(call.args)
    if extra or missing:
        raise ActionError(
            f"{call.tool} takes {sorted(_ARGS[call.tool])}; missing {sorted(missing)}, unknown {sorted(extra)}"
        )
    for k in ("command", "path", "content", "old", "new"):
        if k in call.args and not isinstance(call.args[k], str):
            raise ActionError(f"{call.tool}: {k} must be a string")
    if call.tool == "bash" and not call.args["command"].strip():
        raise ActionError("bash[...] needs a command")
    if "path" in call.args and not call.args["path"].strip():
        raise ActionError(f"{call.tool} needs a path")
    if call.tool == "str_replace" and not call.args["old"]:
        raise ActionError("str_replace: the SEARCH text is empty")
    for k in ("start", "end"):
        if k in call.args and (not isinstance(call.args[k], int) or call.args[k] < 1):
            raise ActionError(f"view: {k} must be a line number >= 1")
    return call


def tool_schemas() -> list[dict[str, Any]]:
    """OpenAI function-tool definitions of the actions; a call maps to the JSON form (`tool_call_action`)."""

    def fn(name: str, doc: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
        params = {"type": "object", "properties": props, "required": required, "additionalProperties": False}
        return {"type": "function", "function": {"name": name, "description": doc, "parameters": params}}

    s = {"type": "string"}
    return [
        fn("bash", "Run a command in a persistent bash session in the sandbox (cwd and exports persist).",
           {"command": s}, ["command"]),
        fn("view", "Show a file with line numbers (optionally lines start..end), or list a folder.",
           {"path": s, "start": {"type": "integer"}, "end": {"type": "integer"}}, ["path"]),
        fn("create", "Create or overwrite a file with the given content.", {"path": s, "content": s},
           ["path", "content"]),
        fn("str_replace", "Replace the one exact occurrence of `old` in a file by `new`.",
           {"path": s, "old": s, "new": s}, ["path", "old", "new"]),
        fn("submit", "Finish: the service is started and the hidden tests are run.", {}, []),
    ]  # fmt: skip


def tool_call_action(name: str, arguments: dict[str, Any]) -> str:
    """The action string for an OpenAI tool call (the JSON form)."""
    return json.dumps({"tool": name, **arguments})


# --- the bash session -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Session:
    """What persists between bash calls: the current folder and the exported variables (`export -p`)."""

    cwd: str = WORKSPACE
    exports: str = ""


def session_script(session: Session, command: str) -> str:
    """`command` wrapped to run in `session` and print the session after it (behind MARKER)."""
    restore = f"cd -- {shlex.quote(session.cwd)} 2>/dev/null || cd {WORKSPACE}\n"
    if session.exports:
        encoded = base64.b64encode(session.exports.encode()).decode()
        restore += f'eval "$(printf %s {encoded} | base64 -d)" 2>/dev/null\n'
    dump = (
        "__agentsim_exit() { __rc=$?; printf '\\n%s\\n' \"$(printf '" + MARKER.replace("\x1e", "\\036") + "')\"; "
        "pwd; export -p | grep -v -e '^declare -x OLDPWD' -e '^declare -x PWD=' -e '^declare -x SHLVL='; exit $__rc; }\n"
        "trap __agentsim_exit EXIT\n"
    )
    script = restore + dump + command + "\n"
    return f"exec /bin/bash -c {shlex.quote(script)}"


def split_session(stdout: str, before: Session) -> tuple[str, Session]:
    """The command's own output and the session it left (the old one if it did not get to say)."""
    at = stdout.rfind("\n" + MARKER + "\n")
    if at < 0:
        return stdout, before
    state = stdout[at + len(MARKER) + 2 :]
    cwd, _, exports = state.partition("\n")
    return stdout[:at], Session(cwd=cwd.strip() or WORKSPACE, exports=exports.strip())


def clip(text: str, limit: int) -> str:
    """At most `limit` chars: head and tail, the cut marked."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... output truncated: {len(text) - 2 * half} of {len(text)} chars cut ...]\n{text[-half:]}"


def format_exec(out: str, res: ExecResult, timeout: float, limit: int) -> str:
    """The observation of one bash call: stdout, stderr, and the exit status in words."""
    parts = [clip(out.rstrip("\n"), limit)] if out.strip() else []
    if res.stderr.strip():
        parts.append("[stderr]\n" + clip(res.stderr.rstrip("\n"), limit))
    if res.timed_out:
        parts.append(f"[timed out after {timeout:g} s; the command was killed]")
    elif res.output_killed:
        parts.append("[killed: the command wrote too much output]")
    parts.append(f"[exit code {res.exit_code}]")
    return "\n".join(parts)


# --- file tools -----------------------------------------------------------------------------------


def resolve(path: str, cwd: str) -> str:
    """`path` as an absolute sandbox path under /workspace (relative paths from `cwd`); else PathEscapeError."""
    base = cwd if cwd == WORKSPACE or cwd.startswith(WORKSPACE + "/") else WORKSPACE
    full = posixpath.normpath(posixpath.join(base, path.strip()))
    if full != WORKSPACE and not full.startswith(WORKSPACE + "/"):
        raise PathEscapeError(f"{path!r} is outside {WORKSPACE}")
    return full


def view(sb: Sandbox, path: str, cwd: str, start: int | None, end: int | None, limit: int) -> str:
    """Lines start..end of a file (streamed: at most VIEW_BYTES are read, however big or sparse the
    file), or a folder's listing."""
    full = resolve(path, cwd)
    try:
        f = sb.open_file(full)
    except IsADirectoryError:
        res = sb.exec(f"ls -1Ap -- {shlex.quote(full)}", timeout=10)
        if res.exit_code != 0:
            raise ActionError(f"cannot list {full}: {res.stderr.strip()}") from None
        return f"{full}/:\n" + clip(res.stdout.rstrip("\n"), limit)
    except FileNotFoundError:
        raise ActionError(f"{full} does not exist") from None
    except NotRegularFileError as e:
        raise ActionError(f"view: {e}; view shows regular files and folders") from None
    lo = (start or 1) - 1
    want_hi = end if end is not None else lo + VIEW_LINES
    shown: list[str] = []
    with f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(VIEW_BYTES)
    capped = size > len(head)
    lines = head.decode("utf-8", "replace").splitlines()
    if capped and lines and not head.endswith(b"\n"):
        lines.pop()  # the last line is cut by the cap
    shown = [f"{i + 1:6}\t{line}" for i, line in enumerate(lines[lo:want_hi], start=lo)]
    hi = min(len(lines), want_hi)
    if capped:
        head_note = f"{full} ({size:,} bytes; only its first {VIEW_BYTES:,} bytes are read, {len(lines)} lines):\n"
        more = f"\n[the rest of the file is past the {VIEW_BYTES:,}-byte view cap: use bash (sed -n, head, tail)]"
        if not shown:
            more = f"[lines {lo + 1}- are past the {VIEW_BYTES:,}-byte view cap: use bash (sed -n, head, tail)]"
        return head_note + clip("\n".join(shown), limit) + more
    more = f"\n[{len(lines) - hi} more lines; view[{path}:{hi + 1}-{hi + VIEW_LINES}]]" if hi < len(lines) else ""
    return f"{full} ({len(lines)} lines):\n" + clip("\n".join(shown), limit) + more


def create(sb: Sandbox, path: str, cwd: str, content: str) -> str:
    full = resolve(path, cwd)
    if full == WORKSPACE:
        raise ActionError("create needs a file path, not the workspace itself")
    try:
        sb.write_file(full, content)
    except IsADirectoryError:
        raise ActionError(f"{full} is a folder") from None
    except NotRegularFileError as e:
        raise ActionError(f"create: {e}; it writes regular files") from None
    return f"wrote {full} ({len(content.encode())} bytes, {content.count(chr(10)) + (not content.endswith(chr(10)) and bool(content))} lines)"


def str_replace(sb: Sandbox, path: str, cwd: str, old: str, new: str) -> str:
    full = resolve(path, cwd)
    try:
        text = sb.read_file(full, EDIT_BYTES, refuse_larger=True).decode("utf-8")
    except FileNotFoundError:
        raise ActionError(f"{full} does not exist") from None
    except IsADirectoryError:
        raise ActionError(f"{full} is a folder") from None
    except UnicodeDecodeError:
        raise ActionError(f"{full} is not UTF-8 text") from None
    except NotRegularFileError as e:
        raise ActionError(f"str_replace: {e}; it edits regular files") from None
    except FileTooLargeError:
        raise ActionError(
            f"str_replace edits files up to {EDIT_BYTES:,} bytes; {full} is bigger: edit it with bash (sed)"
        ) from None
    n = text.count(old)
    if n != 1:
        raise ActionError(f"the SEARCH text occurs {n} times in {full}; it must occur exactly once")
    sb.write_file(full, text.replace(old, new, 1))
    line = text[: text.index(old)].count("\n") + 1
    return f"edited {full}: replaced {old.count(chr(10)) + 1} line(s) at line {line}"
