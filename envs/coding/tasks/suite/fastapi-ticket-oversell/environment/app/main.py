import asyncio
import itertools

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel, Field

app = FastAPI(title="tickets")

STOCK: dict[str, int] = {"concert-a": 100, "concert-b": 50}
RESERVATIONS: list[dict] = []
_ids = itertools.count(1)


class StockIn(BaseModel):
    quantity: int = Field(ge=0)


class ReservationIn(BaseModel):
    event: str
    seats: int = Field(ge=1, le=10)


async def hold_payment(reservation: ReservationIn) -> None:
    # Stands in for the call to the payment provider that places a hold on the card.
    await asyncio.sleep(0.05)


@app.get("/health")
async def health():
    return {"status": "ok"}


@app.put("/stock/{event}")
async def set_stock(event: str, body: StockIn):
    STOCK[event] = body.quantity
    return {"event": event, "available": STOCK[event]}


@app.get("/stock/{event}")
async def get_stock(event: str):
    if event not in STOCK:
        raise HTTPException(status_code=404, detail="unknown event")
    return {"event": event, "available": STOCK[event]}


@app.post("/reservations", status_code=201)
async def reserve(req: ReservationIn):
    if req.event not in STOCK:
        raise HTTPException(status_code=404, detail="unknown event")
    available = STOCK[req.event]
    if available < req.seats:
        raise HTTPException(status_code=409, detail="sold out")
    await hold_payment(req)
    STOCK[req.event] = available - req.seats
    reservation = {"id": next(_ids), "event": req.event, "seats": req.seats}
    RESERVATIONS.append(reservation)
    return reservation
