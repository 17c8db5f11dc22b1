#!/bin/sh
# Reference solution: applied inside the workspace; idempotent, no network.
set -e
cd "${WORKSPACE:-/workspace}"
sed -i 's/^port = .*/port = 8080/' server/settings.ini
cat > start.sh <<'EOF'
#!/bin/sh
# Start the quotes service (foreground) on the port set in server/settings.ini (8080).
set -e
cd "$(dirname "$0")/server"
exec python app.py
EOF
chmod +x start.sh
