#!/bin/sh
# Reference solution: applied inside the workspace; idempotent, no network.
set -e
cd "${WORKSPACE:-/workspace}"
cat > server.js <<'EOF'
const crypto = require("crypto");
const express = require("express");

const app = express();
app.use(express.json());

const accounts = new Map(); // email -> account

function hashPassword(password, salt = crypto.randomBytes(16).toString("hex")) {
  return `${salt}:${crypto.scryptSync(password, salt, 32).toString("hex")}`;
}

app.get("/health", (req, res) => res.json({ status: "ok" }));

const EMAIL = /^[^@\s]+@[^@\s]+\.[^@\s]+$/;

function validate(body) {
  const errors = {};
  const { email, password, age } = body;
  if (typeof email !== "string" || !EMAIL.test(email)) errors.email = "must be a valid e-mail address";
  if (typeof password !== "string" || password.length < 8) errors.password = "must be at least 8 characters";
  if (!Number.isInteger(age) || age < 13 || age > 120) errors.age = "must be an integer from 13 to 120";
  return errors;
}

function publicView(account) {
  const { passwordHash, ...rest } = account;
  return rest;
}

app.post("/api/signup", (req, res) => {
  const body = req.body && typeof req.body === "object" ? req.body : {};
  const errors = validate(body);
  if (Object.keys(errors).length) return res.status(400).json({ errors });
  const email = body.email.trim().toLowerCase();
  if (accounts.has(email)) return res.status(409).json({ error: "email already registered" });
  const account = { id: accounts.size + 1, email, age: body.age, passwordHash: hashPassword(body.password) };
  accounts.set(email, account);
  res.status(201).json(publicView(account));
});

app.get("/api/accounts/:id", (req, res) => {
  const account = [...accounts.values()].find((a) => a.id === Number(req.params.id));
  if (!account) return res.status(404).json({ error: "account not found" });
  res.json(publicView(account));
});

const port = Number(process.env.PORT || 3000);
app.listen(port, "0.0.0.0", () => console.log(`accounts listening on ${port}`));
EOF
