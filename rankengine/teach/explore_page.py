"""The explorer's page: one self-contained HTML file (inline style and
script, no external reference) that draws what :mod:`rankengine.teach.explore`
exports.

The script never decides where a search goes or what a span becomes: it
draws the shapes, traces and frames it is given, one frame at a time.  The
data sits in the page as JSON (``<script type="application/json"
id="data">``).  In a static file, the boards and their operations were
recorded when the file was written; served by ``rankengine explore
--serve``, the page sends typed operations to ``POST /api/op`` and new-board
requests to ``POST /api/board`` and draws the records it gets back.

What a test can read from the page (stable names): ``svg#skiplist`` with
one ``g.node`` per node (``data-rank``, ``data-label``, in rank order) and
one ``g.link`` per link (``data-level``, ``data-from``, ``data-to``,
``data-span``; class ``followed`` when the search crossed it, ``changed``
when marked), ``path.drop`` per drop, ``#stepkind`` (``data-kind``),
``#steptext``, ``#ranksum`` (``data-rank``), ``#frameno``, the buttons
``#next``, ``#prev``, ``#first``, ``#last``, the selects ``#scenario``,
``#p``, ``#maxlevel``, ``body[data-first-draw]`` (milliseconds from the
script's start to the first picture).

>>> html = page_html({"live": False, "boards": []})
>>> html.startswith("<!DOCTYPE html>"), any(s in html for s in ("src=", "href=", "@import"))
(True, False)
"""

from __future__ import annotations

import json
from typing import Any, Final

__all__ = ["page_html"]

_STYLE: Final = """
*{box-sizing:border-box}
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#222;background:#fafafa}
header{background:#24324a;color:#fff;padding:8px 16px;display:flex;gap:16px;align-items:center;flex-wrap:wrap}
header h1{font-size:18px;margin:0 12px 0 0}
header label{font-size:13px}
select,input,button{font:inherit;font-size:13px}
button{cursor:pointer;padding:2px 10px}
main{display:grid;grid-template-columns:minmax(0,2fr) minmax(360px,1fr);gap:12px;padding:12px}
section{background:#fff;border:1px solid #ddd;border-radius:6px;padding:10px;min-width:0}
h2{font-size:15px;margin:0 0 6px}
.scroll{overflow-x:auto}
.fit #skiplist{max-width:100%;height:auto}
#controls{display:flex;gap:8px;align-items:center;flex-wrap:wrap;margin-bottom:8px}
#frameno{font-variant-numeric:tabular-nums;min-width:70px}
#stepkind{display:inline-block;padding:1px 8px;border-radius:10px;background:#e8eef8;font-size:12px}
#steptext{white-space:pre-wrap;font:13px/1.35 "DejaVu Sans Mono",Menlo,Consolas,monospace;background:#f6f6f6;padding:8px;border-radius:4px;min-height:3.5em;margin:6px 0}
#ranksum{font:15px "DejaVu Sans Mono",Menlo,monospace;color:#b71c1c}
svg text{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:13px}
.node rect{fill:#f6f6f6;stroke:#333}
.node.header rect{fill:#dfe6f3}
.node.focus rect{fill:#fff3c4;stroke:#e67e00;stroke-width:2}
.link line{stroke:#666;stroke-width:1.4}
.link text{fill:#555}
.link.changed line{stroke:#e67e00;stroke-width:2.6}
.link.changed text{fill:#e67e00;font-weight:bold}
.link.followed line{stroke:#d62728;stroke-width:2.8}
.link.followed text{fill:#d62728;font-weight:bold}
.acc{fill:#b71c1c;font-size:11px}
.drop{stroke:#d62728;stroke-width:2.6;fill:none}
.cursor{fill:none;stroke:#1565c0;stroke-width:2.6}
.end{fill:none;stroke:#d62728;stroke-width:2.6;stroke-dasharray:5 3}
.start{fill:#d62728}
.cmp{fill:#1565c0;font-weight:bold}
.rank{fill:#888}
table.cost{border-collapse:collapse;width:100%}
table.cost td,table.cost th{border-bottom:1px solid #eee;padding:2px 6px;text-align:right}
table.cost td:first-child,table.cost th:first-child{text-align:left}
.blk rect{fill:#f6f6f6;stroke:#555}
.blk rect.read{fill:#ffe0e0;stroke:#d62728;stroke-width:2}
.blk text.no{fill:#d62728;font-size:10px}
.muted{color:#777;font-size:12px}
#opform{display:flex;gap:6px;flex-wrap:wrap;align-items:center}
#opform input{width:70px}
#error{color:#b71c1c}
.legend span{display:inline-block;margin-right:12px;font-size:12px}
.sw{display:inline-block;width:18px;height:4px;vertical-align:middle;margin-right:4px}
"""

_BODY: Final = """
<header>
 <h1>Skip-list explorer</h1>
 <label>scenario <select id="scenario"></select></label>
 <label>p <select id="p"></select></label>
 <label>max level <select id="maxlevel"></select></label>
 <button id="newboard">new board</button>
 <span id="boardinfo" class="muted" style="color:#cfd8e8"></span>
</header>
<main>
<section>
 <div id="controls">
  <button id="first" title="first step (Home)">&laquo;</button>
  <button id="prev" title="back (left arrow)">&#x25C0;</button>
  <button id="next" title="forward (right arrow)">&#x25B6;</button>
  <button id="last" title="last step (End)">&raquo;</button>
  <button id="play" title="play / pause (space)">play</button>
  <span id="frameno"></span>
  <span id="stepkind" data-kind=""></span>
  <span>rank so far: <b id="ranksum" data-rank=""></b></span>
  <label class="muted"><input type="checkbox" id="fit" checked> fit width</label>
 </div>
 <h2 id="title"></h2>
 <div id="steptext"></div>
 <div class="scroll"><svg id="skiplist" xmlns="http://www.w3.org/2000/svg"></svg></div>
 <div class="legend">
  <span><i class="sw" style="background:#d62728"></i>links the search crossed, drops, running rank</span>
  <span><i class="sw" style="background:#1565c0"></i>where the walk stands</span>
  <span><i class="sw" style="background:#e67e00"></i>links whose span changed</span>
  <span>the number on a link is its span: level-0 steps it jumps</span>
  <span>keys: &larr; &rarr; step, Home / End, space plays</span>
 </div>
 <div id="opbox">
  <h2>Your own operation</h2>
  <form id="opform">
   <select id="op"><option value="insert">insert</option><option value="delete">delete</option>
   <option value="search">search</option><option value="update">change score</option>
   <option value="rank">rank of member</option><option value="at">entry at rank</option></select>
   <label>score <input id="score" type="number" step="any"></label>
   <label>new <input id="newscore" type="number" step="any"></label>
   <label>member <input id="member" type="text" placeholder="or by name"></label>
   <label>rank <input id="rankin" type="number" min="1"></label>
   <label>height <input id="height" type="number" min="1"></label>
   <button id="run" type="submit">run</button>
  </form>
  <div id="livehint" class="muted"></div>
  <div id="error"></div>
 </div>
</section>
<section>
 <h2>The same operation on the sorted list</h2>
 <div class="muted" id="sortedinfo"></div>
 <div class="scroll"><svg id="sorted" xmlns="http://www.w3.org/2000/svg"></svg></div>
 <div class="muted">maxes: the last score of each block, bisected to choose the block;
 block k: its scores, bisected for the slot (ties and members sit in parallel blocks);
 offsets: entries before each block, the positional index's cache; lens: the length of
 each block, from which the offsets are recomputed when a write made them stale.
 An insert or delete shifts the slots after it in its block (a memmove).</div>
 <h2>Cost: comparisons and memory touched</h2>
 <table class="cost" id="cost"></table>
 <div class="muted">Counted while the real code ran, on scores that count their comparisons.
 Skip list: nodes read (each node is an object of its own), node slots written.
 Sorted list: distinct blocks and index arrays read, slots read, slots written or shifted.</div>
 <h2 style="margin-top:12px">Node heights</h2>
 <svg id="histogram" xmlns="http://www.w3.org/2000/svg"></svg>
 <div class="muted" id="histinfo"></div>
</section>
</main>
<footer class="muted" style="padding:0 16px 12px">Drawn from the narration of rankengine's real
skip list; this page computes nothing about the list itself. <span id="timing"></span></footer>
"""

_SCRIPT: Final = r"""
"use strict";
const T0 = performance.now();
const DATA = JSON.parse(document.getElementById("data").textContent);
const $ = (id) => document.getElementById(id);
const NS = "http://www.w3.org/2000/svg";
const S = {board: 0, op: 0, frame: 0};
function el(parent, tag, attrs, text) {
  const e = document.createElementNS(NS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  parent.appendChild(e);
  return e;
}
function board() { return DATA.boards[S.board]; }
function record() { return board().ops[S.op]; }
function frames() { return record().skiplist.frames; }
function frame() { return frames()[S.frame]; }

function drawSkip(shape, f, trace) {
  const svg = $("skiplist");
  svg.innerHTML = "";
  const labels = shape.labels, nil = labels.length - 1, level = shape.heights[0];
  const box = labels.map((l) => Math.max(40, 8 * [...l].length + 16));
  const x = [44];
  for (let k = 0; k < nil; k++) x.push(x[k] + box[k] + 46);
  const top = 24, rowH = 46, boxH = 26;
  const rowY = (i) => top + (level - 1 - i) * rowH;
  const bottom = rowY(0) + boxH;
  const width = x[nil] + box[nil] + 16, height = bottom + 30;
  svg.setAttribute("width", width); svg.setAttribute("height", height);
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  const steps = trace ? trace.steps.slice(0, f.steps || 0) : [];
  const followed = new Map(steps.map((s) => [s[0] + ":" + s[1], s]));
  const marked = new Set((f.marked || []).map((m) => m[0] + ":" + m[1]));
  for (let i = 0; i < level; i++) el(svg, "text", {x: 8, y: rowY(i) + 18, class: "rank"}, "L" + i);
  el(svg, "text", {x: 4, y: bottom + 18, class: "rank"}, "rank");
  for (let k = 0; k < nil; k++) {
    const g = el(svg, "g", {class: "node " + (k ? "entry" : "header") + (f.focus === k ? " focus" : ""),
      "data-rank": k, "data-height": shape.heights[k], "data-label": labels[k]});
    for (let i = 0; i < shape.heights[k]; i++) {
      el(g, "rect", {x: x[k], y: rowY(i), width: box[k], height: boxH, rx: 3});
      el(g, "text", {x: x[k] + box[k] / 2, y: rowY(i) + 18, "text-anchor": "middle"}, labels[k]);
    }
    el(g, "text", {class: "rank", x: x[k] + box[k] / 2, y: bottom + 18, "text-anchor": "middle"}, k);
  }
  const ng = el(svg, "g", {class: "nil"});
  el(ng, "rect", {x: x[nil], y: rowY(level - 1), width: box[nil], height: bottom - rowY(level - 1), rx: 3, fill: "#eee", stroke: "#333"});
  el(ng, "text", {x: x[nil] + box[nil] / 2, y: (rowY(level - 1) + bottom) / 2 + 5, "text-anchor": "middle"}, "NIL");
  for (let i = 0; i < level; i++) {
    let k = 0;
    while (k !== nil) {
      const dst = shape.forward[k][i], span = shape.spans[k][i], key = i + ":" + k;
      const cls = followed.has(key) ? "link followed" : marked.has(key) ? "link changed" : "link";
      const g = el(svg, "g", {class: cls, "data-level": i, "data-from": k, "data-to": dst, "data-span": span});
      const x1 = x[k] + box[k], x2 = x[dst] - 1, y = rowY(i) + boxH / 2;
      el(g, "line", {x1: x1, y1: y, x2: x2, y2: y, "marker-end": "url(#arrow)"});
      el(g, "text", {x: (x1 + x2) / 2, y: y - 5, "text-anchor": "middle"}, span);
      if (followed.has(key)) el(g, "text", {class: "acc", x: (x1 + x2) / 2, y: y + 15, "text-anchor": "middle"}, "rank " + followed.get(key)[4]);
      k = dst;
    }
  }
  const defs = el(svg, "defs", {});
  const mk = el(defs, "marker", {id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerUnits: "userSpaceOnUse", markerWidth: 9, markerHeight: 9, orient: "auto-start-reverse"});
  el(mk, "path", {d: "M 0 0 L 10 5 L 0 10 z", fill: "#555"});
  if (trace) {
    for (const [lvl, node] of trace.drops.slice(0, f.drops || 0)) {
      const cx = x[node] + box[node] / 2;
      el(svg, "path", {class: "drop", "data-level": lvl, "data-node": node, d: `M ${cx} ${rowY(lvl) + boxH} L ${cx} ${rowY(lvl - 1) - 1}`});
    }
    for (const [lvl, node] of trace.restarts.slice(0, f.restarts || 0))
      el(svg, "circle", {class: "start", "data-level": lvl, "data-node": node, cx: x[node] + 6, cy: rowY(lvl) + 6, r: 4});
    if (f.kind === "result" || f.kind === "table")
      el(svg, "rect", {class: "end", "data-node": trace.end, x: x[trace.end] - 4, y: rowY(0) - 4, width: box[trace.end] + 8, height: boxH + 8, rx: 5});
  }
  if (f.at) {
    const [lvl, node] = f.at;
    el(svg, "rect", {class: "cursor", "data-level": lvl, "data-node": node, x: x[node] - 3, y: rowY(lvl) - 3, width: box[node] + 6, height: boxH + 6, rx: 4});
    if (f.compare) el(svg, "text", {class: "cmp", x: x[node] + box[node] + 6, y: rowY(lvl) - 6}, f.compare);
  }
}

function drawSorted(rec, f) {
  const svg = $("sorted");
  svg.innerHTML = "";
  const side = rec.sorted, after = f.shape === "after";
  const lay = after ? side.after : side.before;
  const names = board().board.label === "member" ? lay.members : lay.scores.map((b) => b.map(String));
  const reads = after ? [] : side.reads;
  const cell = 40, h = 24;
  let y = 8, width = 300;
  const readAt = new Map();
  reads.forEach((r, n) => { const k = r[0] + ":" + r[1] + ":" + r[2]; if (!readAt.has(k)) readAt.set(k, n + 1); });
  const row = (label, values, col, blockNo) => {
    el(svg, "text", {x: 4, y: y + 16, class: "rank"}, label);
    values.forEach((v, a) => {
      const g = el(svg, "g", {class: "blk", "data-col": col, "data-block": blockNo, "data-slot": a});
      const n = readAt.get(col + ":" + blockNo + ":" + a) || (col === "p" && readAt.get("t:" + blockNo + ":" + a));
      el(g, "rect", {x: 80 + a * cell, y: y, width: cell - 4, height: h, rx: 3, class: n ? "read" : ""});
      el(g, "text", {x: 80 + a * cell + (cell - 4) / 2, y: y + 16, "text-anchor": "middle"}, String(v).slice(0, 5));
      if (n) el(g, "text", {class: "no", x: 80 + a * cell + cell - 8, y: y + 9, "text-anchor": "end"}, n);
    });
    width = Math.max(width, 90 + values.length * cell);
    y += h + 8;
  };
  row("maxes", lay.maxes.map(String), "maxes", -1);
  if (lay.offsets.length) row("offsets", lay.offsets, "offsets", -1);
  names.forEach((b, i) => row("block " + i, b, "p", i));
  if (lay.lens.length) row("lens", lay.lens, "lens", -1);
  svg.setAttribute("width", width); svg.setAttribute("height", y);
  let info = `${lay.scores.length} blocks of ${lay.load} to ${2 * lay.load} entries (load ${lay.load}); `;
  info += after ? "after the operation." : `before the operation; red: the ${reads.length} slots read, in order.`;
  if (side.blocks_before !== side.blocks_after) info += ` Blocks: ${side.blocks_before} -> ${side.blocks_after}.`;
  $("sortedinfo").textContent = info;
  const c = rec.cost, rows = [["", "skip list", "sorted list"],
    ["score comparisons", c.skiplist.comparisons, c.sorted.comparisons],
    ["objects read", c.skiplist.objects, c.sorted.objects],
    ["slots written or shifted", c.skiplist.writes, c.sorted.writes]];
  $("cost").innerHTML = rows.map((r, n) => "<tr>" + r.map((v) => (n ? "<td>" : "<th>") + v + (n ? "</td>" : "</th>")).join("") + "</tr>").join("");
}

function drawHistogram(h) {
  const svg = $("histogram");
  svg.innerHTML = "";
  const n = h.counts.length, bw = 34, H = 120, top = Math.max(1, ...h.counts, ...h.expected);
  const W = 40 + n * (bw + 10);
  svg.setAttribute("width", W); svg.setAttribute("height", H + 40);
  h.counts.forEach((c, k) => {
    const x = 30 + k * (bw + 10), bh = (c / top) * H, eh = (h.expected[k] / top) * H;
    const g = el(svg, "g", {class: "bar", "data-k": k, "data-count": c, "data-expected": h.expected[k]});
    el(g, "rect", {x: x, y: 10 + H - bh, width: bw, height: bh, fill: "#9db3d9"});
    el(g, "line", {x1: x - 3, x2: x + bw + 3, y1: 10 + H - eh, y2: 10 + H - eh, stroke: "#d62728", "stroke-width": 2.5});
    el(g, "text", {x: x + bw / 2, y: 10 + H - bh - 3, "text-anchor": "middle", style: "font-size:11px"}, c);
    el(g, "text", {x: x + bw / 2, y: H + 26, "text-anchor": "middle", style: "font-size:11px"}, "k=" + k);
  });
  $("histinfo").textContent = `Bars: nodes reaching exactly k levels above level 0 (N = ${h.n}). ` +
    `Red lines: expected N * p^k * (1 - p) with p = ${h.p}` +
    (h.counts.length === board().board.max_level ? " (N * p^k on the top level, where the draw stops)." : ".");
}

function render() {
  const rec = record(), fs = frames(), f = frame(), sl = rec.skiplist;
  const shape = sl[f.shape] || sl.before;
  const trace = f.trace ? sl.traces[f.trace] : null;
  drawSkip(shape, f, trace);
  drawHistogram(sl.histograms[f.shape] || sl.histograms.before);
  const b = board().board;
  $("boardinfo").textContent = `${shape.labels.length - 2} entries, ${shape.heights[0]} levels, p = ${b.p}, max level ${b.max_level}, seed ${b.seed}`;
  drawSorted(rec, f);
  $("title").textContent = rec.title;
  $("frameno").textContent = `${S.frame + 1} / ${fs.length}`;
  $("stepkind").textContent = f.kind;
  $("stepkind").dataset.kind = f.kind;
  $("steptext").textContent = f.text;
  const rank = f.trace ? (f.rank || 0) : null;
  $("ranksum").textContent = f.trace ? (f.sum || String(rank)) : "-";
  $("ranksum").dataset.rank = rank === null ? "" : rank;
  $("prev").disabled = $("first").disabled = S.frame === 0;
  $("next").disabled = $("last").disabled = S.frame === fs.length - 1;
}
function go(n) { S.frame = Math.max(0, Math.min(frames().length - 1, n)); render(); }
let timer = null;
function play() {
  if (timer !== null) { clearInterval(timer); timer = null; $("play").textContent = "play"; return; }
  if (S.frame === frames().length - 1) go(0);
  $("play").textContent = "pause";
  timer = setInterval(() => { if (S.frame >= frames().length - 1) play(); else go(S.frame + 1); }, 1200);
}

function fillScenarios() {
  const sel = $("scenario"), b = board();
  sel.innerHTML = "";
  b.ops.forEach((r, i) => {
    const o = document.createElement("option");
    o.value = i; o.textContent = (i < (b.recorded || 0) ? "recorded: " : "") + r.title;
    sel.appendChild(o);
  });
  sel.value = S.op;
}
function fillSettings() {
  const ps = [...new Set(DATA.choices.p)], ms = [...new Set(DATA.choices.max_level)];
  $("p").innerHTML = ps.map((p) => `<option value="${p}">${p}</option>`).join("");
  $("maxlevel").innerHTML = ms.map((m) => `<option value="${m}">${m}</option>`).join("");
  $("p").value = board().board.p; $("maxlevel").value = board().board.max_level;
}
async function post(path, body) {
  const r = await fetch(path, {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
  const out = await r.json();
  if (!r.ok) throw new Error(out.error || r.statusText);
  return out;
}
async function newBoard() {
  $("error").textContent = "";
  const p = Number($("p").value), m = Number($("maxlevel").value);
  if (DATA.live) {
    try {
      const b = await post("/api/board", {p: p, max_level: m});
      DATA.boards.push(b); S.board = DATA.boards.length - 1;
    } catch (e) { $("error").textContent = e.message; return; }
  } else {
    const i = DATA.boards.findIndex((b) => b.board.p === p && b.board.max_level === m);
    if (i < 0) { $("error").textContent = "not pre-generated in this file: use --serve for any p and max level"; return; }
    S.board = i;
  }
  S.op = 0; S.frame = 0; fillScenarios(); render();
}
async function runOp(ev) {
  ev.preventDefault();
  $("error").textContent = "";
  if (!DATA.live) return;
  const op = {op: $("op").value}, num = (id) => $(id).value === "" ? undefined : Number($(id).value);
  if ($("member").value) op.member = $("member").value;
  if (op.op !== "at" && op.op !== "rank") op.score = num("score");
  if (op.op === "update") op["new"] = num("newscore");
  if (op.op === "at") op.rank = num("rankin");
  if (op.op === "insert" && num("height") !== undefined) op.height = num("height");
  try {
    const rec = await post("/api/op", op);
    const b = board();
    b.ops.push(rec); S.op = b.ops.length - 1; S.frame = 0;
    fillScenarios(); render();
  } catch (e) { $("error").textContent = e.message; }
}
$("next").onclick = () => go(S.frame + 1);
$("prev").onclick = () => go(S.frame - 1);
$("first").onclick = () => go(0);
$("last").onclick = () => go(frames().length - 1);
$("scenario").onchange = () => { if (timer !== null) play(); S.op = Number($("scenario").value); S.frame = 0; fillScenarios(); render(); $("scenario").blur(); };
// the fields an operation reads: the others are hidden
const FIELDS = {insert: ["score", "member", "height"], delete: ["score", "member"], search: ["score", "member"],
  update: ["score", "member", "newscore"], rank: ["member"], at: ["rankin"]};
function showFields() {
  for (const id of ["score", "newscore", "member", "rankin", "height"])
    $(id).parentElement.style.display = FIELDS[$("op").value].includes(id) ? "" : "none";
}
$("op").onchange = showFields;
showFields();
$("newboard").onclick = newBoard;
$("play").onclick = play;
$("fit").onchange = () => document.body.classList.toggle("fit", $("fit").checked);
document.body.classList.toggle("fit", $("fit").checked);
$("opform").onsubmit = runOp;
document.addEventListener("keydown", (e) => {
  if (e.target.tagName === "INPUT") return;
  if (e.key === "ArrowRight") go(S.frame + 1);
  else if (e.key === "ArrowLeft") go(S.frame - 1);
  else if (e.key === "Home") go(0);
  else if (e.key === "End") go(frames().length - 1);
  else if (e.key === " ") { e.preventDefault(); play(); }
});
if (!DATA.live) {
  for (const e of $("opform").elements) e.disabled = true;
  $("livehint").textContent = "This file plays recorded operations. To type your own, run: rankengine explore --serve";
} else {
  $("livehint").textContent = "Served live: each operation runs on the real skip list behind this page.";
}
fillSettings(); fillScenarios(); render();
const ms = performance.now() - T0;
document.body.dataset.firstDraw = ms.toFixed(1);
$("timing").textContent = `First draw: ${ms.toFixed(1)} ms.`;
"""


def page_html(data: dict[str, Any], *, title: str = "Skip-list explorer") -> str:
    """The page with ``data`` (``{"live": bool, "boards": [...],
    "choices": {...}}``) inlined.

    Runtime complexity: O(size of data)
    """
    payload = json.dumps(data, separators=(",", ":"), ensure_ascii=True)
    # "</" would end the script element early; "<\\/" is the same JSON.
    payload = payload.replace("</", "<\\/")
    safe_title = title.replace("&", "&amp;").replace("<", "&lt;")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{safe_title}</title>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<style>{_STYLE}</style></head><body>{_BODY}"
        f'<script type="application/json" id="data">{payload}</script>'
        f"<script>{_SCRIPT}</script></body></html>\n"
    )
