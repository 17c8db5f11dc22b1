#!/bin/bash
# Reference solution: add do_DELETE to server.py (run in /workspace).
set -euo pipefail
python3 - <<'PY'
from pathlib import Path

p = Path("server.py")
src = p.read_text()
method = '''    def do_DELETE(self) -> None:
        key = self._key()
        if key is None or key not in STORE:
            return self._send(404, b"not found")
        del STORE[key]
        self._send(204)

    def log_message'''
p.write_text(src.replace("    def log_message", method, 1))
PY
