#!/bin/sh
# Reference solution: applied inside the workspace; idempotent, no network.
set -e
cd "${WORKSPACE:-/workspace}"
cat > server.js <<'EOF'
const express = require("express");
const config = require("./config.json");

const app = express();
app.use(express.json());

const users = new Map([
  [1, { id: 1, name: "Ada", email: "ada@example.com", role: "admin" }],
  [2, { id: 2, name: "Linus", email: "linus@example.com", role: "user" }],
  [3, { id: 3, name: "Grace", email: "grace@example.com", role: "user" }],
]);

function requireApiKey(req, res, next) {
  const key = req.headers["x-api-key"];
  if (key !== config.adminApiKey) {
    return res.status(401).json({ error: "invalid api key" });
  }
  next();
}

app.get("/health", (req, res) => res.json({ status: "ok" }));

// Public profile: no e-mail, no role.
app.get("/users/:id", (req, res) => {
  const user = users.get(Number(req.params.id));
  if (!user) return res.status(404).json({ error: "user not found" });
  res.json({ id: user.id, name: user.name });
});

// Admin routes need the API key (the middleware must be registered before the routes).
app.use("/admin", requireApiKey);

app.get("/admin/users", (req, res) => {
  res.json([...users.values()]);
});

app.delete("/admin/users/:id", (req, res) => {
  if (!users.delete(Number(req.params.id))) return res.status(404).json({ error: "user not found" });
  res.status(204).end();
});

const port = Number(process.env.PORT || 3000);
app.listen(port, "0.0.0.0", () => console.log(`users listening on ${port}`));
EOF
