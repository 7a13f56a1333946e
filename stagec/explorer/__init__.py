"""One self-contained HTML page for one compiled function: every stage's MLIR, syntax-coloured, the
diff each pass made, its statistics and times, and the dataflow graph drawn as SVG.

A pure renderer over plain data (names, texts, numbers): it imports nothing from the compiler, so a
dump folder or an artifact can be drawn anywhere. No network: CSS, JS and SVG are inline. Listings
are virtualised (only the visible lines are in the DOM) and each stage's graph is built lazily from
a <template>, so a 5,000-op module opens at once.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import os
from typing import Any, Iterable, Mapping, Sequence

from . import mlirtext
from .diff import opcodes
from .graph import draw_graph
from .mlirtext import Op, esc, highlight

GRAPH_MAX_OPS = 2000  # stages with more ops get a graph only when chosen (`graph=`)
CONTEXT = 3  # unchanged lines kept around each change in a diff


def render(title: str, stages: Sequence[tuple[str, str]], *, pass_stats: Iterable[Any] = (),
           timings: Mapping[str, float] | None = None, info: Mapping[str, str] | None = None,
           dispatches: Sequence[tuple[str, str]] = (), graph: str | None = None) -> str:
    """The page for `stages` ((name, MLIR text) in compile order) and IREE's `dispatches` (either may
    be empty: an AOT artifact holds no MLIR, its page shows `info`).

    `pass_stats`: per pass run, a mapping (or a dataclass such as `stagec.passes.PassStats`) with
    name, ops_before, ops_after, seconds and rewrites ({pattern: count}). `timings`: seconds by phase
    ("trace", "lower", "compile", "first call", ...). `info`: short facts ("backend", "disk cache").
    `graph`: the stage whose graph is always drawn, whatever its size (default: "final", else the last).
    """
    names = [n for n, _ in stages]
    every = names + [n for n, _ in dispatches]
    chosen = graph if graph is not None else ("final" if "final" in names else every[-1] if every else None)
    if chosen is not None and chosen not in every:
        raise ValueError(f"graph={chosen!r} is not a stage; stages: {every}")
    lines = _LineTable()
    data, parsed, drawn, templates = [], {}, {}, []
    for kind, items in (("stage", stages), ("dispatch", dispatches)):
        for name, text in items:
            if text not in parsed:  # passes that change nothing: parse, store and draw once
                parsed[text] = _parse(text, lines)
            st = _Stage(name, kind, *parsed[text])
            if kind == "stage" and data:
                st.diff(data[-1], len(data) - 1)
            if (name == chosen or len(st.ops) <= GRAPH_MAX_OPS) and text not in drawn:
                drawn[text] = len(templates)
                templates.append(f'<template id="g{len(templates)}">{draw_graph(st.ops, len(templates))}</template>')
            st.graph = drawn.get(text, -1)
            data.append(st)
    stats = _match_stats(names, pass_stats)
    payload = {"lines": lines.html, "locs": lines.locs, "stages": [s.json() for s in data],
               "start": next((i for i, s in enumerate(data) if s.name == chosen), -1),
               "final": next((i for i, s in enumerate(data) if s.name == "final"), -1)}
    return _asset("page.html").format(
        title=esc(title), css=_asset("page.css"), js=_asset("page.js"), templates="\n".join(templates),
        side=_sidebar(data, stats, timings or {}), info=_info(info or {}),
        data=json.dumps(payload, separators=(",", ":")).replace("</", "<\\/").replace("<!", "<\\u0021"))


def write(path: str | os.PathLike, title: str, stages: Sequence[tuple[str, str]], **kwargs) -> str:
    """Write `render(title, stages, **kwargs)` to `path`; return the path."""
    path = os.fspath(path)
    with open(path, "w", encoding="utf-8") as f:
        f.write(render(title, stages, **kwargs))
    return path


# ---------------------------------------------------------------- stages, lines and diffs


class _LineTable:
    """Each distinct highlighted line and location once; stages refer to them by index."""

    def __init__(self):
        self.html: list[str] = []
        self.locs: list[list[str]] = []
        self._ids: dict[str, int] = {}
        self._loc_ids: dict[str, int] = {}

    def line(self, text: str) -> int:
        i = self._ids.get(text)
        if i is None:
            i = self._ids[text] = len(self.html)
            self.html.append(highlight(text))
        return i

    def loc(self, short: str | None, full: str | None) -> int:
        if short is None:
            return -1
        i = self._loc_ids.get(full)
        if i is None:
            i = self._loc_ids[full] = len(self.locs)
            self.locs.append([short, full])
        return i


def _parse(text: str, table: _LineTable) -> tuple[list[int], list[Op], list[int] | None]:
    """(line ids, ops, location ids or None) of one stage's text."""
    lines, short, full = mlirtext.split_locs(text)
    lines = [mlirtext.collapse_dense(s) for s in lines]
    ops = mlirtext.parse_ops(lines)
    locs = [table.loc(s, f) for s, f in zip(short, full)]
    for op in ops:  # an op with regions has its location on its closing line
        if locs[op.line] < 0 and locs[op.end] >= 0:
            locs[op.line] = locs[op.end]
    return [table.line(s) for s in lines], ops, locs if any(i >= 0 for i in locs) else None


@dataclasses.dataclass(eq=False)
class _Stage:
    name: str
    kind: str
    ids: list[int]
    ops: list[Op]
    locs: list[int] | None
    graph: int = -1  # its graph's <template>, shared by stages of the same text
    prev: int = -1
    rows: list | None = None
    added: int = 0
    removed: int = 0

    def diff(self, before: _Stage, index: int) -> None:
        """Rows of a unified diff against `before`: [0, line, a, b] kept, [1, line, a] removed,
        [2, line, b] added, [3, a, b, n] n unchanged lines folded."""
        self.prev, rows = index, []
        for tag, a0, a1, b0, b1 in opcodes(before.ids, self.ids):
            if tag == "equal":
                n = a1 - a0
                head = 0 if a0 == 0 and b0 == 0 else CONTEXT
                tail = 0 if a1 == len(before.ids) and b1 == len(self.ids) else CONTEXT
                fold = (head, n - tail) if n > head + tail + 1 else (n, n)
                rows += [[0, self.ids[b0 + k], a0 + k, b0 + k] for k in range(fold[0])]
                if fold[1] > fold[0]:
                    rows.append([3, a0 + fold[0], b0 + fold[0], fold[1] - fold[0]])
                rows += [[0, self.ids[b0 + k], a0 + k, b0 + k] for k in range(fold[1], n)]
                continue
            rows += [[1, before.ids[a], a] for a in range(a0, a1)]
            rows += [[2, self.ids[b], b] for b in range(b0, b1)]
            self.removed += a1 - a0
            self.added += b1 - b0
        self.rows = rows

    def json(self) -> dict:
        return {"name": self.name, "kind": self.kind, "lines": self.ids, "loc": self.locs, "prev": self.prev,
                "diff": self.rows, "graph": self.graph, "ops": len(self.ops)}


def _match_stats(names: list[str], pass_stats: Iterable[Any]) -> dict[str, dict]:
    """Each pass's statistics by the stage it produced (a pass run twice names `simplify#2`)."""
    out, seen = {}, {}
    for s in pass_stats:
        s = {f.name: getattr(s, f.name) for f in dataclasses.fields(s)} if dataclasses.is_dataclass(s) else dict(s)
        seen[s["name"]] = seen.get(s["name"], 0) + 1
        key = s["name"] if seen[s["name"]] == 1 else f"{s['name']}#{seen[s['name']]}"
        if key in names:
            out[key] = s
    return out


# ---------------------------------------------------------------- the page


def _seconds(s: float) -> str:
    return f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.2f} s"


def _sidebar(data: list[_Stage], stats: dict[str, dict], timings: Mapping[str, float]) -> str:
    longest = max([s.get("seconds", 0.0) for s in stats.values()] + [1e-9])
    out = ['<h2>Stages</h2><ol class="stages">']
    for i, st in enumerate(data):
        if st.kind == "dispatch" and (i == 0 or data[i - 1].kind != "dispatch"):
            out.append('</ol><h2>IREE dispatches</h2><ol class="stages">')
        s, meta, extra = stats.get(st.name), f"{len(st.ops)} ops", ""
        if s is not None:
            seconds = s.get("seconds", 0.0)
            meta = f'ops {s.get("ops_before", "?")} &rarr; {s.get("ops_after", "?")} &middot; {_seconds(seconds)}'
            rw = ", ".join(f"{esc(k)} &times;{v}" for k, v in sorted(dict(s.get("rewrites") or {}).items()) if v)
            extra = (f'<div class="rw">{rw or "no rewrites"}</div><div class="tb"><i style="width:'
                     f'{100 * seconds / longest:.1f}%"></i></div>')
        if st.prev >= 0:
            meta += f' &middot; <span class="pl">+{st.added}</span> <span class="mi">&minus;{st.removed}</span>'
        out.append(f'<li data-s="{i}"><div class="nm">{esc(st.name)}</div><div class="m">{meta}</div>{extra}</li>')
    out.append("</ol>" if data else '</ol><p class="m">No MLIR here.</p>')
    if timings:
        top = max(list(timings.values()) + [1e-9])
        out.append('<h2>Times</h2><table class="times">')
        for k, v in timings.items():
            out.append(f'<tr><td>{esc(k)}</td><td class="sec">{_seconds(v)}</td><td class="tb"><i style="width:'
                       f'{100 * v / top:.1f}%"></i></td></tr>')
        out.append("</table>")
    return "".join(out)


def _info(info: Mapping[str, str]) -> str:
    return "".join(f'<span class="chip"><b>{esc(k)}</b> {esc(v)}</span>' for k, v in info.items())


@functools.cache
def _asset(name: str) -> str:
    with open(os.path.join(os.path.dirname(__file__), name), encoding="utf-8") as f:
        return f.read()
