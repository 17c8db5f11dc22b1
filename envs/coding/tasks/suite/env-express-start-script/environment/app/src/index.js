const express = require("express");
const { routes } = require("./routes");

const port = Number(process.env.PORT);
if (!Number.isInteger(port) || port <= 0) {
  console.error("PORT must be set to the port to listen on");
  process.exit(1);
}
const host = process.env.HOST || "127.0.0.1";

const app = express();
app.use(express.json());
app.get("/health", (req, res) => res.json({ status: "ok", env: process.env.NODE_ENV || "development" }));
app.use("/api", routes());

app.listen(port, host, () => console.log(`shortener listening on ${host}:${port}`));
