#!/bin/sh
# Reference solution: applied inside the workspace; idempotent, no network.
set -e
cd "${WORKSPACE:-/workspace}"
cat > main.py <<'EOF'
from fastapi import FastAPI, HTTPException
from pydantic import BaseModel, Field

app = FastAPI(title="orders")

# unit prices by SKU
CATALOG = {"ABC-0001": 2.50, "XYZ-0420": 10.00, "KEY-1234": 99.99}
ORDERS: list[dict] = []


class OrderIn(BaseModel):
    sku: str = Field(pattern=r"^[A-Z]{3}-[0-9]{4}$")
    quantity: int = Field(ge=1, le=1000)
    note: str | None = Field(default=None, max_length=200)


@app.get("/health")
def health():
    return {"status": "ok"}


@app.post("/orders", status_code=201)
def create_order(order: OrderIn):
    if order.sku not in CATALOG:
        raise HTTPException(status_code=404, detail="unknown sku")
    price = CATALOG[order.sku]
    record = {
        "id": len(ORDERS) + 1,
        "sku": order.sku,
        "quantity": order.quantity,
        "total": round(price * order.quantity, 2),
        "note": order.note,
    }
    ORDERS.append(record)
    return record
EOF
