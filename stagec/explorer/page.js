(function () {
"use strict";
var D = JSON.parse(document.getElementById("stagec-data").textContent);
var LH = 18, AUTO_GRAPH = 1500;
var $ = function (id) { return document.getElementById(id); };
var code = $("code"), win = $("win"), spacer = $("spacer"), gview = $("gview");
var cur = -1, mode = "text", rows = [], hit = -1, svg = null, scale = 1, queued = false, drawn = {};

function textRows(st) {
  var out = new Array(st.lines.length);
  for (var i = 0; i < st.lines.length; i++) out[i] = [0, st.lines[i], i, i];
  return out;
}
function locCell(st, n) {
  if (!st.loc) return "";
  var k = st.loc[n];
  if (k < 0 || k === undefined) return '<span class="loc"></span>';
  var l = D.locs[k];
  return '<span class="loc" title="' + l[1].replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;") + '">' +
    l[0].replace(/&/g, "&amp;").replace(/</g, "&lt;") + "</span>";
}
function rowHtml(r, i) {
  var st = D.stages[cur], k = r[0];
  if (k === 3) return '<div class="r fold" data-i="' + i + '">\u22ef ' + r[3] + " unchanged line" + (r[3] > 1 ? "s" : "") + "</div>";
  var src = k === 1 ? D.stages[st.prev] : st, n = k === 1 ? r[2] : (k === 2 ? r[2] : r[3]);
  var sign = mode === "diff" ? '<span class="sg">' + " -+"[k] + "</span>" : "";
  var cls = "r k" + k + (mode === "text" && n === hit ? " hit" : "");
  var anyLoc = st.loc || (mode === "diff" && st.prev >= 0 && D.stages[st.prev].loc);
  var loc = anyLoc ? (src.loc ? locCell(src, n) : '<span class="loc"></span>') : "";
  return '<div class="' + cls + '" data-n="' + n + '" data-k="' + k + '"><span class="no">' + (n + 1) + "</span>" + loc + sign + D.lines[r[1]] + "</div>";
}
function draw() {
  queued = false;
  var top = code.scrollTop, h = code.clientHeight || 600;
  var first = Math.max(0, Math.floor(top / LH) - 30), last = Math.min(rows.length, Math.ceil((top + h) / LH) + 30);
  var out = [];
  for (var i = first; i < last; i++) out.push(rowHtml(rows[i], i));
  win.style.top = first * LH + "px";
  win.innerHTML = out.join("");
}
function redraw() { if (!queued) { queued = true; requestAnimationFrame(draw); } }
code.addEventListener("scroll", redraw);
window.addEventListener("resize", redraw);

function setMode(m) {
  var st = D.stages[cur];
  mode = m === "diff" && st.diff ? "diff" : "text";
  rows = mode === "diff" ? st.diff.slice() : textRows(st);
  spacer.style.height = rows.length * LH + "px";
  $("b-text").className = mode === "text" ? "on" : "";
  $("b-diff").className = mode === "diff" ? "on" : "";
  $("b-diff").disabled = !st.diff;
  $("lnote").textContent = mode === "diff" ? D.stages[st.prev].name + " \u2192 " + st.name :
    st.lines.length + " lines, " + st.ops + " ops";
  code.scrollTop = 0;
  draw();
}
function showStage(s, m) {
  cur = s;
  var lis = document.querySelectorAll("#side li[data-s]");
  for (var i = 0; i < lis.length; i++) lis[i].className = +lis[i].getAttribute("data-s") === s ? "on" : "";
  $("lname").textContent = D.stages[s].name;
  hit = -1;
  setMode(m || mode);
  showGraph(s, false);
}
function showGraph(s, force) {
  var st = D.stages[s];
  $("gname").textContent = st.name;
  svg = null;
  if (st.graph < 0) {
    gview.innerHTML = '<div class="note">No graph for this stage (' + st.ops + " ops); pass graph=\"" + st.name + "\" to draw it.</div>";
    $("gnote").textContent = "";
    return;
  }
  if (st.ops > AUTO_GRAPH && !force && !drawn[st.graph]) {
    gview.innerHTML = '<div class="note">' + st.ops + ' ops.<button type="button" id="g-draw">draw the graph</button></div>';
    $("g-draw").onclick = function () { showGraph(s, true); };
    $("gnote").textContent = "";
    return;
  }
  drawn[st.graph] = true;
  gview.replaceChildren(document.getElementById("g" + st.graph).content.cloneNode(true));
  svg = gview.querySelector("svg");
  $("gnote").textContent = st.ops + " ops \u00b7 click a node for its line";
  fit();
}
function zoom(k) {
  if (!svg) return;
  scale = Math.max(0.05, Math.min(4, k));
  svg.setAttribute("width", +svg.getAttribute("data-w") * scale);
  svg.setAttribute("height", +svg.getAttribute("data-h") * scale);
}
function fit() {
  if (!svg) return;
  zoom(Math.max(0.5, Math.min(1.25, (gview.clientWidth - 8) / +svg.getAttribute("data-w"))));
}
$("z-in").onclick = function () { zoom(scale * 1.25); };
$("z-out").onclick = function () { zoom(scale / 1.25); };
$("z-fit").onclick = fit;
$("b-text").onclick = function () { setMode("text"); };
$("b-diff").onclick = function () { setMode("diff"); };
document.querySelector("#side").addEventListener("click", function (e) {
  var li = e.target.closest("li[data-s]");
  if (li) showStage(+li.getAttribute("data-s"));
});
function goLine(n) {
  if (mode !== "text") setMode("text");
  hit = n;
  code.scrollTop = Math.max(0, n * LH - code.clientHeight / 3);
  draw();
}
gview.addEventListener("click", function (e) {
  var g = e.target.closest("[data-line]");
  if (!g) return;
  goLine(+g.getAttribute("data-line"));
  mark(g);
});
function mark(g) {
  var old = gview.querySelectorAll(".hit");
  for (var i = 0; i < old.length; i++) old[i].classList.remove("hit");
  if (g) g.classList.add("hit");
}
win.addEventListener("click", function (e) {
  var f = e.target.closest(".fold");
  if (f) {
    var i = +f.getAttribute("data-i"), r = rows[i], prev = D.stages[D.stages[cur].prev], add = [];
    for (var j = 0; j < r[3]; j++) add.push([0, prev.lines[r[1] + j], r[1] + j, r[2] + j]);
    rows.splice.apply(rows, [i, 1].concat(add));
    spacer.style.height = rows.length * LH + "px";
    draw();
    return;
  }
  var loc = e.target.closest(".loc"), t = loc && loc.getAttribute("title") || "";
  if (D.stages[cur].kind === "dispatch" && D.final >= 0 && t.indexOf("<stdin>:") === 0) {
    showStage(D.final, "text");  // IREE names the module it compiled <stdin>: the final stage
    goLine(+t.slice(8) - 1);
    return;
  }
  var row = e.target.closest(".r");
  if (!row || !svg || row.getAttribute("data-k") === "1") return;
  var n = +row.getAttribute("data-n"), g = svg.querySelector('.op[data-line="' + n + '"]');
  mark(g);
  if (g) {
    var b = g.getBBox();
    gview.scrollLeft = (b.x + b.width / 2) * scale - gview.clientWidth / 2;
    gview.scrollTop = (b.y + b.height / 2) * scale - gview.clientHeight / 2;
  }
});
document.addEventListener("keydown", function (e) {
  if (e.target.tagName === "INPUT") return;
  if (e.key === "j" || e.key === "ArrowDown" && e.altKey) showStage(Math.min(D.stages.length - 1, cur + 1));
  else if (e.key === "k" || e.key === "ArrowUp" && e.altKey) showStage(Math.max(0, cur - 1));
  else if (e.key === "d") setMode(mode === "diff" ? "text" : "diff");
});
function fromHash() {
  if (!D.stages.length) {
    win.innerHTML = '<div class="note">No MLIR in this page: what is known is in the header.</div>';
    gview.innerHTML = "";
    ["b-text", "b-diff", "z-in", "z-out", "z-fit"].forEach(function (id) { $(id).disabled = true; });
    return;
  }
  var h = decodeURIComponent(location.hash.slice(1)), m = h.endsWith(":diff") ? "diff" : "text";
  var name = m === "diff" ? h.slice(0, -5) : h;
  for (var i = 0; i < D.stages.length; i++) if (D.stages[i].name === name) return showStage(i, m);
  showStage(cur < 0 ? D.start : cur, "text");
}
window.addEventListener("hashchange", fromHash);
fromHash();
})();
