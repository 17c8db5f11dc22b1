const express = require("express");

const app = express();

const CATEGORIES = ["news", "tech", "sport"];
const articles = Array.from({ length: 47 }, (_, i) => ({
  id: i + 1,
  title: `Article ${i + 1}`,
  category: CATEGORIES[i % 3],
}));

app.get("/health", (req, res) => res.json({ status: "ok" }));

app.get("/api/articles", (req, res) => {
  const page = req.query.page || 1;
  const perPage = req.query.per_page || 10;
  let items = articles;
  if (req.query.category) items = items.filter((a) => a.category === req.query.category);
  const totalPages = Math.floor(items.length / perPage);
  const data = items.slice(page * perPage, page * perPage + perPage);
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
