// agentsim runs UI: the few behaviours pages need (step player, PRM chart links, round slider, live polling).
// Shipped with the package; no framework, no CDN.
"use strict";

function setupPlayer() {
  const player = document.getElementById("player");
  if (!player) return;
  const total = Number(player.dataset.steps);
  const slider = document.getElementById("step-slider");
  const label = document.getElementById("step-label");
  let current = -1;
  function show(n) {
    n = Math.max(0, Math.min(total - 1, n));
    if (n === current) return;
    current = n;
    document.querySelectorAll("section.step").forEach((s) => { s.hidden = Number(s.dataset.step) !== n; });
    document.querySelectorAll(".outline a").forEach((a) => a.classList.toggle("current", Number(a.dataset.step) === n));
    document.querySelectorAll("#prm-chart circle.pt").forEach((c) => c.classList.toggle("current", Number(c.dataset.step) === n + 1));
    slider.value = String(n + 1);
    label.textContent = "step " + (n + 1) + " of " + total;
    const url = new URL(window.location.href);
    url.searchParams.set("step", String(n + 1));
    history.replaceState(null, "", url);
  }
  document.getElementById("step-prev").addEventListener("click", () => show(current - 1));
  document.getElementById("step-next").addEventListener("click", () => show(current + 1));
  slider.addEventListener("input", () => show(Number(slider.value) - 1));
  document.querySelectorAll(".outline a").forEach((a) => a.addEventListener("click", (e) => { e.preventDefault(); show(Number(a.dataset.step)); }));
  document.querySelectorAll("#prm-chart circle.pt").forEach((c) => c.addEventListener("click", () => show(Number(c.dataset.step) - 1)));
  document.addEventListener("keydown", (e) => {
    if (e.target instanceof HTMLInputElement && e.target.type !== "range") return;
    if (e.key === "ArrowLeft") { e.preventDefault(); show(current - 1); }
    if (e.key === "ArrowRight") { e.preventDefault(); show(current + 1); }
  });
  show(Number(player.dataset.initial || 0));
}

function setupRounds() {
  const box = document.getElementById("rounds");
  if (!box) return;
  const slider = document.getElementById("round-slider");
  let pending = null;
  let asked = 0;
  async function load(round) {
    const ask = ++asked;
    const res = await fetch("/api/society/state?" + new URLSearchParams({ run: box.dataset.run, round: String(round) }));
    if (!res.ok || ask !== asked) return;
    const st = await res.json();
    st.colors.forEach((c, i) => {
      const node = document.getElementById("node-" + i);
      if (!node) return;
      node.setAttribute("fill", c);
      const t = node.querySelector("title");
      if (t) t.textContent = "agent_" + i + ": " + st.labels[i];
    });
    document.getElementById("round-label").textContent = String(st.round);
    document.getElementById("round-moved").textContent = String(st.moved);
    document.querySelectorAll("#round-metrics td.metric-value").forEach((td) => {
      const v = st.metrics[td.dataset.metric];
      td.textContent = v === undefined || v === null ? "" : Number(v).toPrecision(3);
    });
    box.dataset.shown = String(st.round);
  }
  slider.addEventListener("input", () => {
    clearTimeout(pending);
    pending = setTimeout(() => load(Number(slider.value)), 60);
  });
  box.dataset.shown = slider.value;
}

function setupLive() {
  const box = document.getElementById("live");
  if (!box) return;
  const tbody = box.querySelector("table tbody");
  const status = document.getElementById("live-status");
  const pct = (x) => (x === null || x === undefined ? "–" : (100 * x).toFixed(1) + "%");
  const num = (x) => (x === null || x === undefined ? "–" : Number(x).toFixed(1));
  function cell(tr, text, cls) {
    const td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }
  async function poll() {
    try {
      const res = await fetch("/api/progress?" + new URLSearchParams({ run: box.dataset.run, after: box.dataset.after }));
      if (!res.ok) throw new Error("HTTP " + res.status);
      const p = await res.json();
      if (p.indexing) {  // a big store's first visit: its index is being built
        status.textContent = p.detail;
        setTimeout(poll, 1000);
        return;
      }
      document.getElementById("live-episodes").textContent = String(p.episodes);
      document.getElementById("live-success").textContent = pct(p.success_rate);
      document.getElementById("live-score").textContent = num(p.mean_score);
      document.getElementById("live-steps").textContent = num(p.mean_steps);
      for (const r of p.rows) {
        const tr = document.createElement("tr");
        tr.className = "fresh live-row";
        cell(tr, String(r.row));
        const a = document.createElement("a");
        a.href = r.href;
        a.textContent = r.episode_id;
        cell(tr, "").appendChild(a);
        cell(tr, r.seed === null ? "" : String(r.seed));
        cell(tr, r.success ? "solved" : "failed", r.success ? "ok" : "bad");
        cell(tr, (100 * r.reward).toFixed(0));
        cell(tr, String(r.steps));
        tbody.insertBefore(tr, tbody.firstChild);
        box.dataset.after = String(Math.max(Number(box.dataset.after), r.row));
      }
      while (tbody.children.length > 200) tbody.removeChild(tbody.lastChild);
      const rounds = p.rounds === null || p.rounds === undefined ? "" : "society at round " + p.rounds + " · ";
      status.textContent = rounds + "following the store: " + p.indexed_bytes + " of " + p.store_bytes + " bytes read (a partly written episode waits for its end), updated " + new Date().toLocaleTimeString();
    } catch (e) {
      status.textContent = "waiting for the server (" + e.message + ")";
    }
    setTimeout(poll, 1000);
  }
  poll();
}

document.addEventListener("DOMContentLoaded", () => { setupPlayer(); setupRounds(); setupLive(); });
