"""Top-level folders a published task writes to without its Dockerfile creating them (`/output`, `/results`).

In the task's container every path is writable; in a bwrap sandbox only the workspace's roots are, the rest of
`/` being read-only. A task whose instruction says "write the report to /output/report.json", or whose oracle or
verifier script writes under `/output`, would fail for that reason alone. The folders are found by reading the
task's own text: absolute paths in its solution and test scripts (shell), and file-like paths in its instruction
(`/output/report.json`; a bare `/todos` there is more likely an HTTP route than a folder). Each one found becomes
a writable root of the workspace (an empty folder), the way `COPY data /data` gets one (`dockerfile._roots`).
System and harness paths are never made writable (`dockerfile.workdir_problem`, `NOT_WRITABLE`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from envs.coding.published.dockerfile import workdir_problem

# paths the sandbox or the harness owns, beyond `workdir_problem`'s: never a task's scratch folder
NOT_WRITABLE = frozenset(
    {"/workspace", "/root", "/run", "/sys", "/boot", "/mnt", "/media", "/srv", "/installed-agent", "/agent-logs"}
)
MAX_SCRIPT_BYTES = 1_000_000  # a script larger than this is not read (a task's scripts are small)
# an absolute path starting a word: not part of a URL (`host:80/x`), a variable (`$HOME/x`) or a relative path
_PATH = re.compile(r"(?<![\w.:/~$}\-])(/[A-Za-z_][\w.\-]*)((?:/[\w\-][\w.\-]*)*)(/?)")


_WRITTEN = re.compile(r"(?:\bmkdir(?:\s+-\w+)*|\btouch|\btee(?:\s+-a)?|\bcd|>>?)\s*(/[A-Za-z_][\w.\-]*)(?![\w/])")


def _tops_in_script(text: str) -> set[str]:
    """Top-level folders of a shell script's absolute paths with more to them (`cat /output/x` -> /output) and of
    bare ones it writes (`mkdir -p /output`, `> /output`, `cd /output`); a bare quoted `"/todos"` in an embedded
    program is an HTTP route, not a folder."""
    found = {m.group(1) for m in _PATH.finditer(text) if m.group(2) or m.group(3)}
    return found | set(_WRITTEN.findall(text))


def _tops_in_prose(text: str) -> set[str]:
    """Top-level folders of file-like paths in prose: `/output/report.json` or `/output/` ending a word (not
    `/todos/1` or `/books/<id>`, HTTP routes)."""
    found = set()
    for m in _PATH.finditer(text):
        rest, slash, after = m.group(2), m.group(3), text[m.end() : m.end() + 1]
        last = rest.rsplit("/", 1)[-1]
        folder = slash and (not after or after.isspace() or after in "`'\".,;:)")
        if folder or (rest and "." in last.strip(".")):
            found.add(m.group(1))
    return found


def _read(path: Path) -> str:
    try:
        if path.stat().st_size > MAX_SCRIPT_BYTES:
            return ""
        return path.read_text(errors="replace")
    except OSError:
        return ""


def writable_tops(instruction: str, scripts: Iterable[Path]) -> list[str]:
    """The top-level folders the task's text writes to, system and harness paths left out; sorted. Those the
    WORKDIR or a COPY already covers are dropped where the roots are made (`dockerfile.plan_from`)."""
    tops = _tops_in_prose(instruction)
    for script in scripts:
        tops |= _tops_in_script(_read(script))
    return sorted(t for t in tops if t not in NOT_WRITABLE and workdir_problem(t) is None)


def task_scripts(*paths: Path | None) -> list[Path]:
    """The shell scripts of a task to read: given files, and `*.sh` in given folders (solution/, tests/)."""
    out: list[Path] = []
    for p in paths:
        if p is None:
            continue
        if p.is_dir():
            out += sorted(q for q in p.glob("*.sh") if q.is_file())
        elif p.is_file() and p.suffix in (".sh", ".yaml", ".yml"):
            out.append(p)
    return out
