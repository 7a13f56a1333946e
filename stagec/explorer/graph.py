"""The dataflow graph of one stage as SVG: ops as nodes, values as edges labelled with their type,
regions (function bodies, loop bodies, linalg.generic bodies, dispatches) as boxes around their ops.
Layered layout: each op one layer below its deepest producer, each layer ordered by its producers."""
from __future__ import annotations

import dataclasses
import zlib
from typing import Any

from .mlirtext import Arg, Op, esc, short_type, type_of

CW, NH, AH = 6.6, 24, 18  # character width, op node height, argument node height (px)
VGAP, HGAP, PAD, HEAD = 34, 16, 10, 20
_DIALECTS = {  # (fill, stroke) by dialect
    "stablehlo": ("#dbeafe", "#3b82f6"), "chlo": ("#e0e7ff", "#6366f1"), "arith": ("#dcfce7", "#22c55e"),
    "math": ("#fef9c3", "#ca8a04"), "linalg": ("#ffedd5", "#f97316"), "tensor": ("#f3e8ff", "#a855f7"),
    "func": ("#f1f5f9", "#64748b"), "hal": ("#e2e8f0", "#475569"), "scf": ("#fae8ff", "#c026d3"),
    "iree_tensor_ext": ("#fce7f3", "#db2777"), "flow": ("#ccfbf1", "#0d9488"), "builtin": ("#f8fafc", "#94a3b8")}
_SPARE = [("#fee2e2", "#ef4444"), ("#e0f2fe", "#0284c7"), ("#ecfccb", "#65a30d"), ("#fef3c7", "#d97706")]


def _colours(name: str) -> tuple[str, str]:
    dialect = name.split(".")[0] if "." in name else "func"
    return _DIALECTS.get(dialect) or _SPARE[zlib.crc32(dialect.encode()) % len(_SPARE)]


def _label(name: str) -> str:
    """`stablehlo.add` -> `add`; func.* and bare names as they are."""
    return name.split(".", 1)[1] if "." in name and not name.startswith("func.") else name


def _results(op: Op) -> str:
    """`%3`, `%x, %y`, or `%0:3` for the results `%0#0 %0#1 %0#2`."""
    if op.results and op.results[0].endswith("#0"):
        return f"{op.results[0][:-2]}:{len(op.results)}"
    return ", ".join(op.results)


@dataclasses.dataclass(eq=False)
class _Box:
    node: Op | Arg
    w: float
    h: float
    x: float = 0.0
    y: float = 0.0
    regions: list = dataclasses.field(default_factory=list)  # per region: (its _Layout, x, y)


@dataclasses.dataclass(eq=False)
class _Layout:
    boxes: list[_Box]
    edges: list[tuple[_Box, int, _Box]]  # (producer, result index, consumer)
    w: float = 0.0
    h: float = 0.0


def draw_graph(ops: list[Op], index: int = 0) -> str:
    """SVG of `ops` (from `mlirtext.parse_ops`): one node per op, with data-line set to its line;
    edges from producer to consumer, labelled with the value's type; regions drawn as boxes."""
    root = _build(ops)
    _place(root)
    parts = {"groups": [], "edges": [], "nodes": [], "labels": []}
    _emit(root, 0.0, 0.0, parts, index)  # `index` keeps the arrowhead's id unique on the page
    w, h = root.w + 2 * PAD, root.h + 2 * PAD
    return (f'<svg class="graph" viewBox="{-PAD} {-PAD} {w:.0f} {h:.0f}" width="{w:.0f}" '
            f'height="{h:.0f}" data-w="{w:.0f}" data-h="{h:.0f}"><defs><marker id="ah{index}" viewBox="0 0 8 8" '
            f'refX="8" refY="4" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0L8,4L0,8z" '
            f'fill="#94a3b8"/></marker></defs><g class="groups">{"".join(parts["groups"])}</g><g class="edges">'
            f'{"".join(parts["edges"])}</g><g class="nodes">{"".join(parts["nodes"])}</g>'
            f'<g class="labels">{"".join(parts["labels"])}</g></svg>')


def _build(ops: list[Op]) -> _Layout:
    """A layout per region, edges lifted to the region where the producer lives."""
    layouts: dict[tuple, _Layout] = {}
    boxes: dict[Any, _Box] = {}

    def layout_of(owner: Op | None, region: int) -> _Layout:
        key = (id(owner), region)
        if key not in layouts:
            layouts[key] = _Layout([], [])
        return layouts[key]

    for op in ops:
        label = _label(op.name)
        boxes[op] = _Box(op, max(44.0, CW * len(label) + 16), NH)
        layout_of(op.parent, op.region).boxes.append(boxes[op])
    seen = set()
    for op in ops:
        for src, i in op.uses:
            owner, region = (src.owner, None) if isinstance(src, Arg) else (src.parent, src.region)
            dst = op
            while dst is not None and not (dst.parent is owner and (region is None or dst.region == region)):
                dst = dst.parent
            if dst is None or dst is src:
                continue
            lay = layout_of(owner, dst.region)
            if isinstance(src, Arg):
                key = (src, dst.region)
                if key not in boxes:
                    boxes[key] = _Box(src, CW * len(src.name) + 12, AH)
                    lay.boxes.insert(sum(isinstance(b.node, Arg) for b in lay.boxes), boxes[key])
                sbox = boxes[key]
            else:
                sbox = boxes[src]
            if (id(sbox), i, id(boxes[dst])) not in seen:
                seen.add((id(sbox), i, id(boxes[dst])))
                lay.edges.append((sbox, i, boxes[dst]))
    for op in ops:
        boxes[op].regions = [[layout_of(op, r), 0.0, 0.0] for r in range(len(op.regions))
                             if layout_of(op, r).boxes]
    return layout_of(None, 0)


def _place(lay: _Layout) -> None:
    """Sizes of nested regions first, then layers by longest path (sources pulled down next to their
    first use), each layer ordered by the mean position of its producers."""
    for b in lay.boxes:
        if b.regions:
            x = PAD
            for r in b.regions:
                _place(r[0])
                r[1], r[2] = x, HEAD
                x += r[0].w + HGAP
            b.w = max(b.w, x - HGAP + PAD)
            b.h = HEAD + max(r[0].h for r in b.regions) + PAD
    preds: dict[int, list[_Box]] = {id(b): [] for b in lay.boxes}
    succs: dict[int, list[_Box]] = {id(b): [] for b in lay.boxes}
    for s, _, d in lay.edges:
        preds[id(d)].append(s)
        succs[id(s)].append(d)
    layer: dict[int, int] = {}
    for b in lay.boxes:  # print order is a topological order within a region
        layer[id(b)] = 0 if isinstance(b.node, Arg) else 1 + max((layer[id(p)] for p in preds[id(b)]), default=-1)
    for b in reversed(lay.boxes):
        if not preds[id(b)] and succs[id(b)] and not isinstance(b.node, Arg):
            layer[id(b)] = max(layer[id(b)], min(layer[id(s)] for s in succs[id(b)]) - 1)
    rows: dict[int, list[_Box]] = {}
    for b in lay.boxes:
        rows.setdefault(layer[id(b)], []).append(b)
    y, width = 0.0, 0.0
    for k in sorted(rows):
        row = rows[k]
        want = {id(b): (sum(p.x + p.w / 2 for p in preds[id(b)]) / len(preds[id(b)]) if preds[id(b)] else None)
                for b in row}
        row.sort(key=lambda b: want[id(b)] if want[id(b)] is not None else -1.0)
        right = 0.0
        for b in row:
            target = want[id(b)] - b.w / 2 if want[id(b)] is not None else right
            b.x, b.y = max(right, target), y
            right = b.x + b.w + HGAP
        width = max(width, right - HGAP)
        y += max(b.h for b in row) + VGAP
    lay.w, lay.h = width, max(0.0, y - VGAP)


def _emit(lay: _Layout, ox: float, oy: float, parts: dict, index: int) -> None:
    for b in lay.boxes:
        b.x, b.y = b.x + ox, b.y + oy  # absolute from here on
    ins: dict[int, list] = {}
    for e in lay.edges:
        ins.setdefault(id(e[2]), []).append(e)
    labelled = set()
    for s, i, d in lay.edges:
        n_out = max(1, len(s.node.results)) if isinstance(s.node, Op) else 1
        x1, y1 = s.x + s.w * (i + 1) / (n_out + 1), s.y + s.h
        k = ins[id(d)].index((s, i, d))
        x2, y2 = d.x + d.w * (k + 1) / (len(ins[id(d)]) + 1), d.y
        c = max(12.0, (y2 - y1) / 2)
        parts["edges"].append(f'<path d="M{x1:.1f},{y1:.1f}C{x1:.1f},{y1 + c:.1f} {x2:.1f},{y2 - c:.1f} '
                              f'{x2:.1f},{y2 - 1:.1f}" marker-end="url(#ah{index})"/>')
        t = short_type(type_of(s.node, i))
        if t and (id(s), i) not in labelled:
            labelled.add((id(s), i))
            parts["labels"].append(f'<text x="{x1 + 3:.1f}" y="{y1 + 11:.1f}">{esc(t)}</text>')
    for b in lay.boxes:
        node = b.node
        if isinstance(node, Arg):
            tip = f"{node.name}: {node.type}" if node.type else node.name
            parts["nodes"].append(
                f'<g class="arg" data-line="{node.line}"><title>{esc(tip)}</title><rect x="{b.x:.1f}" '
                f'y="{b.y:.1f}" width="{b.w:.1f}" height="{b.h}" rx="9"/><text x="{b.x + b.w / 2:.1f}" '
                f'y="{b.y + 13:.1f}">{esc(node.name)}</text></g>')
            continue
        fill, stroke = _colours(node.name)
        res = _results(node)
        tip = f"{res + ' = ' if res else ''}{node.name}  (line {node.line + 1})"
        attrs = f'data-line="{node.line}" data-end="{node.end}"'
        if b.regions:
            parts["groups"].append(
                f'<g class="op grp" {attrs}><title>{esc(tip)}</title><rect x="{b.x:.1f}" y="{b.y:.1f}" '
                f'width="{b.w:.1f}" height="{b.h:.1f}" rx="6" fill="{fill}" stroke="{stroke}"/>'
                f'<text x="{b.x + 8:.1f}" y="{b.y + 14:.1f}">{esc(_label(node.name))} '
                f'<tspan>{esc(node.symbol or res)}</tspan></text></g>')
            for r, rx, ry in b.regions:
                if len(b.regions) > 1:
                    parts["groups"].append(f'<rect class="region" x="{b.x + rx - 4:.1f}" y="{b.y + ry - 4:.1f}" '
                                           f'width="{r.w + 8:.1f}" height="{r.h + 8:.1f}" rx="4"/>')
                _emit(r, b.x + rx, b.y + ry, parts, index)
        else:
            parts["nodes"].append(
                f'<g class="op" {attrs}><title>{esc(tip)}</title><rect x="{b.x:.1f}" y="{b.y:.1f}" '
                f'width="{b.w:.1f}" height="{b.h}" rx="4" fill="{fill}" stroke="{stroke}"/><text '
                f'x="{b.x + b.w / 2:.1f}" y="{b.y + 16:.1f}">{esc(_label(node.name))}</text></g>')
