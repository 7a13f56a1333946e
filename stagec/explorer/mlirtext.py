"""Reading printed MLIR without the bindings: source locations, long constants and the op graph.

This works on text only (any dialect, any stage, IREE's dispatch sources), so that a page can be drawn
for a saved dump or an AOT artifact where `iree.compiler` is not installed. It relies on the generic
shape of MLIR's printer: one op per line, regions opened by a trailing `{` and closed by a line that
starts with `}`, block arguments on `^bb` lines and in the op's own line, SSA values named `%x`.
"""
from __future__ import annotations

import dataclasses
import functools
import html
import os
import re

DENSE_LIMIT = 200  # a `dense<...>` literal longer than this many characters is shown shortened ...
DENSE_HEAD = 66  # ... to its first characters

_LOC_ALIAS = re.compile(r"^(#loc\w*)\s*=\s*loc\((.*)\)\s*$")
_FILE_LINE = re.compile(r'"([^"]+)":(\d+)(?::\d+)?')
_RESULTS = re.compile(r"((?:%[\w$.\-]+(?::\d+)?\s*,\s*)*%[\w$.\-]+(?::\d+)?)\s*=\s*")
_RESULT = re.compile(r"(%[\w$.\-]+)(?::(\d+))?")
_OP_NAME = re.compile(r'"?([A-Za-z_][\w$]*(?:\.[\w$]+)*)"?')
_VALUE = re.compile(r"%[\w$.\-]+(?:#\d+)?")
_ARG_TYPE = re.compile(r"(%[\w$.\-]+)\s*(?::\s*|=\s*(%[\w$.\-]+(?:#\d+)?))")
_BARE_OPS = ("return", "module")  # ops printed without their dialect prefix


# ---------------------------------------------------------------- scanning


def _close(text: str, i: int, open_: str, close: str) -> int:
    """Index just past the `close` matching the `open_` at text[i], skipping strings and `->`."""
    depth, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i = _skip_string(text, i)
            continue
        if c == "-" and text.startswith("->", i):
            i += 1
        elif c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


_BRACKETS = re.compile(r'"(?:[^"\\]|\\.)*"|->|[()\[\]{}<>]')


def _top_level(text: str, token: str) -> list[int]:
    """Positions of `token` outside strings and (), [], {}, <> in `text`."""
    out, depth, pos = [], 0, 0
    for m in _BRACKETS.finditer(text):
        if depth == 0:
            out += _find_all(text, token, pos, m.start())
        c = m[0]
        if c == "->" and depth == 0 and token.strip() == "->":
            out.append(m.start() - (1 if token.startswith(" ") else 0))
        elif c in "([{<":
            depth += 1
        elif c in ")]}>":
            if depth == 0 and token == c:
                out.append(m.start())
            depth = max(0, depth - 1)
        pos = m.end()
    if depth == 0:
        out += _find_all(text, token, pos, len(text))
    return out


def _find_all(text: str, token: str, start: int, end: int) -> list[int]:
    out, i = [], text.find(token, start, end)
    while i >= 0:
        out.append(i)
        i = text.find(token, i + len(token), end)
    return out


def _skip_string(text: str, i: int) -> int:
    """Index just past the string literal that starts at text[i]."""
    i += 1
    while i < len(text) and text[i] != '"':
        i += 2 if text[i] == "\\" else 1
    return i + 1


def _braces(text: str) -> int:
    """Net `{` minus `}` outside strings."""
    if '"' not in text:
        return text.count("{") - text.count("}")
    n, i = 0, 0
    while i < len(text):
        c = text[i]
        if c == '"':
            i = _skip_string(text, i)
            continue
        n += (c == "{") - (c == "}")
        i += 1
    return n


# ---------------------------------------------------------------- locations and constants


def split_locs(text: str) -> tuple[list[str], list[str | None], list[str | None]]:
    """(lines without `loc(...)` and without `#loc` alias lines, each line's location as `file:line`
    or None, each location's full path) for MLIR printed with or without debug info."""
    aliases, kept = {}, []
    for line in text.splitlines():
        m = _LOC_ALIAS.match(line)
        if m:
            aliases[m[1]] = m[2]
        else:
            kept.append(line)
    while kept and not kept[-1].strip():
        kept.pop()
    lines, short, full = [], [], []
    resolved: dict[str, str] = {}
    for line in kept:
        line, loc = _strip_locs(line)
        where = _file_line(_expand(loc, aliases, resolved)) if loc else None
        lines.append(line)
        full.append(f"{where[0]}:{where[1]}" if where else None)
        short.append(f"{os.path.basename(where[0])}:{where[1]}" if where else None)
    return lines, short, full


def _strip_locs(line: str) -> tuple[str, str | None]:
    """The line without its `loc(...)` parts, and the body of the last one if it ends the line."""
    out, last, i = [], None, 0
    while True:
        j = line.find("loc(", i)
        while j > 0 and (line[j - 1].isalnum() or line[j - 1] in "_.$"):
            j = line.find("loc(", j + 1)
        if j < 0:
            out.append(line[i:])
            break
        end = _close(line, j + 3, "(", ")")
        out.append(line[i:j].rstrip(" ") if line[j - 1:j] == " " else line[i:j])
        body = line[j + 4:end - 1]
        last = body if not line[end:].strip() else None
        i = end
    return "".join(out), last


def _expand(expr: str, aliases: dict[str, str], memo: dict[str, str], depth: int = 0) -> str:
    def sub(m):
        name = m[0]
        if name not in memo:
            memo[name] = _expand(aliases.get(name, ""), aliases, memo, depth + 1) if depth < 32 else ""
        return memo[name]
    return re.sub(r"#loc\w*", sub, expr)


def _file_line(expr: str) -> tuple[str, str] | None:
    """(path, line) of the frame to show: the first outside stagec itself, else the first."""
    frames = _FILE_LINE.findall(expr)
    if not frames:
        return None
    return next((f for f in frames if f"{os.sep}stagec{os.sep}" not in f[0]), frames[0])


def collapse_dense(line: str, limit: int = DENSE_LIMIT) -> str:
    """`line` with each `dense<...>` longer than `limit` characters cut to its head and a count."""
    i = line.find("dense<") if len(line) > limit else -1
    while i >= 0:
        end = _close(line, i + 5, "<", ">")
        if end - i > limit:
            note = f" \u2026 {end - i - DENSE_HEAD:,} more chars>"
            line = line[:i + DENSE_HEAD] + note + line[end:]
            end = i + DENSE_HEAD + len(note)
        i = line.find("dense<", end)
    return line


# ---------------------------------------------------------------- the op graph


@dataclasses.dataclass(eq=False)
class Arg:
    """A block argument: of a function, a loop body, a linalg.generic body."""
    name: str
    type: str
    line: int
    owner: Op | None


@dataclasses.dataclass(eq=False)
class Op:
    """One operation: where it is printed, what it defines, and the ops of its regions."""
    name: str
    line: int
    results: list[str]
    symbol: str = ""  # the `@name` an op with regions defines (func.func @main)
    end: int = -1  # the line that closes its regions (the op's own line if it has none)
    text: str = ""  # the op's line after its results, and its closing line: where its types are
    closing: str = ""
    parent: Op | None = None
    region: int = 0
    regions: list[list[Op]] = dataclasses.field(default_factory=list)  # per region: its ops in order
    uses: list[tuple[Op | Arg, int]] = dataclasses.field(default_factory=list)  # (producer, result index)

    @functools.cached_property
    def types(self) -> list[str]:
        """Result types as printed (parsed on first use: most pages draw few of their ops)."""
        return _types(self.text) or _types(self.closing.lstrip("}) ,"))


class _Frame:
    """An op whose regions are open: its own arguments and the values defined in the current region."""

    def __init__(self, op: Op | None):
        self.op, self.args, self.defs = op, {}, {}
        self.top: list = []  # the ops at the top level, for the frame of no op


def parse_ops(lines: list[str]) -> list[Op]:
    """The ops of a printed module, in print order (the outermost `module` is not one), each with its
    producers (`uses`) and its nested regions."""
    ops: list[Op] = []
    stack = [_Frame(None)]
    last: _Frame | None = None  # the frame of the last op at this level, to reopen for `cond {`
    for no, line in enumerate(lines):
        t = line.strip()
        if not t or t.startswith("#") or t.startswith("//"):
            continue
        delta = _braces(t)
        if t.startswith("}"):
            last = _close_line(stack, t, delta, no)
            continue
        if t.startswith("^"):
            _define_args(stack[-1], t, no, stack[-1].op, per_region=True)
            continue
        m = _RESULTS.match(t)
        rest = t[m.end():] if m else t
        nm = _OP_NAME.match(rest)
        name = nm[1] if nm else ""
        if not m and ("." not in name or not nm) and name not in _BARE_OPS:
            # a continuation of the last op (`cond {`, `reducer(%a: t, %b: t) {`): its region arguments
            if last is not None and last.op is not None:
                if delta > 0 and stack[-1] is not last:
                    stack.append(last)
                    last.op.regions.append([])
                _define_args(last, t, no, last.op, per_region=False)
            continue
        if name in ("module", "builtin.module") and len(stack) == 1 and not ops:
            stack.append(_Frame(None))  # the module around everything: not drawn
            continue
        op = Op(name, no, _result_names(m[1]) if m else [], end=no, parent=stack[-1].op)
        op.region = len(op.parent.regions) - 1 if op.parent else 0
        op.text = rest
        sym = re.search(r"@[\w$.\-]+", rest) if delta > 0 else None
        op.symbol = sym[0] if sym and not rest[:sym.start()].count("(") else ""
        frame = _Frame(op)
        for ref in _VALUE.findall(rest):
            found = _lookup(stack, ref)
            if found is not None:
                op.uses.append(found)
        _define_args(frame, rest, no, op, per_region=False, known=stack)
        _region_of(stack[-1]).append(op)
        ops.append(op)
        last = frame
        if delta > 0:
            op.regions.append([])
            stack.append(frame)
        else:
            _define_results(stack[-1], op)
    return ops


def _region_of(frame: _Frame) -> list:
    return frame.top if frame.op is None else frame.op.regions[-1]


def _close_line(stack: list[_Frame], t: str, delta: int, no: int) -> _Frame:
    """A line starting with `}`: a new region of the same op (`} do {`, `}, {`) or the op's end."""
    frame = stack[-1]
    if delta >= 0:
        if frame.op is not None:
            frame.op.regions.append([])
            frame.defs = {}
        return frame
    for _ in range(min(-delta, len(stack) - 1)):
        frame = stack.pop()
        if frame.op is not None:
            frame.op.end = no
            frame.op.closing = t
            _define_results(stack[-1], frame.op)
    return frame


def _define_results(frame: _Frame, op: Op) -> None:
    for i, r in enumerate(op.results):
        frame.defs[r] = (op, i)
        if r.endswith("#0"):
            frame.defs[r[:-2]] = (op, 0)  # `%0` alone names the first of `%0:3`


def _define_args(frame: _Frame, text: str, no: int, owner: Op | None, *, per_region: bool,
                 known: list[_Frame] | None = None) -> None:
    """Record the `%x: type` / `%x = %y` block arguments written in `text` (not the values already
    defined in `known`: in an op's own line those are its operands, `ins(%0 : tensor<...>)`)."""
    for m in _ARG_TYPE.finditer(text):
        name = m[1]
        if known is not None and _lookup(known, name) is not None:
            continue
        if m[2]:
            src = _lookup(known or [frame], m[2])
            typ = type_of(*src) if src else ""
        else:
            typ = _first_type(text[m.end():])
        arg = Arg(name, typ, no, owner)
        (frame.defs if per_region else frame.args)[name] = (arg, 0)


def _lookup(stack: list[_Frame], ref: str):
    for frame in reversed(stack):
        for table in (frame.defs, frame.args):
            if ref in table:
                return table[ref]
    return None


def _result_names(text: str) -> list[str]:
    """`%a, %b` -> [%a, %b]; `%0:3` -> [%0#0, %0#1, %0#2], as its uses name them."""
    out = []
    for m in _RESULT.finditer(text):
        out += [m[1]] if not m[2] else [f"{m[1]}#{i}" for i in range(int(m[2]))]
    return out


def _types(text: str) -> list[str]:
    """Result types printed at the end of an op: after ` : `, then after `->` or ` to ` if present."""
    text = " " + text.strip().removesuffix("{").rstrip()
    colons, arrows = _top_level(text, " : "), _top_level(text, " -> ")
    tail = text[colons[-1] + 3:] if colons else text[arrows[-1] + 4:] if arrows else ""
    for sep in ("->", " to "):
        at = _top_level(tail, sep)
        if at:
            tail = tail[at[-1] + len(sep):]
    tail = tail.strip()
    if tail.startswith("(") and _close(tail, 0, "(", ")") == len(tail):
        tail = tail[1:-1]
    cuts = [-2, *_top_level(tail, ", "), len(tail)]
    return [tail[a + 2:b].strip() for a, b in zip(cuts, cuts[1:]) if tail[a + 2:b].strip()]


def _first_type(text: str) -> str:
    ends = [e for e in (_top_level(text, ","), _top_level(text, ")"), _top_level(text, " ")) if e]
    return text[:min(e[0] for e in ends)] if ends else text


def type_of(producer: Op | Arg, index: int) -> str:
    """The printed type of a producer's `index`-th result ('' where the text does not say)."""
    if isinstance(producer, Arg):
        return producer.type
    types = producer.types
    return types[index] if index < len(types) else (types[0] if len(types) == 1 else "")


def short_type(t: str) -> str:
    """`tensor<4x3xf32, #enc>` -> `4x3xf32`; other types cut to 24 characters."""
    m = re.search(r"tensor<([^,<>]*)[,>]", t)
    s = m[1] if m else t
    return s if len(s) <= 24 else s[:23] + "\u2026"


# ---------------------------------------------------------------- colouring


def _nested(depth: int) -> str:
    """A pattern for text with `<...>` nested up to `depth` deep (`->` is not a bracket)."""
    inner = r"(?:->|[^<>\n])*"
    for _ in range(depth):
        inner = rf"(?:->|[^<>\n]|<{inner}>)*"
    return inner


_N = _nested(4)
_TOKEN = re.compile("|".join([
    r'(?P<s>"(?:[^"\\]|\\.)*")',
    rf"(?P<a>\b(?:dense|dense_resource|affine_map|affine_set|array|sparse|strided)<{_N}>|#[\w$.]+(?:<{_N}>)?)",
    rf"(?P<t>\b(?:tensor|vector|memref|complex|tuple)<{_N}>|![\w$.]+(?:<{_N}>)?"
    r"|\b(?:[iuf]\d+|si\d+|ui\d+|bf16|tf32|index|none)\b)",
    r"(?P<v>%[\w$.\-]+(?:#\d+|:\d+)?)",
    r"(?P<y>@[\w$.\-]+)",
    r"(?P<b>\^[\w$.\-]+)",
    r"(?P<o>\b[A-Za-z_]\w*(?:\.\w+)+\b|^\s*(?:return|module)\b)",
    r"(?P<n>\b0x[0-9A-Fa-f]+\b|-?\b\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\b|\b(?:true|false)\b)",
    r"(?P<k>\b\w+(?= = ))",
]))


def highlight(line: str) -> str:
    """HTML for one MLIR line: op names, SSA values, types, attributes, strings, numbers in spans."""
    out, i = [], 0
    for m in _TOKEN.finditer(line):
        out.append(html.escape(line[i:m.start()], quote=False))
        out.append(f'<span class="{m.lastgroup}">{html.escape(m[0], quote=False)}</span>')
        i = m.end()
    out.append(html.escape(line[i:], quote=False))
    return "".join(out).replace("://", ":&#47;&#47;")


def esc(s: str) -> str:
    """HTML-escaped, and never a URL a browser could follow."""
    return html.escape(str(s)).replace("://", ":&#47;&#47;")

