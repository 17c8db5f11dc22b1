"""A published task's image on a container engine: its Dockerfile built for real, over a local base image.

There is no image registry here, so a task's `FROM` is served by the closest local base image
(`base_for`): the image itself when the engine has it, else a stand-in by family (Debian/Ubuntu/Python/
Terminal-Bench images -> the Debian base built by `python -m envs.coding.sandbox.engine build-base`), else
`NoBaseImageError` naming the image and the local ones. Everything else of the Dockerfile runs as written:
`RUN` steps execute (with the engine's network, so Debian and PyPI installs work), `COPY` lands anywhere,
`ENV` / `WORKDIR` are the image's. The build context is a copy without the task's tests and solution, so a
`COPY .` cannot bring them into the image. Built images are tagged by content and reused.

`extract_roots` then copies the image's WORKDIR (or each root folder) into the host workspace: the sandbox
binds it back over the same path, so the agent starts from exactly what the build left there, and the file
tools, snapshots and restores work on it as on every backend.
"""

from __future__ import annotations

import hashlib
import io
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envs.coding.published.dockerfile import instructions
from envs.coding.published.model import PublishedTask
from envs.coding.published.workspace import hidden_paths

BASE_REPO = "localhost/agentsim/base"
BASE_DEBIAN = f"{BASE_REPO}:debian-bookworm"
# what the Debian base holds (Debian packages): a shell userland, python3 with pytest, and what the
# formats' templates call (curl, ca-certificates; apt-get itself comes with the base system)
BASE_PACKAGES = (
    "python3",
    "python3-pytest",
    "python3-venv",
    "python3-pip",
    "python-is-python3",
    "ca-certificates",
    "curl",
    "procps",
)
# pip installs into the system python, as in the python:* images the base stands in for (Debian refuses by default)
PIP_CONF = "[global]\nbreak-system-packages = true\n"
BASE_CACHE = Path("/var/cache/agentsim/engine")
TASK_REPO = "localhost/agentsim/task"
# FROM families the Debian base stands in for (Debian's python3 is 3.11; the task's may be another 3.x)
DEBIAN_LIKE = re.compile(
    r"^(?:docker\.io/)?(?:library/)?(?:debian|ubuntu|python|buildpack-deps)(?::|@|$)"
    r"|^ghcr\.io/laude-institute/t-bench/(?:python|ubuntu|debian)"
)


class NoBaseImageError(RuntimeError):
    """A task's FROM has no local image and no stand-in."""


class ImageBuildError(RuntimeError):
    """The task's Dockerfile did not build (a RUN step failed, a source is missing...)."""


@dataclass(frozen=True)
class BuiltImage:
    tag: str
    base: str  # the local image FROM was served by
    from_image: str | None  # what the Dockerfile named
    cached: bool
    seconds: float
    env: dict[str, str] = field(default_factory=dict)  # the image's ENV (PATH included), as the engine reports it


def image_env(client: Any, tag: str) -> dict[str, str]:
    """An image's ENV as the engine reports it ({} when it reports none)."""
    raw = (client.images.get(tag).attrs.get("Config") or {}).get("Env") or []
    return dict(str(e).partition("=")[::2] for e in raw)


def local_images(client: Any) -> list[str]:
    return sorted(t for img in client.images.list() for t in img.tags)


def has_image(client: Any, name: str) -> bool:
    try:
        client.images.get(name)
        return True
    except Exception:  # noqa: BLE001 - docker.errors.ImageNotFound
        return False


def base_for(client: Any, from_image: str | None) -> str:
    """The local image that serves `FROM from_image` (module doc), or NoBaseImageError naming both sides."""
    if from_image and has_image(client, from_image):
        return from_image
    if from_image is None or DEBIAN_LIKE.search(from_image):
        if has_image(client, BASE_DEBIAN):
            return BASE_DEBIAN
        raise NoBaseImageError(
            f"FROM {from_image or '(none)'}: its local stand-in {BASE_DEBIAN} is not built; run "
            f"`python -m envs.coding.sandbox.engine build-base` (local images: {', '.join(local_images(client)) or 'none'})"
        )
    raise NoBaseImageError(
        f"FROM {from_image}: no local image serves it (no registry here). Local images: "
        f"{', '.join(local_images(client)) or 'none'}; Debian/Ubuntu/Python/Terminal-Bench images map to {BASE_DEBIAN}"
    )


def _rewrite_from(text: str, base: str) -> str:
    """The Dockerfile with every external FROM served by `base` (stage names and `--platform` kept out)."""
    stages: set[str] = set()
    out = text.splitlines()
    for ins in instructions(text):
        if ins.keyword != "FROM":
            continue
        words = [w for w in ins.args.split() if not w.startswith("--")]
        if not words:
            continue
        image = words[0]
        alias = words[2] if len(words) >= 3 and words[1].lower() == "as" else None
        new = image if image in stages else base
        out[ins.line - 1] = f"FROM {new}" + (f" AS {alias}" if alias else "")
        if alias:
            stages.add(alias)
    return "\n".join(out) + "\n"


def _context_copy(task: PublishedTask, dest: Path) -> None:
    """The build context without the task's tests, test script and solution."""
    plan = task.environment
    assert plan.context is not None
    hidden = hidden_paths(task)

    def ignore(folder: str, names: list[str]) -> set[str]:
        return {n for n in names if (Path(folder) / n).resolve() in hidden}

    shutil.copytree(plan.context, dest, symlinks=True, ignore=ignore, dirs_exist_ok=True)


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        h.update(str(p.relative_to(folder)).encode() + b"\0")
        if p.is_file() and not p.is_symlink():
            h.update(p.read_bytes())
    return h.hexdigest()[:16]


def build_task_image(client: Any, task: PublishedTask, timeout_s: float = 1800) -> BuiltImage:
    """Build the task's Dockerfile over its local base (cached by content); ImageBuildError with the log's tail."""
    t0 = time.monotonic()
    plan = task.environment
    if plan.dockerfile is None:
        base = base_for(client, task.docker_image or plan.base_image)
        return BuiltImage(base, base, task.docker_image or plan.base_image, True, 0.0, image_env(client, base))
    base = base_for(client, plan.base_image)
    with tempfile.TemporaryDirectory(prefix="agentsim-build-") as tmp:
        ctx = Path(tmp) / "context"
        _context_copy(task, ctx)
        dockerfile = ctx / ".agentsim.Dockerfile"
        dockerfile.write_text(_rewrite_from(plan.dockerfile.read_text(), base))
        base_id = client.images.get(base).id
        tag = f"{TASK_REPO}-{_slug(task.name)}:{_digest(ctx)}-{base_id.split(':')[-1][:8]}"
        if has_image(client, tag):
            return BuiltImage(tag, base, plan.base_image, True, time.monotonic() - t0, image_env(client, tag))
        log: list[str] = []
        try:
            for chunk in client.api.build(
                path=str(ctx),
                dockerfile=dockerfile.name,
                tag=tag,
                rm=True,
                forcerm=True,
                decode=True,
                timeout=timeout_s,
            ):
                if "stream" in chunk:
                    log.append(str(chunk["stream"]))
                if "error" in chunk:
                    raise ImageBuildError(f"{chunk['error']}\n{''.join(log)[-3000:]}")
        except ImageBuildError:
            raise
        except Exception as e:  # noqa: BLE001 - the engine's own errors (docker.errors.*)
            raise ImageBuildError(f"{type(e).__name__}: {e}\n{''.join(log)[-3000:]}") from e
        if not has_image(client, tag):
            raise ImageBuildError(f"the build of {task.name!r} ended without an image:\n{''.join(log)[-3000:]}")
    return BuiltImage(tag, base, plan.base_image, False, time.monotonic() - t0, image_env(client, tag))


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-._")[:60] or "task"


def extract_roots(client: Any, image: str, mounts: dict[str, str], workspace: Path) -> None:
    """Copy each image folder of `mounts` ({image path: workspace sub-folder}) into the workspace."""
    c = client.containers.create(image, command=["true"])
    try:
        for dest, sub in mounts.items():
            target = workspace / sub if sub else workspace
            target.mkdir(parents=True, exist_ok=True)
            try:
                stream, _ = c.get_archive(dest.rstrip("/"))  # entries named <basename>/...
            except Exception:  # noqa: BLE001 - the image has no such folder: it starts empty
                continue
            data = b"".join(stream)
            with tarfile.open(fileobj=io.BytesIO(data)) as tar:
                members = []
                for m in tar.getmembers():
                    name = m.name.split("/", 1)[1] if "/" in m.name else ""
                    if not name or m.isdev():
                        continue
                    m.name = name
                    members.append(m)
                tar.extractall(target, members=members, filter="data")
    finally:
        c.remove(force=True)


# --- the base image ------------------------------------------------------------------------------------


HOST_CAS = Path("/usr/local/share/ca-certificates")


def trust_host_cas(root: Path) -> None:
    """The image trusts what the host trusts: its local CAs (e.g. an egress proxy's, without which `RUN pip
    install` fails certificate checks) are added to the root filesystem's bundle, as update-ca-certificates would."""
    cas = sorted(HOST_CAS.glob("*.crt")) if HOST_CAS.is_dir() else []
    if not cas:
        return
    dest = root / HOST_CAS.relative_to("/")
    dest.mkdir(parents=True, exist_ok=True)
    bundle = root / "etc/ssl/certs/ca-certificates.crt"
    with bundle.open("a") as out:
        for ca in cas:
            shutil.copy2(ca, dest / ca.name)
            out.write("\n" + ca.read_text().strip() + "\n")


def build_base(client: Any, *, suite: str = "bookworm", mirror: str = "http://deb.debian.org/debian") -> float:
    """Build BASE_DEBIAN with debootstrap (minbase + BASE_PACKAGES) and import it; seconds taken.

    The root filesystem's tar is kept in BASE_CACHE, so a rebuild (or CI with that folder cached) only imports."""
    t0 = time.monotonic()
    BASE_CACHE.mkdir(parents=True, exist_ok=True)
    cas = " ".join(sorted(p.name for p in HOST_CAS.glob("*.crt"))) if HOST_CAS.is_dir() else ""
    key = hashlib.sha256(f"{suite} {' '.join(BASE_PACKAGES)} {cas}".encode()).hexdigest()[:10]
    tar_path = BASE_CACHE / f"base-{suite}-{key}.tar"
    if not tar_path.exists():
        if shutil.which("debootstrap") is None:
            raise RuntimeError("debootstrap is not installed (apt-get install -y debootstrap)")
        with tempfile.TemporaryDirectory(prefix="agentsim-rootfs-", dir=BASE_CACHE) as tmp:
            root = Path(tmp) / "rootfs"
            cmd = ["debootstrap", "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}", suite, str(root), mirror]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            (root / "etc" / "pip.conf").write_text(PIP_CONF)
            trust_host_cas(root)
            for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
                for p in (root / junk).glob("*"):
                    if p.is_file():
                        p.unlink()
            partial = tar_path.with_suffix(".partial")
            subprocess.run(["tar", "-C", str(root), "--numeric-owner", "-cf", str(partial), "."], check=True)
            partial.rename(tar_path)
    from envs.coding.sandbox.engine import import_rootfs

    repo, _, tag = BASE_DEBIAN.rpartition(":")
    import_rootfs(client, tar_path.read_bytes(), repo, tag)
    return time.monotonic() - t0
