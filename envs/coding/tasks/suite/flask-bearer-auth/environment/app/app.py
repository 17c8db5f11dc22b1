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


def current_user():
    header = request.headers.get("Authorization")
    token = header.split(" ")[1]
    return TOKENS.get(token)


@app.get("/api/profile")
def profile():
    user = current_user()
    return jsonify(user=user)


@app.get("/api/reports")
def reports():
    return jsonify(reports=REPORTS)


if __name__ == "__main__":
    app.run(host="0.0.0.0", port=8000, threaded=True)
