from flask import Flask, jsonify, request

import config

PRICES = {"espresso": 2.20, "croissant": 1.80, "baguette": 1.10}


def create_app():
    app = Flask(__name__)

    @app.get("/health")
    def health():
        return jsonify(status="ok", shop=config.SHOP_NAME)

    @app.post("/quote")
    def quote():
        items = (request.get_json(silent=True) or {}).get("items")
        if not isinstance(items, dict) or not items:
            return jsonify(error="items must be a non-empty object of name -> quantity"), 400
        unknown = sorted(set(items) - set(PRICES))
        if unknown:
            return jsonify(error=f"unknown item: {unknown[0]}"), 400
        net = round(sum(PRICES[name] * int(qty) for name, qty in items.items()), 2)
        vat = round(net * config.VAT_RATE, 2)
        return jsonify(net=net, vat=vat, total=round(net + vat, 2), currency=config.CURRENCY)

    return app
