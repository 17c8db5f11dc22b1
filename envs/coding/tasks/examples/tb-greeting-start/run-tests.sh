#!/bin/bash
# Terminal-Bench's test entry point: the service runs (sh start.sh); run the hidden tests.
cd /workspace
(sh start.sh &) ; sleep 1
python3 -m pytest -q -rA "$TEST_DIR"/test_*.py
