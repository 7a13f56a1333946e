"""Imports run one way: every import of every stagec module, at module level or inside a function, goes to
a layer at or below its own (docs/design.md draws the layers)."""
from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PKG = ROOT / "stagec"

# Lowest first. A module may import modules of its own layer or of layers before it, never after it.
LAYERS = [
    ["_version", "_quiet", "config", "errors", "dtypes", "tree_util", "tree", "_missing", "explorer", "coefficients"],  # base
    ["core"],                                  # avals, Graph, Trace, Primitive
    ["lowering", "passes"],                    # StableHLO emission machinery; our MLIR passes
    ["primitives"],                            # every primitive with all its rules
    ["lax", "ad", "batching", "named"],        # strict ops, control flow, transformations, named calls
    ["tuning", "compiler", "host", "dispatch", "backend"],  # tuning specs; targets, pipelines, the compile driver
    # and its retries; host modules (callbacks, BLAS, sort); async dispatch; runtime (devices, buffers, Executable)
    ["array", "runner"],                       # stagec.Array, device_put; Runner (an Executable called on values)
    ["numpy", "random", "nn", "scipy", "debug", "experimental"],  # the surface
    ["aot"],                                   # the artifact format, load
    ["cache"],                                 # the persistent cache (storage)
    ["stages"],                                # Lowered / Compiled, the compile step
    ["eager", "composites", "quick", "jit", "api", "jaxpr", "test_util", "compat"],  # eager execution (and its
    # composites), jit's quick tier, jit, transformations' public entry points
    ["explain"],                               # why a cache missed
    ["__init__", "__main__", "cli", "dask"],   # the public API, the command line, Dask helpers
]
_RANK = {name: i for i, names in enumerate(LAYERS) for name in names}
_ORDER_WITHIN = {"numpy": 0, "random": 1, "nn": 1, "debug": 1, "scipy": 2, "experimental": 2}  # nn and random build on numpy


def _unit(parts: tuple[str, ...]) -> str:
    """The layer unit of a module path inside stagec: its top-level module or package."""
    return parts[0] if parts else "__init__"


def _modules():
    for path in sorted(PKG.rglob("*.py")):
        if "passes" in path.relative_to(PKG).parts:
            continue  # a link to ../passes in some checkouts
        rel = path.relative_to(PKG).with_suffix("").parts
        yield path, rel


def _imports(path: pathlib.Path, rel: tuple[str, ...]):
    """(line, target unit) for every stagec import in the file, including those inside functions."""
    pkg_parts = rel[:-1] if rel[-1] != "__init__" else rel[:-1]
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(pkg_parts[:len(pkg_parts) - (node.level - 1)]) if node.level > 1 else list(pkg_parts)
                if node.level - 1 > len(pkg_parts):
                    continue
                target = base + (node.module.split(".") if node.module else [])
                names = [] if node.module else [a.name for a in node.names]
                if target:
                    yield node.lineno, _unit(tuple(target))
                else:
                    for n in names:
                        yield node.lineno, n
            elif node.module and node.module.split(".")[0] == "stagec":
                parts = node.module.split(".")[1:]
                if parts:
                    yield node.lineno, _unit(tuple(parts))
                else:
                    for a in node.names:
                        yield node.lineno, a.name
        elif isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[0] == "stagec" and len(parts) > 1:
                    yield node.lineno, parts[1]


def test_every_module_has_a_layer():
    missing = sorted({_unit(rel) for _, rel in _modules()} - set(_RANK))
    assert not missing, f"modules without a layer in tests/test_layers.py: {missing}"


def test_no_import_runs_upward():
    bad = []
    for path, rel in _modules():
        me = _unit(rel)
        for line, target in _imports(path, rel):
            if target not in _RANK or target == me:
                continue
            up = _RANK[target] > _RANK[me] or (_RANK[target] == _RANK[me]
                                                and _ORDER_WITHIN.get(target, 0) > _ORDER_WITHIN.get(me, 0))
            if up:
                bad.append(f"{path.relative_to(ROOT)}:{line}: {me} imports {target}")
    assert not bad, "imports that run upward:\n" + "\n".join(bad)


@pytest.mark.parametrize("upward", ["from .jit import jit", "from ..numpy import add"])
def test_the_checker_sees_function_local_imports(tmp_path, upward):
    src = tmp_path / "core.py"
    src.write_text(f"def f():\n    {upward}\n")
    targets = [t for _, t in _imports(src, ("core",) if upward.startswith("from .j") else ("primitives", "x"))]
    assert targets and all(_RANK[t] > _RANK["core"] for t in targets)
