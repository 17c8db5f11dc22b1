#!/bin/sh
# Reference solution: applied inside the workspace; idempotent, no network.
set -e
cd "${WORKSPACE:-/workspace}"
cat > start.sh <<'EOF'
#!/bin/sh
# Start the link shortener in the foreground on port 3000, all interfaces.
cd "$(dirname "$0")"
export PORT=3000 HOST=0.0.0.0 NODE_ENV=production
exec node src/index.js
EOF
chmod +x start.sh
