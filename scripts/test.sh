#!/usr/bin/env bash
# The README's test command: install the project with its test extras, then run pytest.
# torch comes first and pinned: 2.13.0 is the CPU build on this disk; a bare `torch` would pull a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q "torch==2.13.0"
python -m pip install -q -e ".[test,prm,hf,bench,ray]"
python -m pytest -q "$@"
