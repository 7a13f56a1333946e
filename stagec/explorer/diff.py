"""Line diffs for the page: difflib's opcodes, computed as patience diff does."""
from __future__ import annotations

import bisect
import difflib
from typing import Sequence


def opcodes(a: Sequence, b: Sequence) -> list[tuple[str, int, int, int, int]]:
    """difflib's opcodes for turning `a` into `b`, anchored first on the items that occur once in each
    (patience diff): near-linear on long modules with scattered edits, where difflib is quadratic."""
    blocks: list[tuple[int, int]] = []  # matched (i, j), increasing
    todo = [(0, len(a), 0, len(b))]
    while todo:
        alo, ahi, blo, bhi = todo.pop()
        while alo < ahi and blo < bhi and a[alo] == b[blo]:
            blocks.append((alo, blo))
            alo, blo = alo + 1, blo + 1
        while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
            ahi, bhi = ahi - 1, bhi - 1
            blocks.append((ahi, bhi))
        if alo == ahi or blo == bhi:
            continue
        anchors = _unique_common(a, alo, ahi, b, blo, bhi)
        if anchors:
            for i, j in anchors:
                blocks.append((i, j))
            edges = [(alo - 1, blo - 1), *anchors, (ahi, bhi)]
            todo += [(i0 + 1, i1, j0 + 1, j1) for (i0, j0), (i1, j1) in zip(edges, edges[1:])]
        elif (ahi - alo) * (bhi - blo) <= 40_000:
            sm = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=False)
            blocks += [(alo + i + k, blo + j + k) for i, j, n in sm.get_matching_blocks() for k in range(n)]
    blocks.sort()
    out, i, j = [], 0, 0
    for bi, bj in [*blocks, (len(a), len(b))]:
        if bi > i or bj > j:
            out.append(("replace" if bi > i and bj > j else "delete" if bi > i else "insert", i, bi, j, bj))
        if bi < len(a):
            if out and out[-1][0] == "equal" and out[-1][2] == bi:
                out[-1] = ("equal", out[-1][1], bi + 1, out[-1][3], bj + 1)
            else:
                out.append(("equal", bi, bi + 1, bj, bj + 1))
        i, j = bi + 1, bj + 1
    return out


def _unique_common(a, alo, ahi, b, blo, bhi) -> list[tuple[int, int]]:
    """The longest increasing run of (i, j) pairs of items occurring once in a[alo:ahi] and b[blo:bhi]."""
    count_a: dict = {}
    for i in range(alo, ahi):
        count_a[a[i]] = -1 if a[i] in count_a else i
    where_b: dict = {}
    for j in range(blo, bhi):
        if count_a.get(b[j], -1) >= 0:
            where_b[b[j]] = -1 if b[j] in where_b else j
    pairs = [(count_a[x], j) for x, j in where_b.items() if j >= 0]
    pairs.sort()
    tails: list[int] = []  # patience sorting: the LIS on j
    back: list[int] = []
    tops: list[int] = []
    for k, (_, j) in enumerate(pairs):
        pos = bisect.bisect_left(tails, j)
        if pos == len(tails):
            tails.append(j)
            tops.append(k)
        else:
            tails[pos], tops[pos] = j, k
        back.append(tops[pos - 1] if pos else -1)
    out, k = [], tops[-1] if tops else -1
    while k >= 0:
        out.append(pairs[k])
        k = back[k]
    return out[::-1]
