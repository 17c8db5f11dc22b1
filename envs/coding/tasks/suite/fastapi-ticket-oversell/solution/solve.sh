#!/bin/sh
# Reference solution: applied inside the workspace; idempotent, no network.
set -e
cd "${WORKSPACE:-/workspace}"
python - <<'EOF'
src = open("main.py").read()
old = """    available = STOCK[req.event]
    if available < req.seats:
        raise HTTPException(status_code=409, detail="sold out")
    await hold_payment(req)
    STOCK[req.event] = available - req.seats
"""
new = """    # Check and take the seats before awaiting anything: no other request can run between the
    # check and the update (one event loop), so seats are never sold twice.
    if STOCK[req.event] < req.seats:
        raise HTTPException(status_code=409, detail="sold out")
    STOCK[req.event] -= req.seats
    try:
        await hold_payment(req)
    except BaseException:
        STOCK[req.event] += req.seats  # give the seats back if the payment hold fails
        raise
"""
if old in src:
    open("main.py", "w").write(src.replace(old, new))
elif new not in src:
    raise SystemExit("main.py: unexpected content")
EOF
