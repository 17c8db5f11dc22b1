#!/bin/sh
# Start the quotes service (foreground).
set -e
cd "$(dirname "$0")/backend"
exec python app.py
