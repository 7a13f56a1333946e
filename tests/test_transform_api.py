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
    # (a keyword-only argument donated alone: it was not donated, as no position was)
    assert stagec.jit(g, donate_argnames="z").lower(snp.ones(2), 1.0, z=snp.ones(3)).donated == (2,)
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


def test_gradients_weak_types_follow_jax():
    # grad's seed is ones like the output, weak type kept (JAX's `_one_vjp`): all were strong float32 here
    _is(stagec.grad(lambda x: x * x)(3.0), 6.0, weak=True)
    g = stagec.grad(lambda p: p["w"] * p["b"][0] + p["c"][0])({"w": 2.0, "b": (3.0, None), "c": (1.0, 5.0)})
    _is(g["w"], 3.0, weak=True)
    _is(g["b"][0], 2.0, weak=True)
    _is(g["c"][0], 1.0, weak=True)
    _is(g["c"][1], 0.0, weak=True)
    _is(stagec.grad(lambda x, y: x * y)(3.0, np.float32(2.0)), 2.0, weak=True)  # (the convert of x transposed)
    _is(stagec.grad(lambda x, y: x * y, 1)(3.0, np.float32(2.0)), 3.0)
    # real's transpose pairs the cotangent with a strong zero (JAX: complex64, not weak)
    _is(stagec.grad(lambda z: snp.real(z * z))(1.0 + 2.0j), 2 + 4j, "complex64")
    # Jacobian blocks in the dtype and weak type of the input leaf (jacrev) or output leaf (jacfwd)
    _is(stagec.jacrev(lambda x: x ** 2)(3.0), 6.0, weak=True)
    _is(stagec.jacfwd(lambda x: x * 2)(1.0), 2.0, weak=True)
    jr = stagec.jacrev(lambda x: [x, 2 * x])([1.0, snp.ones(2)])
    jf = stagec.jacfwd(lambda x: [x, 2 * x])([1.0, snp.ones(2)])
    assert [[b.aval.weak_type for b in row] for row in jr[0]] == [[True, False], [True, False]]
    assert [[b.aval.weak_type for b in row] for row in jf[0]] == [[True, True], [False, False]]
    h = stagec.hessian(lambda p: p["a"] ** 2 * p["b"])({"a": 2.0, "b": 3.0})
    _is(h["a"]["a"], 6.0, weak=True)
    _is(h["a"]["b"], 4.0, weak=True)
    _is(h["b"]["b"], 0.0, weak=True)
    # JAX casts each block to its example's dtype: a float32 input's jacrev blocks are float32
    _is(stagec.jacrev(lambda x: (x * 2).astype(snp.float16))(snp.ones(2)), np.eye(2) * 2, shape=(2, 2))


def test_jvp_linearize_vjp_float0_has_aux_and_checks():
    assert stagec.dtypes.float0 == float0  # (where JAX has it: jax.dtypes.float0)
    y, t, aux = stagec.jvp(lambda x: (x * 2, {"a": x}), (1.0,), (1.0,), has_aux=True)
    _is(t, 2.0, weak=True)
    assert aux["a"] == 1.0
    _is(stagec.jvp(lambda x: 2.0, (1.0,), (1.0,))[1], 0.0, weak=True)  # (an unreached output's zero: weak in JAX)
    _is(stagec.linearize(lambda x: (x, 3.0), 1.0)[1](1.0)[1], 0.0, weak=True)
    y, fl, aux = stagec.linearize(lambda x: (x * x, x + 1), 2.0, has_aux=True)
    _is(fl(1.0), 4.0, weak=True)
    assert aux == 3.0
    # an integer primal takes a float0 tangent, as JAX's (an int32 tangent was accepted; JAX raises TypeError)
    with pytest.raises(TypeError, match="float0"):
        stagec.jvp(lambda x: x * 2, (1,), (2,))
    y, t = stagec.jvp(lambda x, y: (x * y, x), (1, 2.0), (np.zeros((), float0), 1.0))
    _is(t[0], 1.0, weak=True)
    assert t[1].dtype == float0  # (the tangent of an integer output)
    y, fl = stagec.linearize(lambda x, n: x * n, 2.0, 3)
    _is(fl(1.0, np.zeros((), float0)), 3.0, weak=True)
    # vjp: an integer input's cotangent is float0 (it was int32 zeros); a wrong cotangent raises ValueError
    _, pb = stagec.vjp(lambda x, y: x * y, 2, 3.0)
    ct = pb(1.0)
    assert ct[0].dtype == float0 and ct[0].shape == ()
    _is(ct[1], 2.0, weak=True)
    _, pb = stagec.vjp(lambda x: x, snp.ones(2))
    with pytest.raises(ValueError, match="float16"):
        pb(snp.ones(2, snp.float16))  # (it returned the float16 cotangent)
    _, pb = stagec.vjp(lambda x: (x, x), 2.0)
    with pytest.raises(ValueError, match="structure"):
        pb([1.0, 1.0])
    _, pb = stagec.vjp(lambda x: (x * 2, (x * 2).astype(snp.int32)), 1.0)
    _is(pb((1.0, np.zeros((), float0)))[0], 2.0, weak=True)
    with pytest.raises(TypeError, match="more than once"):  # ((0., 3.) before: the first copy's gradient lost)
        stagec.grad(lambda x, y: x * y, argnums=(0, 0))(2.0, 3.0)


def test_custom_rules_are_checked_as_in_jax():
    @stagec.custom_jvp
    def f(x):
        return x * 2
    f.defjvp(lambda p, t: (f(p[0]), t[0].astype(snp.float16)))
    with pytest.raises(TypeError, match="shapes and dtypes"):  # (it returned a float16 tangent)
        stagec.jvp(f, (snp.ones(2),), (snp.ones(2),))

    @stagec.custom_vjp
    def g(x):
        return x * 2
    g.defvjp(lambda x: (x * 2, None), lambda r, ct: (snp.ones(3),))
    with pytest.raises(ValueError, match="shapes do not match"):  # (grad of a (2,) input was a (3,) array)
        stagec.grad(lambda x: g(x).sum())(snp.ones(2))

    @stagec.custom_vjp
    def h(x, y):
        return x * y
    h.defvjp(lambda x, y: (x * y, (x, y)), lambda r, ct: [ct * r[1], ct * r[0]])  # (a list: JAX takes it)
    gx, gy = stagec.grad(h, (0, 1))(2.0, 3.0)
    _is(gx, 3.0, weak=True)
    _is(gy, 2.0, weak=True)

    @stagec.custom_vjp
    def k(p):
        return p[0] * p[1]
    k.defvjp(lambda p: (k(p), p), lambda r, ct: ((ct * r[1], None),))  # (None: zeros of that leaf)
    g0, g1 = stagec.grad(k)((2.0, 3.0))
    _is(g0, 3.0, weak=True)
    _is(g1, 0.0, weak=True)

    @stagec.custom_vjp
    def m(p):
        return p["a"] * p["b"]
    m.defvjp(lambda p: (m(p), p), lambda r, ct: ({"a": ct, "c": ct},))
    with pytest.raises(TypeError, match="structure"):  # (its leaves were taken in order, keys unread)
        stagec.grad(m)({"a": 2.0, "b": 3.0})
    with pytest.raises(NotImplementedError, match="symbolic_zeros"):
        m.defvjp(lambda p: (m(p), p), lambda r, ct: (ct,), symbolic_zeros=True)

    # checkpoint: an output the function computes as a constant was returned as stagec's internal `Const`
    c = stagec.checkpoint(lambda x: (x * 2, 3))
    y, _ = stagec.vjp(c, 1.0)
    assert isinstance(y[1], stagec.Array) and int(y[1]) == 3
    # ... and run outside a derivative, a Python number argument's result was a Python float; JAX's is an array
    _is(stagec.checkpoint(lambda x: {"a": x * 2})(1.0)["a"], 2.0, weak=True)
    n_static = stagec.checkpoint(lambda x, n: x.reshape((n,)), static_argnums=-1)  # (n stays a Python int)
    assert n_static(snp.ones((1, 2)), 2).shape == (2,)


def test_jit_trace_stage():
    t = stagec.jit(lambda x, n: x * n, static_argnums=1).trace(1.0, 3)
    assert t.out_info == stagec.ShapeDtypeStruct((), np.float32, weak_type=True)
    assert [e.prim.name for e in t.jaxpr.eqns] == ["mul"]
    _is(t.lower().compile()(2.0), 6.0, weak=True)


def test_custom_functions_take_keyword_arguments():
    @stagec.custom_jvp
    def f(x, y=1.0):
        return x * y
    f.defjvps(lambda t, a, x, y: t * y, lambda t, a, x, y: t * x)

    @stagec.custom_vjp
    def g(x, y):
        return x * y
    g.defvjp(lambda x, y: (x * y, (x, y)), lambda r, ct: (ct * r[1], ct * r[0]))
    for h in (f, g):  # (JAX: 6.0 and a weak 3.0; stagec raised "unexpected keyword argument 'y'")
        assert h(2.0, y=3.0) == 6.0
        _is(stagec.grad(lambda x: h(x, y=3.0))(2.0), 3.0, weak=True)
    _is(stagec.grad(f)(2.0), 1.0, weak=True)  # (the default filled in)
    y, fl = stagec.linearize(lambda x: x, snp.ones(2))
    with pytest.raises(ValueError):  # (JAX's type here; stagec raised TypeError)
        fl(snp.ones(2, snp.float16))


def test_like_functions_keep_a_weak_type():
    # JAX: zeros_like(1.0) is a weak float32 zero, so adding a bfloat16 array stays bfloat16 (stagec: strong
    # float32, and the sum was float32)
    b = snp.ones(2, snp.bfloat16)
    for fn in (snp.zeros_like, snp.ones_like, snp.empty_like, lambda a: snp.full_like(a, 2)):
        assert fn(3.0).aval.weak_type and fn(snp.asarray(1.0)).aval.weak_type
        assert stagec.eval_shape(lambda: fn(3.0) + b).dtype == snp.bfloat16  # (traced only: no compile)
    assert not snp.full_like(3.0, 2, dtype=snp.float32).aval.weak_type
    assert not snp.zeros_like(np.float32(3)).aval.weak_type
    assert stagec.eval_shape(lambda x: snp.zeros_like(x) + b, 1.0).dtype == snp.bfloat16  # (a traced argument)
