#!/bin/sh
# Reference solution: applied inside the workspace; idempotent, no network.
set -e
cd "${WORKSPACE:-/workspace}"
cat > app.py <<'EOF'
import json
import os

from flask import Flask, jsonify, request

HERE = os.path.dirname(os.path.abspath(__file__))
app = Flask(__name__)

with open(os.path.join(HERE, "tokens.json")) as f:
    TOKENS = json.load(f)  # token -> user name

REPORTS = [
    {"id": 1, "title": "Q1 revenue", "owner": "alice"},
    {"id": 2, "title": "Churn analysis", "owner": "bob"},
]


@app.get("/health")
def health():
    return jsonify(status="ok")


from functools import wraps


def current_user():
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return TOKENS.get(token.strip())


def unauthorized():
    resp = jsonify(error="unauthorized")
    resp.status_code = 401
    resp.headers["WWW-Authenticate"] = "Bearer"
    return resp


def require_token(view):
    @wraps(view)
    def wrapper(*args, **kwargs):
        user = current_user()
        if user is None:
            return unauthorized()
        return view(user, *args, **kwargs)
    return wrapper


@app.get("/api/profile")
@require_token
def profile(user):
    return jsonify(user=user)


@app.get("/api/reports")
@require_token
def reports(user):
    return jsonify(reports=REPORTS)


if __name__ == "__main__":
    app.run(host="0.0.0.0", port=8000, threaded=True)
EOF
