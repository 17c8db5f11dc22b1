import configparser
import os

from flask import Flask, jsonify

HERE = os.path.dirname(os.path.abspath(__file__))
config = configparser.ConfigParser()
config.read(os.path.join(HERE, "settings.ini"))

app = Flask(__name__)

QUOTES = [
    {"id": 1, "text": "Simple is better than complex.", "author": "Tim Peters"},
    {"id": 2, "text": "Premature optimization is the root of all evil.", "author": "Donald Knuth"},
]


@app.get("/health")
def health():
    return jsonify(status="ok", service=config.get("service", "name"))


@app.get("/quotes")
def quotes():
    return jsonify(QUOTES)


@app.get("/quotes/<int:quote_id>")
def quote(quote_id):
    for q in QUOTES:
        if q["id"] == quote_id:
            return jsonify(q)
    return jsonify(error="quote not found"), 404


if __name__ == "__main__":
    app.run(
        host=config.get("server", "host"),
        port=config.getint("server", "port"),
        threaded=True,
    )
