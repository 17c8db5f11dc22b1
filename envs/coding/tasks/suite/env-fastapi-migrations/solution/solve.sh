#!/bin/sh
# Reference solution: applied inside the workspace; idempotent, no network.
set -e
cd "${WORKSPACE:-/workspace}"
cat > start.sh <<'EOF'
#!/bin/sh
# Migrate the SQLite database, then serve the contacts API in the foreground on port 8000.
set -e
cd "$(dirname "$0")"
export DATABASE_PATH="$(pwd)/data/contacts.db"
mkdir -p data
python migrate.py
exec python -m uvicorn main:app --host 0.0.0.0 --port 8000
EOF
chmod +x start.sh
