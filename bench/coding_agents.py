"""How agents do on the shipped coding tasks: the scripted expert, the embedded brain, and an
OpenAI-compatible brain (llama.cpp's own server on 127.0.0.1 serving the same embedded model).

Every shipped task once per brain (`task=all`, seeds 0..N-1), through the same engine as
`python -m agents.run`. Prints a table and writes `bench/results/coding_agents.json`.

    python bench/coding_agents.py [--max-steps 8] [--tasks 20]
"""

from __future__ import annotations

import argparse
import json
import logging
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from rich.console import Console  # noqa: E402

from agents.brains.model_files import model_path  # noqa: E402
from agents.engine import run_config  # noqa: E402
from envs.coding.tasks.loader import shipped_tasks  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_llama_server(port: int) -> subprocess.Popen:
    """llama.cpp's OpenAI-compatible server for the embedded GGUF, once /v1/models answers."""
    cmd = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model_path("gemma3-270m")),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--model_alias",
        "local",
        "--n_ctx",
        "4096",
        "--chat_format",
        "gemma",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError("llama.cpp server did not start")


def run(brain: dict, tasks: int, max_steps: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="coding-bench-") as out:
        cfg = {
            "env": {"name": "coding", "id": "agentsim/Coding-v0", "max_steps": max_steps, "kwargs": {"task": "all"}},
            "brain": brain,
            "memory": {"name": "none"},
            "episodes": tasks,
            "out": out,
            "progress": False,
        }
        r = run_config(cfg, console=Console(stderr=True, quiet=True))
        s = r.summary
        return {
            "brain": brain["name"],
            "episodes": s.episodes,
            "crashed": len(r.failed),
            "success_rate": s.success_rate,
            "mean_score": s.mean_score,
            "mean_steps": s.mean_steps,
            "invalid_action_rate": s.invalid_action_rate,
            "tokens_in": s.tokens_in,
            "tokens_out": s.tokens_out,
            "wall_s": s.wall_time_s,
        }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", type=int, default=0, help="first N tasks by name (0 = all shipped)")
    p.add_argument("--max-steps", type=int, default=8, help="agent steps per task (the expert needs 4)")
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "coding_agents.json"))
    a = p.parse_args()
    logging.basicConfig(level=logging.WARNING)
    n = a.tasks or len(shipped_tasks())
    rows = [run({"name": "scripted"}, n, a.max_steps), run({"name": "local"}, n, a.max_steps)]
    port = free_port()
    server = start_llama_server(port)
    try:
        rows.append(
            run(
                {
                    "name": "openai",
                    "base_url": f"http://127.0.0.1:{port}/v1",
                    "model": "local",
                    "temperature": 0.0,
                    "max_tokens": 128,
                },
                n,
                a.max_steps,
            )
        )
    finally:
        server.kill()
    print(f"{'brain':10} {'tasks':>5} {'success':>8} {'steps':>6} {'invalid':>8} {'tokens in/out':>16} {'wall s':>7}")
    for r in rows:
        print(
            f"{r['brain']:10} {r['episodes']:5d} {r['success_rate']:8.0%} {r['mean_steps']:6.1f} "
            f"{r['invalid_action_rate']:8.0%} {r['tokens_in']:>8,}/{r['tokens_out']:<7,} {r['wall_s']:7.1f}"
        )
    Path(a.out).write_text(json.dumps({"max_steps": a.max_steps, "tasks": n, "rows": rows}, indent=2))
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
