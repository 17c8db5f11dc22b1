const express = require("express");

function routes() {
  const router = express.Router();
  const links = new Map();

  router.post("/links", (req, res) => {
    const { url, code } = req.body || {};
    if (typeof url !== "string" || !/^https?:\/\//.test(url)) {
      return res.status(400).json({ error: "url must be an http(s) URL" });
    }
    if (typeof code !== "string" || !/^[a-z0-9-]{3,32}$/.test(code)) {
      return res.status(400).json({ error: "code must be 3-32 characters of a-z, 0-9, -" });
    }
    if (links.has(code)) return res.status(409).json({ error: "code already taken" });
    links.set(code, { code, url, hits: 0 });
    res.status(201).json(links.get(code));
  });

  router.get("/links/:code", (req, res) => {
    const link = links.get(req.params.code);
    if (!link) return res.status(404).json({ error: "link not found" });
    link.hits += 1;
    res.json(link);
  });

  return router;
}

module.exports = { routes };
