#!/bin/sh
# Verifier: end-to-end HTTP tests against the running service (started by the harness).
# Writes 1 (all tests pass) or 0 to /logs/verifier/reward.txt.
HERE="$(cd "$(dirname "$0")" && pwd)"
export SERVICE_PORT="${SERVICE_PORT:-8000}"
OUT="${REWARD_DIR:-/logs/verifier}"
mkdir -p "$OUT"
PY=python
command -v python >/dev/null 2>&1 || PY=python3
"$PY" -m pytest -q -rA -p no:cacheprovider "$HERE"/test_*.py
rc=$?
if [ "$rc" -eq 0 ]; then echo 1 > "$OUT/reward.txt"; else echo 0 > "$OUT/reward.txt"; fi
exit "$rc"
