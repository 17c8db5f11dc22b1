from fastapi import FastAPI, HTTPException
from pydantic import BaseModel, Field

app = FastAPI(title="orders")

# unit prices by SKU
CATALOG = {"ABC-0001": 2.50, "XYZ-0420": 10.00, "KEY-1234": 99.99}
ORDERS: list[dict] = []


class OrderIn(BaseModel):
    sku: str
    quantity: int
    note: str | None = None


@app.get("/health")
def health():
    return {"status": "ok"}


@app.post("/orders", status_code=201)
def create_order(order: OrderIn):
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
