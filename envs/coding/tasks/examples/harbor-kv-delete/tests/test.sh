#!/bin/bash
# Harbor's verifier entry point: run the hidden tests against the service, write the reward.
mkdir -p /logs/verifier
export SERVICE_PORT="${SERVICE_PORT:-8080}"
if python3 -m pytest -q -rA "$(dirname "$0")"/test_*.py; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
