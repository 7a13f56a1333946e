"""The transformation and jit API with pytrees as JAX 0.10.2 has it: output structures, dtypes and weak types, and
which calls raise which error. The expected values (weak types included) are JAX's, stored here (CI runs without
JAX). Found by a differential fuzzer against JAX (see the `tr` helper's report)."""
from __future__ import annotations


import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import tree_util as tu

float0 = stagec.float0


def _is(x, value, dtype="float32", weak=False, shape=()):
    assert isinstance(x, stagec.Array), type(x)
    assert (x.shape, x.dtype.name, x.aval.weak_type) == (shape, dtype, weak), (x.shape, x.dtype, x.aval)
    np.testing.assert_allclose(np.asarray(x), value, rtol=1e-6)


def test_tree_util_prefix_trees_children_compose():
    # tree_map: the other trees may have the first's structure as a prefix (JAX gave [(1, (1, 2)), (2, 3)]; stagec
    # raised "structures differ")
    assert tu.tree_map(lambda a, b: (a, b), [1, 2], [(1, 2), 3]) == [(1, (1, 2)), (2, 3)]
    assert tu.tree_map(lambda a, b: (a, b), {"a": 1, "b": 2}, {"a": [1, 2], "b": {"c": 3}}) == \
        {"a": (1, [1, 2]), "b": (2, {"c": 3})}
    for bad in ({"a": 1, "c": 2}, [1, 2], {"a": 1}):
        with pytest.raises(ValueError):
            tu.tree_map(lambda a, b: (a, b), {"a": 1, "b": 2}, bad)
    # flatten_up_to checks a dict's keys and a custom node's data (it took {"a", "c"} for {"a", "b"})
    with pytest.raises(ValueError):
        tu.tree_structure({"a": 0, "b": 0}).flatten_up_to({"a": 1, "c": 2})
    td = tu.tree_structure({"a": [1, 2], "b": 3})
    assert [c.num_leaves for c in td.children()] == [2, 1]  # a method, as JAX's (it was a tuple attribute)
    assert [c.num_leaves for c in tu.treedef_children(td)] == [2, 1]
    assert td.node_data()[0] is dict and tu.tree_structure(1).node_data() is None
    c = tu.tree_structure([0, {"a": 0}]).compose(tu.tree_structure((0, None, 0)))
    assert c.num_leaves == 4 and str(c) == "PyTreeDef([(*, None, *), {'a': (*, None, *)}])"
    assert tu.tree_unflatten(c, range(4)) == [(0, None, 1), {"a": (2, None, 3)}]


def test_jit_donate_argnames_keep_unused_eval_shape_and_out_tree():
    def g(x, y, *, z):
        return {"s": x + y, "l": [x * 2]}
    f = stagec.jit(g, donate_argnames=("y", "z"), keep_unused=True, inline=False)
    assert f.donate_argnums == (1,) and f.donate_argnames == ("y", "z")
    c = f.lower(snp.ones(2), 1.0, z=snp.ones(3)).compile()
    assert str(c.out_tree) == "PyTreeDef({'l': [*], 's': *})"
    out = c(snp.ones(2), 2.0, z=snp.ones(3))
    np.testing.assert_allclose(np.asarray(out["s"]), [3, 3])
    with pytest.raises(ValueError, match="cannot intersect"):
        stagec.jit(lambda x, y: x, static_argnums=0, donate_argnums=0)
    with pytest.raises(ValueError, match="cannot intersect"):
        stagec.jit(lambda x, y: x, static_argnames="y", donate_argnums=1)
    with pytest.raises(ValueError, match="positional-only"):  # (JAX's error; it was taken as static)
        stagec.jit(lambda x, y, /: x, static_argnames="y")
    with pytest.raises(TypeError):  # (JAX: "Expected a callable value, got None"; it was a decorator)
        stagec.jit(None)
    assert callable(stagec.jit(static_argnames="n"))
    # jit(f).eval_shape and stagec.eval_shape keep weak types (JAX: float32[] weak for 1.0 * 2; they were strong)
    S = stagec.ShapeDtypeStruct
    got = stagec.jit(lambda x, y: {"a": x + y, "b": (x.astype(snp.int32), y * 2)}).eval_shape(snp.ones(2), 1.0)
    assert got == {"a": S((2,), np.float32), "b": (S((2,), np.int32), S((), np.float32, weak_type=True))}
    assert stagec.eval_shape(lambda x: (x, x + 1), 3) == (S((), np.int32, True), S((), np.int32, True))
    assert stagec.eval_shape(lambda x: x + 1, S((), np.float32, weak_type=True)) == S((), np.float32, True)


def test_jit_trace_stage():
    t = stagec.jit(lambda x, n: x * n, static_argnums=1).trace(1.0, 3)
    assert t.out_info == stagec.ShapeDtypeStruct((), np.float32, weak_type=True)
    assert [e.prim.name for e in t.jaxpr.eqns] == ["mul"]
    _is(t.lower().compile()(2.0), 6.0, weak=True)
