#!/bin/sh
# Reference solution: applied inside the workspace; idempotent, no network.
set -e
cd "${WORKSPACE:-/workspace}"
cat > config.py <<'EOF'
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def load_env_file(path):
    """Minimal .env reader (KEY=VALUE lines, # comments); real environment variables win."""
    if not os.path.exists(path):
        return
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#") or "=" not in line:
                continue
            key, _, value = line.partition("=")
            key = key.strip()
            if key.startswith("export "):
                key = key[len("export "):].strip()
            os.environ.setdefault(key, value.strip().strip("\"'"))


load_env_file(os.path.join(HERE, ".env"))

SHOP_NAME = os.environ.get("SHOP_NAME", "shop")
CURRENCY = os.environ.get("SHOP_CURRENCY", "USD")
VAT_RATE = float(os.environ.get("SHOP_VAT_RATE", "0"))
EOF
cat > requirements.txt <<'EOF'
flask==3.1.3
EOF
cat > start.sh <<'EOF'
#!/bin/sh
# Dependencies are pre-installed (no network here): just start the service in the foreground.
set -e
cd "$(dirname "$0")"
exec python -m flask --app wsgi:app run --host 0.0.0.0 --port 8000 --with-threads
EOF
chmod +x start.sh
