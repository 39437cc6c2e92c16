// wm serve: the page polls /api/runs and the selected runs' /api/curves
// every two seconds and redraws; nothing here writes anywhere.
"use strict";

const POLL_MS = 2000;
const COLOURS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];
const state = { listing: null, exp: "", selected: new Set(), touched: false, colour: new Map(), view: "runs", docs: {} };

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function svgEl(tag, attrs) {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}

async function getJSON(url) {
  const r = await fetch(url, { cache: "no-store" });
  if (!r.ok) throw new Error(url + ": " + r.status + " " + (await r.text()));
  return r.json();
}

function expKey(e) { return e.name + "/" + e.preset; }
function currentExp() { return state.listing && state.listing.experiments.find((e) => expKey(e) === state.exp); }

function colourOf(id) {
  if (!state.colour.has(id)) state.colour.set(id, COLOURS[state.colour.size % COLOURS.length]);
  return state.colour.get(id);
}

function runLabel(arm, run) {
  let s = arm.name + " seed " + run.seed;
  if (run.lr) s += " lr " + run.lr;
  return s;
}

function fmt(v, digits) {
  if (v === undefined || v === null || v === 0 || Number.isNaN(v)) return "—";
  return Number(v).toFixed(digits);
}

function fmtETA(s) {
  if (!s) return "—";
  if (s < 90) return Math.round(s) + " s";
  if (s < 5400) return Math.round(s / 60) + " min";
  return (s / 3600).toFixed(1) + " h";
}

// finalRun says whether a run counts in the table: the seeds of an arm
// without a search, or those at the rate its search chose.
function finalRun(arm, run) { return !run.lr || !arm.lr || run.lr === arm.lr; }

function defaultSelection(exp) {
  const running = [], final = [];
  for (const a of exp.arms) for (const r of a.runs) {
    if (r.status === "running") running.push(r.id);
    if (finalRun(a, r) && r.status === "done") final.push(r.id);
  }
  return (running.length ? running : final).slice(0, 12);
}

function renderExperiments() {
  const sel = $("experiment");
  const keys = state.listing.experiments.map(expKey);
  if (sel.options.length !== keys.length || [...sel.options].some((o, i) => o.value !== keys[i])) {
    sel.replaceChildren(...keys.map((k) => el("option", { value: k }, k)));
  }
  if (!keys.includes(state.exp)) {
    const fromHash = decodeURIComponent((location.hash.match(/exp=([^&]+)/) || [])[1] || "");
    state.exp = keys.includes(fromHash) ? fromHash : keys[0] || "";
    state.touched = false;
  }
  sel.value = state.exp;
  const exp = currentExp();
  $("exp-title").textContent = exp ? [exp.title, exp.reference].filter(Boolean).join(" — ") : "no results under this folder yet";
  $("tab-findings").disabled = !state.listing.has_findings;
  $("tab-table").disabled = !(exp && exp.has_table);
}

function renderSidebar(exp) {
  const box = $("arms");
  box.replaceChildren();
  if (!exp) return;
  for (const a of exp.arms) {
    const labels = Object.entries(a.labels || {}).map(([k, v]) => k + ": " + v).join(", ");
    const head = el("div", { class: "arm-name" }, a.name);
    const div = el("div", { class: "arm", "data-arm": a.name }, head);
    if (labels) div.append(el("div", { class: "arm-labels" }, labels));
    if (a.lr) div.append(el("div", { class: "arm-labels" }, "lr chosen " + a.lr + (a.lr_edge ? " (edge of the grid)" : "")));
    for (const r of a.runs) {
      const cb = el("input", { type: "checkbox", "data-run": r.id });
      cb.checked = state.selected.has(r.id);
      cb.addEventListener("change", () => {
        state.touched = true;
        if (cb.checked) state.selected.add(r.id); else state.selected.delete(r.id);
        refreshCurves();
        renderTable(exp);
      });
      let what = "seed " + r.seed + (r.lr ? " · lr " + r.lr : "") + (r.search ? " · search" : "");
      div.append(el("label", { class: "run" }, cb, el("span", {}, what), el("span", { class: "badge " + r.status }, r.status)));
    }
    box.append(div);
  }
}

function renderTable(exp) {
  const body = $("runs-table").querySelector("tbody");
  body.replaceChildren();
  if (!exp) return;
  for (const a of exp.arms) for (const r of a.runs) {
    const on = state.selected.has(r.id);
    const swatch = el("span", { class: "badge" }, on ? "●" : "");
    if (on) swatch.style.color = colourOf(r.id);
    const progress = r.steps ? r.step + " / " + r.steps : String(r.step || "—");
    body.append(el("tr", { "data-run": r.id, "data-status": r.status },
      el("td", {}, swatch), el("td", {}, runLabel(a, r)), el("td", {}, el("span", { class: "badge " + r.status, title: r.note || "" }, r.status)),
      el("td", {}, progress), el("td", {}, fmt(r.tokens_per_s, 0)), el("td", {}, r.status === "running" ? fmtETA(r.eta_s) : "—"),
      el("td", {}, fmt(r.loss, 4)), el("td", {}, fmt(r.val_ppl, 3)), el("td", {}, fmt(r.test_ppl, 3)),
      el("td", {}, r.accuracy === undefined ? "—" : Number(r.accuracy).toFixed(3))));
  }
}

function niceTicks(lo, hi, n, integer) {
  if (!(hi > lo)) { hi = lo + 1; }
  const step0 = (hi - lo) / n, mag = Math.pow(10, Math.floor(Math.log10(step0)));
  let step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= step0);
  if (integer) step = Math.max(1, Math.round(step));
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-12; v += step) out.push(+v.toPrecision(12));
  return out;
}

// drawChart draws one line per series into svg: x is the step, y linear or
// log10; each polyline carries data-run and data-points (tests read them).
function drawChart(svg, series, logY, markers) {
  svg.replaceChildren();
  const W = svg.clientWidth || 600, H = svg.clientHeight || 260, L = 48, R = 10, T = 8, B = 24;
  svg.setAttribute("viewBox", "0 0 " + W + " " + H);
  const pts = series.flatMap((s) => s.x.map((x, i) => [x, s.y[i]])).filter(([, y]) => Number.isFinite(y) && (!logY || y > 0));
  svg.setAttribute("data-points", String(pts.length));
  if (!pts.length) {
    svg.append(Object.assign(svgEl("text", { x: W / 2, y: H / 2, "text-anchor": "middle" }), { textContent: "no points yet" }));
    return;
  }
  const ty = (y) => (logY ? Math.log10(y) : y);
  let x0 = Math.min(...pts.map((p) => p[0])), x1 = Math.max(...pts.map((p) => p[0]));
  let y0 = Math.min(...pts.map((p) => ty(p[1]))), y1 = Math.max(...pts.map((p) => ty(p[1])));
  if (x1 === x0) { x0 -= 1; x1 += 1; }
  if (y1 === y0) { y1 += 0.5; y0 -= 0.5; }
  const sx = (x) => L + ((x - x0) / (x1 - x0)) * (W - L - R);
  const sy = (y) => T + (1 - (ty(y) - y0) / (y1 - y0)) * (H - T - B);
  for (const v of niceTicks(y0, y1, 5)) {
    const yy = T + (1 - (v - y0) / (y1 - y0)) * (H - T - B);
    svg.append(svgEl("line", { class: "grid", x1: L, x2: W - R, y1: yy, y2: yy }));
    const label = logY ? (Math.pow(10, v)).toPrecision(3) : String(+v.toPrecision(4));
    svg.append(Object.assign(svgEl("text", { x: L - 4, y: yy + 3, "text-anchor": "end" }), { textContent: label }));
  }
  for (const v of niceTicks(x0, x1, 6, true)) {
    svg.append(Object.assign(svgEl("text", { x: sx(v), y: H - 6, "text-anchor": "middle" }), { textContent: String(v) }));
  }
  for (const s of series) {
    const p = s.x.map((x, i) => [x, s.y[i]]).filter(([, y]) => Number.isFinite(y) && (!logY || y > 0));
    if (!p.length) continue;
    const line = svgEl("polyline", { points: p.map(([x, y]) => sx(x).toFixed(1) + "," + sy(y).toFixed(1)).join(" "), stroke: s.colour, "data-run": s.id, "data-points": String(p.length) });
    svg.append(line);
    if (markers) {
      for (const [x, y] of p) svg.append(svgEl("circle", { cx: sx(x).toFixed(1), cy: sy(y).toFixed(1), r: 2.5, fill: s.colour }));
    }
  }
}

async function refreshCurves() {
  const exp = currentExp();
  const ids = [...state.selected];
  if (!ids.length || !exp) {
    drawChart($("chart-loss"), [], false);
    drawChart($("chart-val"), [], true);
    $("legend").replaceChildren();
    return;
  }
  const q = ids.slice(0, 64).map((id) => "id=" + encodeURIComponent(id)).join("&");
  const curves = await getJSON("/api/curves?" + q);
  const name = new Map();
  for (const a of exp.arms) for (const r of a.runs) name.set(r.id, runLabel(a, r));
  const mk = (key) => curves.map((c) => ({ id: c.id, colour: colourOf(c.id), x: c[key].step || [], y: c[key].value || [] }));
  drawChart($("chart-loss"), mk("loss"), false);
  drawChart($("chart-val"), mk("val_ppl"), true, true);
  $("legend").replaceChildren(...curves.map((c) => {
    const s = el("span", {}, name.get(c.id) || c.id);
    s.style.setProperty("--c", colourOf(c.id));
    return s;
  }));
}

async function loadDoc(target, path) {
  try {
    const d = await getJSON("/api/doc?path=" + encodeURIComponent(path));
    target.innerHTML = d.html; // rendered and escaped by the server (webui.Markdown)
  } catch (e) {
    target.textContent = String(e);
  }
}

function showView(v) {
  state.view = v;
  for (const name of ["runs", "table", "findings"]) {
    $("view-" + name).classList.toggle("hidden", name !== v);
    $("tab-" + name).classList.toggle("active", name === v);
  }
  const exp = currentExp();
  if (v === "table" && exp) loadDoc($("table-doc"), exp.name + "/" + exp.preset + "/table.md");
  if (v === "findings") loadDoc($("findings-doc"), "findings.md");
}

async function poll() {
  try {
    state.listing = await getJSON("/api/runs");
    $("root").textContent = state.listing.root;
    renderExperiments();
    const exp = currentExp();
    if (exp && !state.touched) {
      state.selected = new Set(defaultSelection(exp));
    }
    renderSidebar(exp);
    renderTable(exp);
    await refreshCurves();
    $("updated").textContent = "updated " + new Date().toLocaleTimeString();
    document.body.setAttribute("data-ready", "1");
  } catch (e) {
    $("updated").textContent = "cannot reach the server: " + e.message;
  }
  setTimeout(poll, POLL_MS);
}

document.addEventListener("DOMContentLoaded", () => {
  $("experiment").addEventListener("change", (ev) => {
    state.exp = ev.target.value;
    state.touched = false;
    location.hash = "exp=" + encodeURIComponent(state.exp);
    const exp = currentExp();
    state.selected = new Set(exp ? defaultSelection(exp) : []);
    renderExperiments(); renderSidebar(exp); renderTable(exp); refreshCurves();
    showView(state.view);
  });
  for (const b of document.querySelectorAll("button.tab")) b.addEventListener("click", () => showView(b.dataset.view));
  $("select-running").addEventListener("click", () => {
    const exp = currentExp();
    state.touched = true;
    state.selected = new Set(exp ? exp.arms.flatMap((a) => a.runs.filter((r) => r.status === "running").map((r) => r.id)) : []);
    renderSidebar(exp); renderTable(exp); refreshCurves();
  });
  $("select-final").addEventListener("click", () => {
    const exp = currentExp();
    state.touched = true;
    state.selected = new Set(exp ? exp.arms.flatMap((a) => a.runs.filter((r) => finalRun(a, r)).map((r) => r.id)).slice(0, 64) : []);
    renderSidebar(exp); renderTable(exp); refreshCurves();
  });
  $("select-none").addEventListener("click", () => {
    state.touched = true;
    state.selected = new Set();
    renderSidebar(currentExp()); renderTable(currentExp()); refreshCurves();
  });
  poll();
});
