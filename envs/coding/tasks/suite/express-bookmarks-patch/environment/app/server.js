const express = require("express");

const app = express();
app.use(express.json());

let nextId = 1;
const bookmarks = new Map();

app.get("/health", (req, res) => res.json({ status: "ok" }));

app.post("/bookmarks", (req, res) => {
  const { url, title, tags } = req.body || {};
  if (typeof url !== "string" || !/^https?:\/\//.test(url)) {
    return res.status(400).json({ error: "url must be an http(s) URL" });
  }
  const bookmark = { id: nextId++, url, title: title || url, tags: Array.isArray(tags) ? tags : [] };
  bookmarks.set(bookmark.id, bookmark);
  res.status(201).json(bookmark);
});

app.get("/bookmarks", (req, res) => {
  let items = [...bookmarks.values()];
  if (req.query.tag) items = items.filter((b) => b.tags.includes(req.query.tag));
  res.json(items);
});

app.get("/bookmarks/:id", (req, res) => {
  const bookmark = bookmarks.get(Number(req.params.id));
  if (!bookmark) return res.status(404).json({ error: "bookmark not found" });
  res.json(bookmark);
});

const port = Number(process.env.PORT || 3000);
app.listen(port, "0.0.0.0", () => console.log(`bookmarks listening on ${port}`));
