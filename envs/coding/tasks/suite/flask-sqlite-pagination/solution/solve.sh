#!/bin/sh
# Reference solution: applied inside the workspace; idempotent, no network.
set -e
cd "${WORKSPACE:-/workspace}"
python - <<'EOF'
import re
src = open("app.py").read()
old = """    limit = int(request.args.get("limit", 10))
    offset = int(request.args.get("offset", 0))
    with get_db() as conn:
        total = conn.execute("SELECT COUNT(*) FROM products").fetchone()[0]
        rows = conn.execute(
            "SELECT id, name, price FROM products ORDER BY id LIMIT ? OFFSET ?",
            (limit, offset * limit),
        ).fetchall()
    next_offset = offset + limit
    next_link = f"/products?limit={limit}&offset={next_offset}" if next_offset <= total else None
    return jsonify(items=[dict(r) for r in rows], total=total, limit=limit, offset=offset, next=next_link)"""
new = """    try:
        limit = int(request.args.get("limit", 10))
        offset = int(request.args.get("offset", 0))
    except ValueError:
        return jsonify(error="limit and offset must be integers"), 400
    if not 1 <= limit <= 100:
        return jsonify(error="limit must be between 1 and 100"), 400
    if offset < 0:
        return jsonify(error="offset must be >= 0"), 400
    with get_db() as conn:
        total = conn.execute("SELECT COUNT(*) FROM products").fetchone()[0]
        rows = conn.execute(
            "SELECT id, name, price FROM products ORDER BY id LIMIT ? OFFSET ?",
            (limit, offset),
        ).fetchall()
    next_offset = offset + limit
    next_link = f"/products?limit={limit}&offset={next_offset}" if next_offset < total else None
    return jsonify(items=[dict(r) for r in rows], total=total, limit=limit, offset=offset, next=next_link)"""
if old in src:
    src = src.replace(old, new)
    open("app.py", "w").write(src)
elif new not in src:
    raise SystemExit("app.py: unexpected content")
EOF
