const crypto = require("crypto");
const express = require("express");

const app = express();
app.use(express.json());

const accounts = new Map(); // email -> account

function hashPassword(password, salt = crypto.randomBytes(16).toString("hex")) {
  return `${salt}:${crypto.scryptSync(password, salt, 32).toString("hex")}`;
}

app.get("/health", (req, res) => res.json({ status: "ok" }));

app.post("/api/signup", (req, res) => {
  const { email, password, age } = req.body || {};
  const account = { id: accounts.size + 1, email, password, age };
  accounts.set(email, account);
  res.status(201).json(account);
});

app.get("/api/accounts/:id", (req, res) => {
  const account = [...accounts.values()].find((a) => a.id === Number(req.params.id));
  if (!account) return res.status(404).json({ error: "account not found" });
  res.json(account);
});

const port = Number(process.env.PORT || 3000);
app.listen(port, "0.0.0.0", () => console.log(`accounts listening on ${port}`));
