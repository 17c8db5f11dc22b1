"""Read a task's Dockerfile (and compose file) into an `EnvironmentPlan`: what bwrap reproduces, what it skips.

bubblewrap has no image: the host's /usr stands in for `FROM`. It reproduces `WORKDIR` (the workspace is the
final one, shown at that path), `COPY`/`ADD` of local files into it, `ENV` and `ARG`. It does not reproduce
`RUN` (nothing is installed or built), copies outside the workspace, `COPY --from`, `ADD` of URLs or archives,
`USER`, `VOLUME`, extra compose services and volumes: each becomes a `SkippedStep` naming the file and line.
"""

from __future__ import annotations

import fnmatch
import json
import posixpath
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envs.coding.published.model import EnvironmentPlan, FileCopy, SkippedStep

# Paths a workspace cannot be shown at (the sandbox's own mounts, or the host's read-only system folders).
RESERVED = ("/usr", "/etc", "/proc", "/dev", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/tmp")
RESERVED_EXACT = ("/", "/tests", "/logs", "/solution", "/oracle", "/grader", "/var", "/home", "/home/user")
DEFAULT_WORKDIR = "/app"  # when the Dockerfile sets none (Docker's default, /, cannot be a workspace)
ARCHIVES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
INFO_ONLY = {"LABEL", "MAINTAINER", "EXPOSE", "CMD", "ENTRYPOINT", "HEALTHCHECK", "STOPSIGNAL", "SHELL"}
_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")


class DockerfileError(ValueError):
    """A Dockerfile or compose file that cannot be read (bad syntax, a source outside the build context)."""


@dataclass
class Instruction:
    line: int
    keyword: str
    args: str

    def short(self) -> str:
        text = f"{self.keyword} {self.args}".replace("\n", " ")
        return text if len(text) <= 120 else text[:117] + "..."


def instructions(text: str) -> list[Instruction]:
    """The Dockerfile's instructions, continuation lines joined and heredoc bodies kept with their step."""
    out: list[Instruction] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        raw = lines[i].strip()
        start = i + 1
        i += 1
        if not raw or raw.startswith("#"):
            continue
        parts = [raw]
        while parts[-1].endswith("\\") and i < len(lines):
            parts[-1] = parts[-1][:-1]
            nxt = lines[i].strip()
            i += 1
            if nxt.startswith("#"):
                parts.append("\\")  # a comment inside a continuation: skipped, continuation goes on
                continue
            parts.append(nxt)
        joined = " ".join(p for p in parts if p != "\\").strip()
        for delim in re.findall(r"<<-?\s*[\"']?([A-Za-z_][A-Za-z0-9_]*)[\"']?", joined):
            body: list[str] = []
            while i < len(lines) and lines[i].strip() != delim:
                body.append(lines[i])
                i += 1
            i += 1  # the delimiter
            joined += "\n" + "\n".join(body)
        keyword, _, args = joined.partition(" ")
        out.append(Instruction(start, keyword.upper(), args.strip()))
    return out


def substitute(text: str, env: Mapping[str, str]) -> str:
    """`$VAR`, `${VAR}`, `${VAR:-default}` as Docker expands them in WORKDIR, COPY, ENV (unknown: empty)."""

    def one(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(3)
        value = env.get(name, "")
        return value if value or m.group(2) is None else m.group(2)

    return _VAR.sub(one, text)


def _words(args: str) -> list[str]:
    """An instruction's arguments: JSON array form or shell-like words."""
    if args.startswith("["):
        try:
            value = json.loads(args)
        except json.JSONDecodeError:
            pass
        else:
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                return value
    try:
        return shlex.split(args)
    except ValueError as e:
        raise DockerfileError(f"cannot split {args!r}: {e}") from None


def _assignments(args: str, keyword: str) -> dict[str, str]:
    """`ENV A=1 B="x y"`, `ENV A 1` (old form), `ARG A=1`, `ARG A`."""
    words = _words(args)
    if keyword == "ENV" and words and "=" not in words[0]:
        return {words[0]: " ".join(words[1:])}
    out: dict[str, str] = {}
    for w in words:
        k, eq, v = w.partition("=")
        if keyword == "ARG" and not eq:
            continue  # declared, no default
        out[k] = v
    return out


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def workdir_problem(workdir: str) -> str | None:
    """Why `workdir` cannot be the workspace's path in the sandbox (None: it can)."""
    if workdir in RESERVED_EXACT:
        return f"{workdir} is a folder the sandbox itself provides"
    for r in RESERVED:
        if _under(workdir, r):
            return f"{workdir} is under {r}, which the sandbox shows read-only from the host"
    if _under(workdir, "/workspace") and workdir != "/workspace":
        return "a workspace inside /workspace is not supported"
    return None


@dataclass
class _Build:
    """The state while reading one Dockerfile."""

    file: str
    context: Path
    hidden: set[Path]
    env: dict[str, str] = field(default_factory=dict)
    workdir: str | None = None
    base_image: str | None = None
    stages: int = 0
    raw_copies: list[tuple[Instruction, Path, str, bool]] = field(
        default_factory=list
    )  # (step, source, abs dest, into)
    skipped: list[SkippedStep] = field(default_factory=list)
    kept_out: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)  # .dockerignore patterns

    def skip(self, ins: Instruction, why: str, engine: bool = True) -> None:
        self.skipped.append(SkippedStep(where=f"{self.file}:{ins.line}", step=ins.short(), why=why, engine=engine))


def _dockerignore(context: Path) -> list[str]:
    f = context / ".dockerignore"
    if not f.is_file():
        return []
    pats = [ln.strip() for ln in f.read_text().splitlines() if ln.strip() and not ln.strip().startswith("#")]
    return [p.lstrip("/").rstrip("/") for p in pats if not p.startswith("!")]


def dockerignored(rel: str, patterns: list[str]) -> bool:
    """Whether a build-context path (relative) is excluded by `.dockerignore` patterns (no `!` exceptions)."""
    return any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(rel, p + "/*") for p in patterns)


def _sources(b: _Build, ins: Instruction, pattern: str) -> list[Path]:
    """The build-context paths a COPY source names (wildcards expanded); DockerfileError if outside it."""
    rel = posixpath.normpath(pattern.lstrip("/")) if pattern not in (".", "./", "/") else "."
    if rel.startswith(".."):
        raise DockerfileError(f"{b.file}:{ins.line}: COPY source {pattern!r} is outside the build context")
    found = sorted(b.context.glob(rel)) if any(c in rel for c in "*?[") else [b.context / rel]
    return [p for p in found if p.exists()]


def _copy(b: _Build, ins: Instruction) -> None:
    words = _words(substitute(ins.args, b.env)) if not ins.args.startswith("[") else _words(ins.args)
    flags = [w for w in words if w.startswith("--")]
    words = [w for w in words if not w.startswith("--")]
    if any(f.startswith("--from") for f in flags):
        b.skip(ins, "copies from another image or build stage")
        return
    if len(words) < 2:
        raise DockerfileError(f"{b.file}:{ins.line}: {ins.keyword} needs a source and a destination")
    *srcs, dest = words
    if ins.keyword == "ADD":
        remote = [s for s in srcs if re.match(r"^[a-z]+://|^git@", s)]
        archives = [s for s in srcs if s.endswith(ARCHIVES)]
        if remote or archives:
            b.skip(ins, "ADD of a URL or an archive (it would be fetched or unpacked)")
            return
    base = b.workdir or "/"
    absolute = posixpath.normpath(posixpath.join(base, dest)) if not dest.startswith("/") else posixpath.normpath(dest)
    into_dir = dest.endswith("/") or dest in (".", "./") or len(srcs) > 1
    for s in srcs:
        paths = _sources(b, ins, s)
        if not paths:
            raise DockerfileError(f"{b.file}:{ins.line}: COPY source {s!r} not found in {b.context}")
        for p in paths:
            if p.resolve() != b.context.resolve() and not p.resolve().is_relative_to(b.context.resolve()):
                raise DockerfileError(f"{b.file}:{ins.line}: COPY source {s!r} leads outside the build context")
            b.raw_copies.append((ins, p, absolute, into_dir or p.is_dir() or len(paths) > 1))


def read_dockerfile(
    dockerfile: Path, context: Path, *, file_label: str, hidden: set[Path], build_args: Mapping[str, str] | None = None
) -> _Build:
    """Read one Dockerfile (the last stage is the image); `hidden` files never enter the workspace."""
    b = _Build(file=file_label, context=context, hidden={h.resolve() for h in hidden})
    b.env.update(build_args or {})
    ignore = _dockerignore(context)
    for ins in instructions(dockerfile.read_text()):
        k = ins.keyword
        if k == "FROM":
            b.stages += 1
            if b.stages > 1:
                b.skip(ins, "a multi-stage build: earlier stages are not built; only the last stage's files are used")
                b.raw_copies.clear()
                b.workdir = None
            words = [w for w in _words(ins.args) if not w.startswith("--")]
            b.base_image = words[0] if words else None
        elif k == "WORKDIR":
            wd = substitute(ins.args.strip().strip('"').strip("'"), b.env)
            b.workdir = posixpath.normpath(posixpath.join(b.workdir or "/", wd))
        elif k in ("ENV", "ARG"):
            values = {key: substitute(v, b.env) for key, v in _assignments(ins.args, k).items()}
            b.env.update({key: v for key, v in values.items() if k == "ENV" or key not in b.env})
        elif k in ("COPY", "ADD"):
            _copy(b, ins)
        elif k in INFO_ONLY:
            continue
        elif k == "RUN":
            b.skip(ins, "a build command: bwrap installs and runs nothing at build time")
        elif k == "USER":  # the agent runs as uid 1000 on every backend
            b.skip(ins, "USER is not reproduced (the agent runs as uid 1000)", engine=False)
        else:  # VOLUME, ONBUILD, anything unknown
            b.skip(ins, f"{k} is not reproduced in a bwrap sandbox")
    b.raw_copies = [(i, p, d, into) for i, p, d, into in b.raw_copies if not dockerignored(_rel(p, context), ignore)]
    sources = [p.resolve() for _, p, _, _ in b.raw_copies]
    b.ignore = ignore
    b.kept_out = sorted({_rel(h, context) for h in b.hidden if h.exists() and any(_is_under(h, s) for s in sources)})
    return b


def _rel(p: Path, root: Path) -> str:
    return "." if p.resolve() == root.resolve() else str(p.resolve().relative_to(root.resolve()))


def _is_under(p: Path, root: Path) -> bool:
    return p.resolve().is_relative_to(root.resolve())


def _top(path: str) -> str:
    """`/data/logs` -> `/data`."""
    return "/" + path.strip("/").split("/")[0]


def _roots(workdir: str, dests: list[str]) -> list[str]:
    """The top-level folders to show when the Dockerfile writes outside the WORKDIR (`COPY data /data` with
    WORKDIR /app -> [/app, /data]); [] when everything lands in the WORKDIR (the workspace is the WORKDIR)."""
    outside = {_top(d) for d in dests if not _under(d, workdir) and d != "/" and not _under(workdir, d)}
    usable = sorted(t for t in outside if workdir_problem(t) is None and t != _top(workdir))
    if not usable or workdir_problem(_top(workdir)) is not None:
        return []
    return sorted({_top(workdir), *usable})


def empty_build(label: str, context: Path) -> _Build:
    """A build with no Dockerfile (a prebuilt image): nothing copied."""
    return _Build(file=label, context=context, hidden=set())


def plan_from(
    b: _Build,
    *,
    workdir: str | None = None,
    extra_env: Mapping[str, str] | None = None,
    writes: Sequence[str] = (),
) -> EnvironmentPlan:
    """The `EnvironmentPlan` of a read Dockerfile: copies that land in the final WORKDIR, the rest skipped.
    `writes`: top-level folders the task writes to that its Dockerfile does not create (`writable.py`): each
    becomes a writable root of the workspace, as a COPY outside the WORKDIR does."""
    skipped = list(b.skipped)
    wd = workdir or b.workdir
    if wd is None:
        skipped.append(
            SkippedStep(
                where=b.file, step="(no WORKDIR)", why=f"the container's folder would be /; {DEFAULT_WORKDIR} used"
            )
        )
        wd = DEFAULT_WORKDIR
    problem = workdir_problem(wd)
    if problem is not None:
        skipped.append(SkippedStep(where=b.file, step=f"WORKDIR {wd}", why=f"{problem}; {DEFAULT_WORKDIR} used"))
        wd = DEFAULT_WORKDIR
    copied = _roots(wd, [dest for _, _, dest, _ in b.raw_copies])
    roots = _roots(wd, [*copied, *writes]) if writes else copied
    base = "/" if roots else wd  # copies are placed relative to this
    copies: list[FileCopy] = []
    for ins, src, dest, into in b.raw_copies:
        shown = any(_under(dest, r) for r in roots) if roots else _under(dest, wd)
        if not shown:
            if not roots and _under(wd, dest) and src.is_dir() and into:  # COPY . / with WORKDIR /app: the /app part
                sub = Path(src, posixpath.relpath(wd, dest))
                if sub.is_dir():
                    copies.append(FileCopy(source=sub.resolve(), dest="", into=True))
                    continue
            skipped.append(
                SkippedStep(
                    where=f"{b.file}:{ins.line}",
                    step=ins.short(),
                    why=f"copies to {dest}: {workdir_problem(_top(dest)) or 'not a folder the sandbox can show'}",
                    engine=True,
                )
            )
            continue
        rel = posixpath.relpath(dest, base)
        copies.append(FileCopy(source=src.resolve(), dest="" if rel == "." else rel, into=into))
    return EnvironmentPlan(
        dockerfile=None,
        context=b.context.resolve(),
        dockerignore=b.ignore,
        base_image=b.base_image,
        workdir=wd,
        roots={r: r[1:] for r in roots},
        undeclared=[r for r in roots if r in writes and r not in copied and r != _top(wd)],
        env={**b.env, **(extra_env or {})},
        copies=copies,
        kept_out=b.kept_out,
        skipped=skipped,
    )


# --- compose ---------------------------------------------------------------------------------------

HARNESS_VARS = re.compile(
    r"\$\{?(T_BENCH_[A-Z_]+|CONTEXT_DIR|MAIN_IMAGE_NAME|TEST_DIR|HOST_[A-Z_]+|ENV_[A-Z_]+|CPUS|MEMORY)"
)


@dataclass
class ComposeMain:
    """What the main service of a compose file says; the rest is listed as skipped."""

    context: Path
    dockerfile: Path | None
    image: str | None
    env: dict[str, str]
    working_dir: str | None
    skipped: list[SkippedStep]


def read_compose(file: Path, main_names: tuple[str, ...], harness_env: Mapping[str, str]) -> ComposeMain:
    """The main service (`client` in Terminal-Bench, `main` in Harbor, else the only one) of a compose file."""
    import yaml

    label = file.name
    try:
        raw = yaml.safe_load(file.read_text())
    except yaml.YAMLError as e:
        raise DockerfileError(f"{label}: not valid YAML: {e}") from None
    services = raw.get("services") if isinstance(raw, Mapping) else None
    if not isinstance(services, Mapping) or not services:
        raise DockerfileError(f"{label}: services: expected a mapping of services")
    name = next((n for n in main_names if n in services), None)
    if name is None:
        if len(services) != 1:
            raise DockerfileError(
                f"{label}: services: no {' or '.join(main_names)} service among {', '.join(services)}"
            )
        name = next(iter(services))
    skipped: list[SkippedStep] = []
    for other, spec in services.items():
        if other != name:
            image = spec.get("image") if isinstance(spec, Mapping) else None
            skipped.append(
                SkippedStep(
                    where=f"{label}: services.{other}",
                    step=f"service {other}" + (f" (image {image})" if image else ""),
                    why="bwrap runs one sandbox; other services are not started",
                )
            )
    svc: Mapping[str, Any] = services[name] if isinstance(services[name], Mapping) else {}
    build = svc.get("build")
    context, dockerfile = file.parent, None
    if isinstance(build, str):
        context = (file.parent / _expand(build, harness_env)).resolve()
    elif isinstance(build, Mapping):
        context = (file.parent / _expand(str(build.get("context", ".")), harness_env)).resolve()
        if build.get("dockerfile"):
            dockerfile = context / str(build["dockerfile"])
    if build is not None and dockerfile is None:
        dockerfile = context / "Dockerfile"
    env: dict[str, str] = {}
    raw_env = svc.get("environment") or {}
    items = raw_env.items() if isinstance(raw_env, Mapping) else (str(e).partition("=")[::2] for e in raw_env)
    for k, v in items:
        env[str(k)] = _expand(str(v if v is not None else ""), harness_env)
    for vol in svc.get("volumes") or []:
        text = vol if isinstance(vol, str) else json.dumps(vol)
        if not HARNESS_VARS.search(text):  # the harness's own log mounts are ours to provide
            skipped.append(
                SkippedStep(where=f"{label}: services.{name}.volumes", step=text, why="volumes are not mounted")
            )
    image = svc.get("image")
    image_s = _expand(str(image), harness_env) if image and not HARNESS_VARS.search(str(image)) else None
    wd = svc.get("working_dir")
    return ComposeMain(context, dockerfile, image_s, env, str(wd) if wd else None, skipped)


def _expand(text: str, env: Mapping[str, str]) -> str:
    return substitute(text, env)
