"""The HTML explorer: the page parses, holds every stage, diffs, graphs and locations, and loads nothing."""
from __future__ import annotations

import glob
import html
import json
import os
import re
from html.parser import HTMLParser

import numpy as np
import pytest
from hypothesis import given, strategies as st

import stagec
import stagec.lax as lax
import stagec.numpy as snp
from stagec import explorer
from stagec.compiler.targets import TARGETS
from stagec.explorer import mlirtext
from stagec.explorer.diff import opcodes


def loop_and_branch(x):
    y = snp.log(snp.exp(x))  # `simplify` rewrites this to x
    y = lax.fori_loop(0, 3, lambda i, c: c * 2 + 1, y)
    return lax.cond(x[0] > 0, snp.tanh, lambda v: -v, y)


@pytest.fixture(scope="module")
def lowered():
    lo = stagec.jit(loop_and_branch).lower(np.ones((4,), np.float32))
    lo.as_text()
    return lo


@pytest.fixture(scope="module")
def stages(lowered) -> list[tuple[str, str]]:
    return list(lowered.stages().items())


@pytest.fixture(scope="module")
def page(lowered, stages) -> str:
    return explorer.render("loop_and_branch", stages, pass_stats=lowered.pass_stats,
                           timings={"trace": 0.002, "compile": 0.31}, info={"backend": "cpu", "disk cache": "hit"})


def data_of(page: str) -> dict:
    m = re.search(r'<script type="application/json" id="stagec-data">(.*?)</script>', page, re.S)
    return json.loads(m[1])


def text_of(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def graph_of(page: str, stage: int) -> str:
    """The SVG drawn for the `stage`-th stage."""
    index = data_of(page)["stages"][stage]["graph"]
    assert index >= 0, f"no graph for stage {stage}"
    return re.search(rf'<template id="g{index}">(.*?)</template>', page, re.S)[1]


class TagChecker(HTMLParser):
    """Fails on a closing tag that closes nothing open, and remembers what stays open."""
    VOID = {"meta", "br", "img", "input", "link", "hr", "wbr", "source", "area", "base", "col", "embed", "track"}

    def __init__(self):
        super().__init__()
        self.stack, self.errors, self.tags = [], [], 0

    def handle_starttag(self, tag, attrs):
        self.tags += 1
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags += 1

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'} at {self.getpos()}")
        else:
            self.stack.pop()


def test_page_parses_with_every_tag_closed(page):
    checker = TagChecker()
    checker.feed(page)
    checker.close()
    assert not checker.errors, checker.errors[:5]
    assert checker.stack == [] and checker.tags > 100
    assert page.startswith("<!DOCTYPE html>")


def test_every_stage_present_in_order(page, stages):
    data = data_of(page)
    assert [s["name"] for s in data["stages"]] == [name for name, _ in stages]
    side = re.findall(r'<div class="nm">(.*?)</div>', page)
    assert side == [name for name, _ in stages]
    for s, (name, text) in zip(data["stages"], stages):  # each listing is the stage's text, line for line
        shown = [text_of(data["lines"][i]) for i in s["lines"]]
        assert shown == text.rstrip("\n").splitlines(), name
    assert "cse" in page and "log-exp &times;1" in page  # pass statistics
    assert "310.00 ms" in page and "disk cache" in page  # timings and facts


def test_diff_shows_the_log_exp_rewrite(page):
    data = data_of(page)
    simplify = next(s for s in data["stages"] if s["name"] == "simplify")
    assert data["stages"][simplify["prev"]]["name"] == "fold-constants"
    removed = [text_of(data["lines"][r[1]]) for r in simplify["diff"] if r[0] == 1]
    added = [text_of(data["lines"][r[1]]) for r in simplify["diff"] if r[0] == 2]
    assert any("stablehlo.exponential %arg0" in line for line in removed)
    assert any("stablehlo.log" in line for line in removed)
    assert not any("stablehlo.exponential" in line or "stablehlo.log" in line for line in added)
    assert any(re.search(r"%iterArg(_\d+)? = %arg0\b", line) for line in added)  # the loop starts from x itself
    cse = next(s for s in data["stages"] if s["name"] == "cse")  # cse changed nothing here: one fold
    assert [r[0] for r in cse["diff"]] == [3]
    assert cse["graph"] == data["stages"][data["stages"].index(cse) - 1]["graph"]  # one drawing for both


def test_syntax_colouring():
    line = '    %3 = stablehlo.add %2, %cst : tensor<4x3xf32> {name = "a<b"}'
    out = explorer.highlight(line)
    assert '<span class="o">stablehlo.add</span>' in out
    assert '<span class="v">%cst</span>' in out and '<span class="t">tensor&lt;4x3xf32&gt;</span>' in out
    assert '<span class="s">"a&lt;b"</span>' in out and '<span class="k">name</span>' in out
    assert text_of(out) == line


def test_no_external_url(page):
    for bad in ("http://", "https://", "<link", "@import", "//cdn"):
        assert bad not in page, bad
    assert all(v.startswith("data:") for v in re.findall(r'src=["\']?([^"\' >]*)', page))
    assert set(re.findall(r"url\(([^)]*)\)", page)) <= {f"#ah{i}" for i in range(20)}


def test_user_urls_are_not_links():
    text = 'module attributes {doc = "see https://example.com/x"} {\n}\n'
    assert "https://" not in explorer.render("m", [("traced", text)])


def count_ops(text: str) -> int:
    from iree.compiler import ir
    with ir.Context() as ctx:
        module = ir.Module.parse(text, ctx)
        n = [0]

        def visit(op):
            n[0] += 1
            return ir.WalkResult.ADVANCE
        module.operation.walk(visit)
    return n[0] - 1  # not the module itself


@pytest.mark.parametrize("stage", ["traced", "last-pass"])
def test_graph_has_one_node_per_op(page, stages, stage):
    data = data_of(page)
    if stage == "last-pass":  # (the default backend's last pass: `fuse` on the CPU, `fuse-chains` on GPUs)
        stage = TARGETS[stagec.default_backend()].pipeline.passes[-1]
    i = [name for name, _ in stages].index(stage)
    svg = graph_of(page, i)
    lines = [text_of(data["lines"][k]) for k in data["stages"][i]["lines"]]
    nodes = re.findall(r'<g class="op[^"]*" data-line="(\d+)"', svg)
    assert len(nodes) == count_ops(dict(stages)[stage]) == data["stages"][i]["ops"]
    for no in nodes:  # each node points at its op's line
        assert re.search(r"(^|= )\"?[a-z_]+[.\w]*", lines[int(no)].strip()), lines[int(no)]
    assert 'class="op grp"' in svg  # the while loop and the if are boxes around their ops
    assert ">4xf32</text>" in svg  # values labelled with their type


def test_graph_edges_follow_dataflow():
    text = ("func.func @f(%arg0: tensor<2xf32>) -> tensor<2xf32> {\n"
            "  %0 = stablehlo.exponential %arg0 : tensor<2xf32>\n"
            "  %1:2 = \"stablehlo.if\"(%c) ({\n"
            "    stablehlo.return %0, %0 : tensor<2xf32>, tensor<2xi32>\n"
            "  }, {\n"
            "    stablehlo.return %arg0, %arg0 : tensor<2xf32>, tensor<2xi32>\n"
            "  }) : (tensor<i1>) -> (tensor<2xf32>, tensor<2xi32>)\n"
            "  %2 = stablehlo.add %1#0, %0 : tensor<2xf32>\n"
            "  return %2 : tensor<2xf32>\n}\n")
    ops = mlirtext.parse_ops(text.splitlines())
    by_line = {op.line: op for op in ops}
    if_op, add = by_line[2], by_line[7]
    assert [len(r) for r in if_op.regions] == [1, 1] and if_op.types == ["tensor<2xf32>", "tensor<2xi32>"]
    assert [(u.name, i) for u, i in add.uses] == [("stablehlo.if", 0), ("stablehlo.exponential", 0)]
    ret = by_line[3]
    assert ret.parent is if_op and ret.uses[0][0] is by_line[1]  # a value captured from outside
    assert mlirtext.short_type(mlirtext.type_of(if_op, 1)) == "2xi32"
    svg = explorer.draw_graph(ops)
    assert svg.count('class="arg"') == 1 and svg.count('class="op') == len(ops) == 7  # with func.func


LOC_TEXT = '''module @m {
  func.func @main(%arg0: tensor<4xf32> loc("x")) -> tensor<4xf32> {
    %0 = stablehlo.exponential %arg0 : tensor<4xf32> loc("/home/u/model.py":12:3)
    %1 = stablehlo.log %0 : tensor<4xf32> loc(callsite("/site/stagec/numpy/ufuncs.py":40:1 at "/home/u/model.py":13:9))
    %2 = stablehlo.add %1, %1 : tensor<4xf32> loc(unknown)
    return %2 : tensor<4xf32> loc("/home/u/model.py":14:1)
  } loc("/home/u/model.py":10:0)
} loc(unknown)
'''


def test_source_locations_inline_and_aliased():
    from iree.compiler import ir
    with ir.Context() as ctx:  # the printer's own alias form: #loc1 = loc(...) at the end, loc(#loc1) on ops
        aliased = ir.Module.parse(LOC_TEXT, ctx).operation.get_asm(enable_debug_info=True)
    assert "#loc" in aliased
    for text in (LOC_TEXT, aliased):
        lines, short, full = mlirtext.split_locs(text)
        assert not any("loc(" in line or line.startswith("#loc") for line in lines)
        by_op = {line.split("=")[-1].split()[0]: s for line, s in zip(lines, short) if "stablehlo." in line}
        assert by_op == {"stablehlo.exponential": "model.py:12", "stablehlo.log": "model.py:13",
                         "stablehlo.add": None}  # the user's frame, not stagec's
        assert "/home/u/model.py:12" in full
        data = data_of(explorer.render("m", [("traced", text)]))
        func_line = next(i for i, k in enumerate(data["stages"][0]["lines"]) if "func.func" in data["lines"][k])
        assert data["locs"][data["stages"][0]["loc"][func_line]] == ["model.py:10", "/home/u/model.py:10"]


def test_text_without_locations_has_no_location_column(page):
    assert all(s["loc"] is None for s in data_of(page)["stages"])


def test_long_constants_collapse():
    values = ", ".join(f"{i}.5" for i in range(1000))
    text = f"func.func @f() -> tensor<1000xf32> {{\n  %0 = stablehlo.constant dense<[{values}]> : tensor<1000xf32>\n" \
           "  return %0 : tensor<1000xf32>\n}\n"
    page = explorer.render("c", [("traced", text)])
    line = text_of(data_of(page)["lines"][1])
    assert len(line) < 200 and "more chars>" in line and line.endswith(": tensor<1000xf32>")
    assert "999.5" not in page


def test_dispatch_sources(tmp_path, lowered, stages):
    import iree.compiler as ic
    ic.compile_str(lowered.as_text(), target_backends=["llvm-cpu"], input_type="stablehlo",
                   extra_args=["--iree-llvmcpu-target-cpu=generic", f"--iree-hal-dump-executable-sources-to={tmp_path}"])
    dispatches = [(os.path.basename(p)[:-5], open(p).read()) for p in sorted(glob.glob(f"{tmp_path}/*.mlir"))]
    assert dispatches
    path = explorer.write(tmp_path / "page.html", "f", stages, dispatches=dispatches)
    page = open(path).read()
    data = data_of(page)
    assert [s["name"] for s in data["stages"]][len(stages):] == [n for n, _ in dispatches]
    first = data["stages"][len(stages)]
    assert first["kind"] == "dispatch" and first["diff"] is None and first["loc"] is not None
    assert any(loc[0].startswith("<stdin>:") for loc in data["locs"])  # lines of the final stage
    svg = graph_of(page, len(stages))
    assert svg.count('class="op') == first["ops"]
    assert re.search(r'<g class="op grp"[^>]*><title>hal.executable ', svg)  # the dispatch is a box
    assert "IREE dispatches" in page


def test_large_module_stays_small_and_lazy():
    lines = ["func.func @main(%arg0: tensor<8x128xf32>) -> tensor<8x128xf32> {"]
    prev = "%arg0"
    for i in range(2500):
        lines.append(f"  %cst_{i} = stablehlo.constant dense<{i}.5> : tensor<8x128xf32>")
        lines.append(f"  %{i} = stablehlo.{'add' if i % 3 else 'multiply'} {prev}, %cst_{i} : tensor<8x128xf32>")
        prev = f"%{i}"
    text = "\n".join(lines + [f"  return {prev} : tensor<8x128xf32>", "}"])
    edited = text.replace("stablehlo.multiply", "stablehlo.subtract")
    page = explorer.render("big", [("traced", text), ("simplify", edited), ("final", edited)])
    data = data_of(page)
    assert data["stages"][2]["ops"] == 5002
    assert len(page) < 6_000_000  # each distinct line once, whatever the number of stages
    assert len(data["lines"]) < 5100 + 900
    simplify = data["stages"][1]
    assert simplify["diff"] is not None and sum(r[0] == 2 for r in simplify["diff"]) == 834
    assert graph_of(page, 2).count('class="op') == 5002  # the chosen stage is drawn ...
    assert [s["graph"] for s in data["stages"]] == [-1, -1, 0]  # ... stages over GRAPH_MAX_OPS are not
    assert page.count("<template") == 1


def test_unknown_graph_stage_is_an_error():
    with pytest.raises(ValueError, match="graph='nope' is not a stage; stages: \\['traced'\\]"):
        explorer.render("m", [("traced", "module {\n}\n")], graph="nope")


@given(st.lists(st.integers(0, 9), max_size=40), st.lists(st.integers(0, 9), max_size=40))
def test_opcodes_turn_a_into_b(a, b):
    out, ia, ib = [], 0, 0
    for tag, a0, a1, b0, b1 in opcodes(a, b):
        assert (a0, b0) == (ia, ib)
        if tag == "equal":
            assert a[a0:a1] == b[b0:b1]
        out += b[b0:b1]
        ia, ib = a1, b1
    assert (ia, ib) == (len(a), len(b)) and out == b


def test_page_without_mlir_shows_what_is_known():
    # An AOT artifact holds the compiled module and its metadata only.
    info = {"signature": "(f32[4]) -> f32[4]", "target": "llvm-cpu", "size": "12,345 bytes"}
    page = explorer.render("f.stagec", [], info=info)
    checker = TagChecker()
    checker.feed(page)
    assert not checker.errors and checker.stack == []
    assert data_of(page)["stages"] == [] and "No MLIR here." in page
    assert "<b>signature</b> (f32[4]) -&gt; f32[4]" in page and "12,345 bytes" in page


# ---------------------------------------------------------------- entry points


def _page_ok(path, *must):
    text = open(path, encoding="utf-8").read()
    assert "http://" not in text and "https://" not in text
    for m in must:
        assert m in text, m
    return text


def test_lowered_html_and_make_mlir_html(tmp_path):
    f = lambda x: stagec.numpy.log(stagec.numpy.exp(x)) * 2  # noqa: E731
    x = np.ones(4, np.float32)
    stagec.jit(f).lower(x).html(tmp_path / "a.html")
    text = _page_ok(tmp_path / "a.html", "simplify", "dispatch_0", "test_explorer.py")
    stagec.make_mlir(f, html=str(tmp_path / "b.html"))(x)
    assert _page_ok(tmp_path / "b.html", "simplify").count("dispatch_0") == text.count("dispatch_0")


def test_dump_dir_gets_an_index(tmp_path, monkeypatch):
    stagec.wait_for_compiles()  # (an earlier test's background compile would dump its module here too)
    monkeypatch.setenv("STAGEC_DUMP_DIR", str(tmp_path))
    stagec.jit(lambda x: x * 3 + 1)(np.ones(5, np.float32))
    (folder,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    _page_ok(folder / "index.html", "final", "dispatch_0")


def test_cli_dump_html_of_a_function_and_of_an_artifact(tmp_path):
    from stagec import cli
    S = stagec.ShapeDtypeStruct
    art = tmp_path / "f.stagec"
    stagec.jit(lambda x: x * 2).lower(S((3,), np.float32)).compile().save(art)
    assert cli.main(["dump", str(art), "--html", str(tmp_path / "art.html")]) == 0
    _page_ok(tmp_path / "art.html", "float32[3]", TARGETS[stagec.default_backend()].iree)  # ("llvm-cpu" on the CPU)


def test_readme_screenshot_caption_names_the_pass_it_shows():
    """docs/explorer.png shows the diff of the first pass of the default pipeline that changes the SELU example
    (scripts/check-explorer.sh makes the picture and the caption); the caption still names that pass."""
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, os.path.join(root, "examples"))
    try:
        from selu_demo import selu
    finally:
        sys.path.pop(0)
    stages = stagec.jit(selu).lower(np.linspace(-3, 3, 1024, dtype=np.float32)).stages()
    names = list(stages)
    changed = [n for n, before in zip(names[1:], names) if n not in ("stablehlo", "final") and stages[n] != stages[before]]
    readme = open(os.path.join(root, "README.md")).read()
    caption = re.search(r"!\[([^\]]*)\]\(docs/explorer\.png\)", readme)[1]
    assert changed and f"the diff the {changed[0]} pass made" in caption, (changed, caption)
