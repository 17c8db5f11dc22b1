#!/bin/sh
# Reference solution: applied inside the workspace; idempotent, no network.
set -e
cd "${WORKSPACE:-/workspace}"
cat > start.sh <<'EOF'
#!/bin/sh
# Start the inventory API in the foreground on port 8000.
cd "$(dirname "$0")"
exec python -m uvicorn --app-dir src --factory inventory.api:create_app --host 0.0.0.0 --port 8000
EOF
chmod +x start.sh
