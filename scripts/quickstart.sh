#!/usr/bin/env bash
# The README's quick start: install, then run the embedded-model agent on WebShop.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q -e .
python -m agents.run env=webshop "$@"
