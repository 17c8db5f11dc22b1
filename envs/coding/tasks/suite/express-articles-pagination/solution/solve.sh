#!/bin/sh
# Reference solution: applied inside the workspace; idempotent, no network.
set -e
cd "${WORKSPACE:-/workspace}"
cat > server.js <<'EOF'
const express = require("express");

const app = express();

const CATEGORIES = ["news", "tech", "sport"];
const articles = Array.from({ length: 47 }, (_, i) => ({
  id: i + 1,
  title: `Article ${i + 1}`,
  category: CATEGORIES[i % 3],
}));

app.get("/health", (req, res) => res.json({ status: "ok" }));

function positiveInt(value, fallback) {
  if (value === undefined) return fallback;
  if (!/^[0-9]+$/.test(String(value))) return NaN;
  const n = Number(value);
  return n >= 1 ? n : NaN;
}

app.get("/api/articles", (req, res) => {
  const page = positiveInt(req.query.page, 1);
  const perPage = positiveInt(req.query.per_page, 10);
  if (Number.isNaN(page)) return res.status(400).json({ error: "page must be a positive integer" });
  if (Number.isNaN(perPage) || perPage > 50) {
    return res.status(400).json({ error: "per_page must be an integer from 1 to 50" });
  }
  let items = articles;
  if (req.query.category) items = items.filter((a) => a.category === req.query.category);
  const totalPages = Math.ceil(items.length / perPage);
  const start = (page - 1) * perPage;
  const data = items.slice(start, start + perPage);
  res.json({
    data,
    page,
    per_page: perPage,
    total: items.length,
    total_pages: totalPages,
    next_page: page < totalPages ? page + 1 : null,
  });
});

const port = Number(process.env.PORT || 3000);
app.listen(port, "0.0.0.0", () => console.log(`articles listening on ${port}`));
EOF
