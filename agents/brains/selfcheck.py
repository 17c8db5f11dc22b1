"""Does this machine's llama.cpp build run the embedded model? `python -m agents.brains.selfcheck`.

A crash inside llama.cpp (a native build on a CPU whose features the VM does not really grant, e.g.
AMX) kills the Python process with a segfault, which no `except` can turn into a message. So the
check decodes a short prompt in a child process and, if the child dies, says what to rebuild.
Exit status 0 = the build works; 1 = it does not (the message says how to rebuild).
"""

from __future__ import annotations

import logging
import subprocess
import sys

log = logging.getLogger(__name__)

PORTABLE_CMAKE_ARGS = "-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"

_CHILD = """
from agents.brains.local import LocalBrain
brain = LocalBrain(n_ctx=256, n_threads=1, adapter=None)
out = brain.choose([{"role": "user", "content": "Pick a fruit."}], ["apple", "car"])
gen = brain.complete([{"role": "user", "content": "Say hi."}], max_tokens=2)
print(out.text, "|", gen.text)
"""


def check(timeout_s: float = 300.0) -> tuple[bool, str]:
    """(works, what happened): rank two candidates and generate two tokens with the embedded model."""
    try:
        proc = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return False, f"the embedded model did not answer within {timeout_s:.0f} s"
    if proc.returncode == 0:
        return True, proc.stdout.strip()
    tail = "\n".join(proc.stderr.strip().splitlines()[-3:])
    how = "a segfault" if proc.returncode in (-11, 139) else f"exit status {proc.returncode}"
    return False, (
        f"llama.cpp failed running the embedded model ({how}): {tail}\n"
        "Rebuild llama-cpp-python portably (no native CPU flags):\n"
        f'  CMAKE_ARGS="{PORTABLE_CMAKE_ARGS}" pip install --no-cache-dir --force-reinstall --no-deps '
        '"llama-cpp-python==$(python -c "import importlib.metadata as m; print(m.version(\'llama-cpp-python\'))")"'
    )


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    ok, what = check()
    if ok:
        log.info("llama.cpp runs the embedded model: %s", what)
        return 0
    log.error("%s", what)
    return 1


if __name__ == "__main__":
    sys.exit(main())
