"""The container engine the docker backend drives: any Docker-API socket, or Debian's podman served here.

    python -m envs.coding.sandbox.engine serve      # start `podman system service` (runc, host-safe ulimits)
    python -m envs.coding.sandbox.engine status     # which socket answers, and the local images
    python -m envs.coding.sandbox.engine stop
    python -m envs.coding.sandbox.engine build-base # the Debian base image (debootstrap; tar cached)

Why a config of our own: Debian's podman defaults to ulimits (nofile 1048576) above this host's hard limits,
so every container fails to start ("error setting rlimit type 7"), and crun refuses the host's hybrid cgroups.
`serve` writes a containers.conf (runc, cgroupfs, file events, ulimits at the host's hard limits) and points
the service at it with CONTAINERS_CONF, leaving the system's /etc/containers untouched. Storage is overlay
where the kernel allows it, else vfs (`storage_driver()`).
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PODMAN_SOCKET = "/run/podman/podman.sock"
API_VERSION = "1.41"  # named, not negotiated: podman answers /version slowly (seconds) on a loaded host
DOCKER_SOCKET = "/var/run/docker.sock"
STATE_DIR = Path("/var/cache/agentsim/engine")
CONF = STATE_DIR / "containers.conf"
PID_FILE = STATE_DIR / "service.pid"
LOG_FILE = STATE_DIR / "service.log"


def engine_url() -> str | None:
    """The Docker API to use: $DOCKER_HOST, else the first socket that exists (Docker's, then podman's)."""
    if os.environ.get("DOCKER_HOST"):
        return os.environ["DOCKER_HOST"]
    for sock in (DOCKER_SOCKET, PODMAN_SOCKET):
        if Path(sock).exists():
            return f"unix://{sock}"
    return None


def client(timeout: float = 120) -> Any:
    """A `docker.DockerClient` for `engine_url()` (DOCKER_HOST's own handling when nothing is found)."""
    import docker

    url = engine_url()
    if url:
        return docker.DockerClient(base_url=url, timeout=int(timeout), version=API_VERSION)
    return docker.from_env(timeout=int(timeout), version=API_VERSION)


def import_rootfs(c: Any, data: bytes, repository: str, tag: str) -> str:
    """Import a root filesystem tar as `repository:tag` (no registry); the image's name.

    Tagged explicitly from the id the engine reports: podman's Docker-API import ignores the tag (`latest`)."""
    import json

    out = c.api.import_image_from_data(data, repository=repository, tag=tag)
    ids = [
        json.loads(line).get("id") or json.loads(line).get("status") for line in str(out).splitlines() if line.strip()
    ]
    image_id = next((i for i in reversed(ids) if isinstance(i, str) and i.startswith("sha256:")), None)
    name = f"{repository}:{tag}"
    if image_id is None:
        c.images.get(name)  # Docker tags it itself; ImageNotFound otherwise
        return name
    c.images.get(image_id).tag(repository, tag)
    return name


def host_ulimits() -> dict[str, tuple[int, int]]:
    """nofile / nproc for containers: below the host's hard limits (runc cannot raise them; here nproc 65536
    fails under a hard limit of 96367, 20000 works)."""
    out = {}
    for name, res, want in (("nofile", resource.RLIMIT_NOFILE, 16384), ("nproc", resource.RLIMIT_NPROC, 16384)):
        hard = resource.getrlimit(res)[1]
        value = want if hard == resource.RLIM_INFINITY else min(want, hard)
        out[name] = (value, value)
    return out


def storage_driver() -> str:
    """overlay when the kernel has it (and /var/lib/containers is not itself on overlay), else vfs."""
    fs = Path("/proc/filesystems").read_text() if Path("/proc/filesystems").exists() else ""
    try:
        on_overlay = (
            subprocess.run(
                ["stat", "-f", "-c", "%T", "/var/lib"], capture_output=True, text=True, timeout=10
            ).stdout.strip()
            == "overlayfs"
        )
    except (OSError, subprocess.TimeoutExpired):
        on_overlay = False
    return "overlay" if "overlay" in fs and not on_overlay else "vfs"


def containers_conf() -> str:
    """The containers.conf the service runs with (module doc)."""
    ul = ", ".join(f'"{k}={s}:{h}"' for k, (s, h) in host_ulimits().items())
    return (
        "# written by envs.coding.sandbox.engine: runc (crun refuses hybrid cgroups), host-safe ulimits\n"
        "[containers]\n"
        f"default_ulimits = [{ul}]\n"
        "[engine]\n"
        'runtime = "runc"\n'
        'cgroup_manager = "cgroupfs"\n'
        'events_logger = "file"\n'
    )


def _answers(url: str) -> bool:
    try:
        import docker

        c = docker.DockerClient(base_url=url, timeout=5, version=API_VERSION)
        c.ping()
        c.close()
        return True
    except Exception:  # noqa: BLE001 - not (yet) serving
        return False


def serve(socket: str = PODMAN_SOCKET, wait_s: float = 30) -> str:
    """Start `podman system service` on `socket` (a no-op when something answers there); its URL."""
    url = f"unix://{socket}"
    if _answers(url):
        return url
    podman = shutil.which("podman")
    if podman is None:
        raise RuntimeError("podman is not installed (apt-get install -y podman runc)")
    if shutil.which("runc") is None:
        raise RuntimeError("runc is not installed (apt-get install -y runc): crun refuses this host's cgroups")
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    CONF.write_text(containers_conf())
    Path(socket).parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "CONTAINERS_CONF": str(CONF)}
    driver = storage_driver()  # named only when not the default: podman refuses a store made with another
    cmd = [podman, *(["--storage-driver", driver] if driver != "overlay" else []), "system", "service", "--time=0", url]
    with open(LOG_FILE, "ab") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
    PID_FILE.write_text(str(proc.pid))
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"podman system service exited ({proc.returncode}); see {LOG_FILE}")
        if _answers(url):
            return url
        time.sleep(0.2)
    raise RuntimeError(f"podman system service did not answer on {socket} within {wait_s:g} s; see {LOG_FILE}")


def stop() -> bool:
    """Stop the service `serve` started (by its recorded pid); False when none was running."""
    if not PID_FILE.exists():
        return False
    pid = int(PID_FILE.read_text().strip() or 0)
    PID_FILE.unlink()
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    return True


def main(argv: list[str]) -> int:
    what = argv[0] if argv else "status"
    if what == "serve":
        print(serve())
        return 0
    if what == "build-base":  # the Debian base image published tasks' FROM maps to
        from envs.coding.published.images import BASE_DEBIAN, build_base, has_image

        c = client(timeout=600)
        if has_image(c, BASE_DEBIAN) and "--force" not in argv:
            print(f"{BASE_DEBIAN}: already built")
            return 0
        secs = build_base(c)
        print(f"{BASE_DEBIAN}: ready in {secs:.0f} s")
        return 0
    if what == "stop":
        print("stopped" if stop() else "no service of ours was running")
        return 0
    if what == "status":
        url = engine_url()
        if url is None or not _answers(url):
            print(f"no engine answers (tried {url or 'DOCKER_HOST, ' + DOCKER_SOCKET + ', ' + PODMAN_SOCKET})")
            return 1
        c = client()
        tags = sorted(t for img in c.images.list() for t in img.tags)
        print(f"{url}: {c.version().get('Components', [{}])[0].get('Name', 'engine')}; images: {', '.join(tags)}")
        return 0
    print(f"usage: python -m envs.coding.sandbox.engine serve|stop|status|build-base (got {what!r})", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
