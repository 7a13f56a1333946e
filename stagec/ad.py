"""Automatic differentiation: `jvp`, `linearize`, `vjp`, `grad`, `jacfwd`/`jacrev`/`hessian`, custom rules.

Forward mode is a `JVPTrace`: its tracers carry a primal and a tangent, and each primitive's JVP rule
(`stagec.primitives`, beside its definition) maps them. Reverse mode records the tangent half: the tangents
are tracers of a `LinTrace`, which sits above the JVP trace and so receives every operation that involves a
tangent -- exactly the linear part of the JVP rules -- while the primal operations go on to the trace below
(eager, or `jit`'s staging trace: one module for forward and backward). The recorded linear graph is then
run forward (`linearize`) or transposed equation by equation with the primitives' transpose rules (`vjp`).
This is Autodidax's linearize + transpose, with the known/unknown split given by the trace levels.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from . import dtypes as _dt
from .errors import ConcretizationTypeError, TracerArrayConversionError
from . import tree_util
from .core import (Const, Eqn, Graph, Literal, Primitive, ShapedArray, Tracer, TracerBase, Var, aval_of, eval_graph,
                   find_top_trace, flatten_outputs, to_numpy_constant, trace_subgraph, tracing)
from . import lowering as L
from .primitives import _ad
from .primitives._ad import UndefinedPrimal, add_tangents, differentiable, is_undefined
from .primitives.control_flow import _split_caps, cond_p, scan_p, while_p
from .batching import BatchTrace, BatchTracer, vmap
from .primitives._batch import axis_size, example_shape, moveaxis
from .primitives.reductions import reduce_sum
from .primitives.structural import broadcast_in_dim_p, reshape, transpose

# ---------------------------------------------------------------- forward mode


class JVPTracer(TracerBase):
    """A primal value with its tangent. Python control flow sees the primal: concrete values branch eagerly,
    staged ones raise the concretization error (as JAX's concrete JVP tracers)."""

    __slots__ = ("_trace", "primal", "tangent")

    def __init__(self, trace: JVPTrace, primal, tangent):
        self._trace, self.primal, self.tangent = trace, primal, tangent

    @property
    def aval(self) -> ShapedArray:
        return aval_of(self.primal)

    def __repr__(self):
        return f"JVPTracer<{self.aval!r}>"

    # As JAX's: bool/int/index/item see the primal (branching and integer use carry no derivative), while a
    # float or NumPy array made from the value would silently drop its derivative, so those raise.
    def __bool__(self): return bool(self.primal)
    def __int__(self): return int(self.primal)
    def __index__(self): return self.primal.__index__()
    def item(self, *a): return self.primal.item(*a) if hasattr(self.primal, "item") else self.primal
    def __float__(self): raise self._dropped("float", ConcretizationTypeError)
    def __complex__(self): raise self._dropped("complex", ConcretizationTypeError)
    def tolist(self): raise self._dropped("tolist", ConcretizationTypeError)
    def __array__(self, dtype=None, copy=None): raise self._dropped("__array__", TracerArrayConversionError)

    def _dropped(self, what: str, cls) -> Exception:
        return cls(f"The `{what}` conversion was called on {self}, a value being differentiated (grad, jvp, vjp, "
                   f"jacfwd, ...): a Python float or NumPy array made from it would carry no derivative, so the "
                   f"derivative would silently be wrong. Use stagec.numpy (snp) functions instead of numpy (np) "
                   f"ones, or stagec.lax.stop_gradient where no derivative is wanted.")


class JVPTrace:
    """Applies the JVP rules to operations on its tracers (a tangent of None is a known zero)."""

    level = 0

    def __init__(self):
        self.active = True

    def split(self, x) -> tuple[Any, Any]:
        if isinstance(x, JVPTracer) and x._trace is self:
            return x.primal, x.tangent
        return x, None

    def process_primitive(self, prim: Primitive, args: Sequence, params: dict) -> list:
        primals, tangents = zip(*map(self.split, args)) if args else ((), ())
        out_avals = prim.out_avals([aval_of(p) for p in primals], params)
        if all(t is None for t in tangents) or not any(differentiable(a) for a in out_avals):
            out = prim.bind(*primals, **params)
            return list(out) if prim.multiple_results else [out]
        if prim.jvp is None:
            raise NotImplementedError(f"Differentiation rule for '{prim.name}' not implemented: stagec cannot "
                                      f"differentiate through the primitive {prim.name}")
        out, tout = prim.jvp(list(primals), list(tangents), **params)
        if not prim.multiple_results:
            out, tout = [out], [tout]
        return [self.wrap(p, t) for p, t in zip(out, tout)]

    def wrap(self, p, t):
        return JVPTracer(self, p, t) if t is not None and differentiable(aval_of(p)) else p


def _top_jvp_trace(leaves) -> JVPTrace | None:
    top = None
    for x in leaves:
        if isinstance(x, JVPTracer) and x._trace.active and (top is None or x._trace.level > top.level):
            top = x._trace
    return top


# ---------------------------------------------------------------- the recorded linear part


class LinTracer(TracerBase):
    """A tangent whose value is not computed but recorded (for transposition or later evaluation)."""

    __slots__ = ("_trace", "_var")
    _linear = True

    def __init__(self, trace: LinTrace, var: Var):
        self._trace, self._var = trace, var

    @property
    def aval(self) -> ShapedArray:
        return self._var.aval

    def __repr__(self):
        return f"LinearTracer<{self.aval!r}>"

    def _no_value(self, *a):
        raise TypeError(f"{self!r} is a tangent being recorded for reverse-mode differentiation and has no value "
                        f"(a differentiation rule used a tangent as a value)")

    __bool__ = __int__ = __float__ = __complex__ = __index__ = __array__ = item = tolist = _no_value


class LinTrace:
    """Records each operation on its tracers as an equation (the linear part of the JVP rules)."""

    level = 0

    def __init__(self):
        self.active = True
        self.eqns: list[Eqn] = []

    def new_input(self, aval: ShapedArray) -> LinTracer:
        return LinTracer(self, Var(aval))

    def process_primitive(self, prim: Primitive, args: Sequence, params: dict) -> list:
        out_avals = prim.out_avals([aval_of(a) for a in args], params)
        inputs = [a._var if isinstance(a, LinTracer) and a._trace is self else a for a in args]
        outs = [Var(a) for a in out_avals]
        self.eqns.append(Eqn(prim, inputs, params, outs))
        return [LinTracer(self, v) for v in outs]

    def to_graph(self, tangents_in: Sequence, tangents_out: Sequence, out_avals: Sequence[ShapedArray],
                 instantiate: bool = False) -> tuple[Graph, list, list[bool]]:
        """The recorded graph: inputs are the residuals (values the linear part reads: tracers and arrays),
        then the input tangents that are not None; outputs are the non-None output tangents (all, as zeros
        where None, if `instantiate`). Returns (graph, residual values, which outputs it has)."""
        res_vars: dict[int, Var] = {}
        residuals: list = []

        def atom(x):
            if isinstance(x, Var):
                return x
            if isinstance(x, LinTracer) and x._trace is self:
                return x._var
            if isinstance(x, TracerBase) or hasattr(x, "_bv"):
                v = res_vars.get(id(x))
                if v is None:
                    v = res_vars[id(x)] = Var(aval_of(x))
                    residuals.append(x)
                return v
            aval = aval_of(x)
            return Literal(to_numpy_constant(x, aval), aval)

        eqns = [Eqn(e.prim, [atom(i) for i in e.inputs], e.params, e.outputs) for e in self.eqns]
        outs, out_nz = [], []
        for t, aval in zip(tangents_out, out_avals):
            if t is None and instantiate:
                outs.append(Literal(np.zeros(aval.shape, aval.dtype), aval.strip_weak()))
            elif t is not None:
                outs.append(atom(t))
            out_nz.append(t is not None or instantiate)
        in_vars = [res_vars[id(r)] for r in residuals] + [t._var for t in tangents_in if t is not None]
        return Graph(in_vars, eqns, outs, "linear"), residuals, out_nz


def backward_pass(graph: Graph, args: Sequence, cts: Sequence) -> list:
    """Transpose `graph`, linear in its inputs given as `UndefinedPrimal` (the others are values), applied to
    the output cotangents `cts` (None: zero). Returns a cotangent (or None) per input."""
    env: dict[int, Any] = {}
    linear: set[int] = set()
    for v, a in zip(graph.in_vars, args):
        if is_undefined(a):
            linear.add(v.id)
        else:
            env[v.id] = a
    read = lambda x: Const(x.value, x.aval) if isinstance(x, Literal) else env[x.id]
    is_lin = lambda x: isinstance(x, Var) and x.id in linear
    lin_eqns = []
    for e in graph.eqns:  # the non-linear equations (computing coefficients) run forward first
        if any(map(is_lin, e.inputs)):
            lin_eqns.append(e)
            linear.update(o.id for o in e.outputs)
        else:
            outs = e.prim.bind(*map(read, e.inputs), **e.params)
            env.update(zip([o.id for o in e.outputs], outs if e.prim.multiple_results else [outs]))
    ct_env: dict[int, Any] = {}

    def accumulate(x, ct):
        if ct is not None and is_lin(x):
            ct_env[x.id] = add_tangents(ct_env.get(x.id), ct)

    for o, ct in zip(graph.outs, cts):
        accumulate(o, ct)
    for e in reversed(lin_eqns):
        out_cts = [ct_env.pop(o.id, None) for o in e.outputs]
        if all(c is None for c in out_cts):
            continue
        if e.prim.transpose is None:
            raise NotImplementedError(f"Transpose rule (for reverse-mode differentiation) for '{e.prim.name}' not "
                                      f"implemented")
        ins = [UndefinedPrimal(i.aval) if is_lin(i) else read(i) for i in e.inputs]
        in_cts = e.prim.transpose(out_cts if e.prim.multiple_results else out_cts[0], *ins, **e.params)
        for i, c in zip(e.inputs, in_cts):
            accumulate(i, c)
    return [ct_env.get(v.id) for v in graph.in_vars]


def _full(aval: ShapedArray, value):
    """An array of `value` shaped like `aval`, always a computed array (an `Array` when eager)."""
    c = Const(np.array(value, aval.dtype), ShapedArray((), aval.dtype, aval.weak_type))
    return broadcast_in_dim_p.bind(c, shape=aval.shape, broadcast_dimensions=())


class _Linearized:
    """`fun` run once with recorded tangents: primal outputs and the linear map from input to output tangents."""

    def __init__(self, fun: Callable, primals: Sequence, has_aux: bool = False, who: str = "vjp"):
        self.in_avals = [aval_of(p) for p in primals]
        nz = [differentiable(a) for a in self.in_avals]
        lin = LinTrace()
        with tracing(lin):
            jt = JVPTrace()
            with tracing(jt):
                tin = [lin.new_input(a) if z else None for a, z in zip(self.in_avals, nz)]
                out = fun(*[jt.wrap(p, t) for p, t in zip(primals, tin)])
        if has_aux:
            out, aux = _split_aux(out, True, who)
            self.aux = tree_util.tree_map(lambda x: jt.split(x)[0], aux)
        leaves, self.out_tree = flatten_outputs(out, getattr(fun, "__name__", "fun"))
        pairs = [jt.split(x) for x in leaves]
        self.out_primals = [p for p, _ in pairs]
        self.out_avals = [aval_of(p) for p in self.out_primals]
        self.graph, self.residuals, self.out_nz = lin.to_graph(tin, [t for _, t in pairs], self.out_avals)
        self.in_nz = nz

    def out(self):
        return tree_util.tree_unflatten(self.out_tree, self.out_primals)

    def forward(self, tangents: Sequence) -> list:
        outs = iter(eval_graph(self.graph, self.residuals + [t for t, z in zip(tangents, self.in_nz) if z]))
        return [next(outs) if z else _full(a, 0) for a, z in zip(self.out_avals, self.out_nz)]  # (JAX: weak kept)

    def backward(self, cts: Sequence) -> list:
        n_res = len(self.residuals)
        args = self.residuals + [UndefinedPrimal(a) for a, z in zip(self.in_avals, self.in_nz) if z]
        res = iter(backward_pass(self.graph, args, [c for c, z in zip(cts, self.out_nz) if z])[n_res:])
        out = []
        for a, z in zip(self.in_avals, self.in_nz):
            c = next(res) if z else None
            out.append(_full(a, 0) if c is None else c)
        return out


# ---------------------------------------------------------------- the API


def _is_float0(t) -> bool:
    return getattr(t, "dtype", None) == float0


def _check_tangent(p, t, i, who: str = "stagec.jvp"):
    """JAX's checks of a tangent against its primal: equal shapes, equal dtypes (weak types aside), and a float0
    tangent for an integer or bool primal. The tangent to use: None (a zero) for a float0 one."""
    pa = aval_of(p)
    if _is_float0(t):
        ta_shape = np.shape(t)
    else:
        ta = aval_of(t)
        ta_shape = ta.shape
    if pa.shape != ta_shape:
        raise ValueError(f"{who} called with different primal and tangent shapes at argument {i}: primal shape "
                         f"{pa.shape}, tangent shape {ta_shape}")
    if not differentiable(pa):
        if not _is_float0(t):
            raise TypeError(f"primal and tangent arguments to {who} do not match; dtypes must be equal, or in case "
                            f"of int/bool primal dtype the tangent dtype must be float0. Got primal dtype "
                            f"{pa.dtype} and so expected tangent dtype {float0}, but got tangent dtype {ta.dtype} "
                            f"instead (argument {i}).")
        return None
    if _is_float0(t) or pa.dtype != ta.dtype:
        raise (ValueError if who == "linearized function" else TypeError)(  # (as JAX's: ValueError after linearize)
            f"primal and tangent arguments to {who} do not match; dtypes must be equal, got primal {pa.dtype} and "
            f"tangent {t.dtype if _is_float0(t) else ta.dtype} at argument {i}")
    return t


def _tangent_out(p, t):
    """An output tangent as JAX gives it: float0 zeros for an integer or bool output, zeros for an unreached one."""
    a = aval_of(p)
    if not differentiable(a):
        return np.zeros(a.shape, float0)
    return _full(a, 0) if t is None else t  # (a zero of the primal's tangent type, weak type kept, as JAX's)


def _split_aux(out, has_aux: bool, who: str):
    if not has_aux:
        return out, None
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(f"{who} with has_aux=True needs the function to return a pair (out, aux), got "
                        f"{type(out).__name__}")
    return out[0], out[1]


def jvp(fun: Callable, primals: Sequence, tangents: Sequence, has_aux: bool = False):
    """(fun(*primals), the derivative of fun at primals applied to tangents): forward mode. With `has_aux`, `fun`
    returns (out, aux) and the result is (out, tangent_out, aux)."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError(f"primal and tangent arguments to stagec.jvp must be tuples or lists; found "
                        f"{type(primals).__name__} and {type(tangents).__name__}.")
    p_leaves, p_tree = tree_util.tree_flatten(list(primals))
    t_leaves, t_tree = tree_util.tree_flatten(list(tangents))
    if p_tree != t_tree:
        raise TypeError(f"primal and tangent arguments to stagec.jvp must have the same tree structure; primals "
                        f"have tree structure {p_tree} whereas tangents have tree structure {t_tree}.")
    t_leaves = [_check_tangent(p, t, i) for i, (p, t) in enumerate(zip(p_leaves, t_leaves))]
    jt = JVPTrace()
    with tracing(jt):
        args = [jt.wrap(p, t) for p, t in zip(p_leaves, t_leaves)]
        out, aux = _split_aux(fun(*tree_util.tree_unflatten(p_tree, args)), has_aux, "jvp")
    leaves, out_tree = flatten_outputs(out, getattr(fun, "__name__", "fun"))
    pairs = [jt.split(x) for x in leaves]
    touts = [_tangent_out(p, t) for p, t in pairs]
    res = tree_util.tree_unflatten(out_tree, [p for p, _ in pairs]), tree_util.tree_unflatten(out_tree, touts)
    if has_aux:
        return res + (tree_util.tree_map(lambda x: jt.split(x)[0], aux),)
    return res


def linearize(fun: Callable, *primals, has_aux: bool = False):
    """(fun(*primals), f_jvp[, aux]): f_jvp(*tangents) applies the derivative at primals without re-running fun."""
    p_leaves, p_tree = tree_util.tree_flatten(list(primals))
    lz = _Linearized(lambda *xs: fun(*tree_util.tree_unflatten(p_tree, xs)), p_leaves, has_aux, "linearize")

    def f_jvp(*tangents):
        t_leaves, t_tree = tree_util.tree_flatten(list(tangents))
        if t_tree != p_tree:
            raise TypeError(f"linearized function called with tangents of structure {t_tree}, expected {p_tree}")
        t_leaves = [_check_tangent(p, t, i, "linearized function") for i, (p, t) in enumerate(zip(p_leaves, t_leaves))]
        outs = lz.forward(t_leaves)  # (None only where the input is not differentiable: not read)
        return tree_util.tree_unflatten(lz.out_tree, [np.zeros(a.shape, float0) if not differentiable(a) else o
                                                      for o, a in zip(outs, lz.out_avals)])
    return (lz.out(), f_jvp, lz.aux) if has_aux else (lz.out(), f_jvp)


def vjp(fun: Callable, *primals, has_aux: bool = False):
    """(fun(*primals), f_vjp[, aux]): f_vjp(ct) pulls an output cotangent back to one per primal (a tuple)."""
    p_leaves, p_tree = tree_util.tree_flatten(list(primals))
    lz = _Linearized(lambda *xs: fun(*tree_util.tree_unflatten(p_tree, xs)), p_leaves, has_aux, "vjp")

    def f_vjp(ct):
        c_leaves, c_tree = tree_util.tree_flatten(ct)
        if c_tree != lz.out_tree:
            raise ValueError(f"unexpected tree structure of the cotangent: the argument to a VJP function returned "
                             f"by stagec.vjp must have the structure of the differentiated function's output "
                             f"{lz.out_tree}, got {c_tree}.")
        for c, a in zip(c_leaves, lz.out_avals):
            ca = np.shape(c) if _is_float0(c) else aval_of(c).shape
            if ca != a.shape:
                raise ValueError(f"Shape of cotangent input to vjp pullback function {ca} must be "
                                 f"the same as the shape of corresponding primal input {a.shape}.")
            if differentiable(a) and (_is_float0(c) or aval_of(c).dtype != a.dtype):
                raise ValueError(f"unexpected type (e.g. shape/dtype) for argument to VJP function: got "
                                 f"{c.dtype if _is_float0(c) else aval_of(c).dtype}{list(a.shape)}, but expected "
                                 f"{a.dtype}{list(a.shape)} because the corresponding output of the differentiated "
                                 f"function had that type")
        c_leaves = [None if not differentiable(a) else c for c, a in zip(c_leaves, lz.out_avals)]
        cts = [np.zeros(a.shape, float0) if not differentiable(a) else c
               for c, a in zip(lz.backward(c_leaves), lz.in_avals)]
        return tuple(tree_util.tree_unflatten(p_tree, cts))
    return (lz.out(), f_vjp, lz.aux) if has_aux else (lz.out(), f_vjp)


def _argnums(argnums, nargs: int, who: str) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for n in nums:
        if not -nargs <= n < nargs:
            raise TypeError(f"{who}: argnums={argnums} but the function was called with {nargs} positional "
                            f"argument(s)")
    out = tuple(n % nargs for n in nums)
    if len(set(out)) != len(out):  # (the last copy of an argument would take it: the others' gradient was 0)
        raise TypeError(f"{who}: argnums={argnums} names an argument more than once")
    return out


float0 = _dt.float0  # JAX's dtype of the gradient of an integer input (zero-sized, NumPy only)


def _check_inputs(args, who: str, holomorphic: bool = False, allow_int: bool = False):
    """JAX's checks of the differentiated arguments' dtypes."""
    for x in tree_util.tree_leaves(args):
        dt = aval_of(x).dtype
        kind = _dt.kind(dt)
        if holomorphic:
            if kind != "c":
                raise TypeError(f"{who} with holomorphic=True requires inputs with complex dtype, but got {dt.name}.")
        elif who == "jacfwd" and kind != "f":
            raise TypeError(f"jacfwd requires real-valued inputs (input dtype that is a sub-dtype of np.floating), "
                            f"but got {dt.name}. For holomorphic differentiation, pass holomorphic=True. For "
                            f"differentiation of non-holomorphic functions involving complex inputs or integer "
                            f"inputs, use stagec.jvp directly.")
        elif kind not in "fc" and not allow_int:
            raise TypeError(f"{who} requires real- or complex-valued inputs (input dtype that is a sub-dtype of "
                            f"np.inexact), but got {dt.name}. If you want to use Boolean- or integer-valued "
                            f"inputs, use vjp or set allow_int to True.")


def _check_outputs(avals, who: str, holomorphic: bool):
    for a in avals:
        kind = _dt.kind(a.dtype)
        if holomorphic and kind != "c":
            raise TypeError(f"{who} with holomorphic=True requires outputs with complex dtype, but got "
                            f"{a.dtype.name}.")
        if not holomorphic and who != "jacfwd" and kind == "c":
            what = "grad" if who == "grad" else who
            raise TypeError(f"{what} requires real-valued outputs (output dtype that is a sub-dtype of np.floating), "
                            f"but got {a.dtype.name}. For holomorphic differentiation, pass holomorphic=True. For "
                            f"differentiation of non-holomorphic functions involving complex outputs, use "
                            f"stagec.vjp directly.")


def _int_grads(grads, dyn):
    """Gradients of integer (and bool) arguments as float0 zeros, as JAX's `allow_int=True` gives."""
    return [tree_util.tree_map(lambda g, x: np.zeros(aval_of(x).shape, float0) if not differentiable(aval_of(x))
                               else g, g, x) for g, x in zip(grads, dyn)]


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   holomorphic: bool = False, allow_int: bool = False) -> Callable:
    """A function returning (fun(*args), its gradient with respect to the arguments `argnums`)."""
    name = getattr(fun, "__name__", "fun")

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        nums = _argnums(argnums, len(args), "grad")
        dyn = [args[i] for i in nums]
        _check_inputs(dyn, "grad", holomorphic, allow_int)

        def f(*xs):
            full = list(args)
            for i, x in zip(nums, xs):
                full[i] = x
            return fun(*full, **kwargs)
        res = vjp(f, *dyn, has_aux=has_aux)
        out, pullback = res[0], res[1]
        a = aval_of(out) if not isinstance(out, (tuple, list, dict)) else None
        if a is None or a.shape != ():
            shape = a.shape if a is not None else type(out).__name__
            raise TypeError(f"Gradient only defined for scalar-output functions. Output of {name} had shape: "
                            f"{shape}.")
        if holomorphic:
            _check_outputs([a], "grad", True)
        elif _dt.kind(a.dtype) != "f":
            raise TypeError(f"grad requires real-valued outputs (output dtype that is a sub-dtype of np.floating), "
                            f"but got {a.dtype.name}. For differentiation of functions with complex outputs, use "
                            f"stagec.vjp directly.")
        g = pullback(_full(a, 1))
        if allow_int:
            g = _int_grads(g, dyn)
        g = g[0] if isinstance(argnums, int) else tuple(g)
        return ((out, res[2]), g) if has_aux else (out, g)
    return wrapped


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False,
         allow_int: bool = False) -> Callable:
    """The gradient of scalar-valued `fun` with respect to the arguments `argnums` (reverse mode)."""
    vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        (out, g) = vg(*args, **kwargs)
        return (g, out[1]) if has_aux else g
    return wrapped


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False,
           allow_int: bool = False) -> Callable:
    """The Jacobian by reverse mode: the pullback mapped over the output elements. Pytrees as JAX's: the output's
    structure outside, the argument's (a tuple of them for a tuple `argnums`) inside; a block for output leaf o and
    input leaf i has shape o.shape + i.shape."""
    return _jac(fun, argnums, has_aux, holomorphic, allow_int, rev=True, who="jacrev")


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False) \
        -> Callable:
    """The Jacobian by forward mode (the linearized function mapped over the input elements), structured and
    shaped as `jacrev`'s."""
    return _jac(fun, argnums, has_aux, holomorphic, False, rev=False, who="jacfwd")


def _jac(fun, argnums, has_aux, holomorphic, allow_int, rev: bool, who: str):
    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        nums = _argnums(argnums, len(args), who)
        dyn = [args[i] for i in nums]
        _check_inputs(dyn, who, holomorphic, allow_int)
        leaves, trees = [], []
        for a in dyn:
            ls, t = tree_util.tree_flatten(a)
            leaves += ls
            trees.append(t)
        lz = _Linearized(_partial_tree_args(fun, args, kwargs, nums, trees), leaves, has_aux, who)
        _check_outputs(lz.out_avals, who, holomorphic)
        if rev:
            jac = _jacobian(lz, lz.backward, lz.out_avals, lz.in_avals, rev=True)  # jac[out][in]
        else:
            jac = [list(col) for col in zip(*_jacobian(lz, lz.forward, lz.in_avals, lz.out_avals, rev=False))] \
                if lz.in_avals else [[] for _ in lz.out_avals]
        # each block in the dtype and weak type of its input leaf (jacrev) or output leaf (jacfwd), as JAX's
        # `_possible_downcast`: jacrev(f)(2.0) is weakly typed as 2.0 is
        jac = [[_like_example(m, lz.in_avals[i] if rev else lz.out_avals[o]) for i, m in enumerate(row)]
               for o, row in enumerate(jac)]
        per_out = []
        for row in jac:
            it, per_arg = iter(row), []
            for t in trees:
                per_arg.append(tree_util.tree_unflatten(t, [next(it) for _ in range(t.num_leaves)]))
            per_out.append(per_arg[0] if isinstance(argnums, int) else tuple(per_arg))
        out = tree_util.tree_unflatten(lz.out_tree, per_out)
        return (out, lz.aux) if has_aux else out
    return wrapped


def _like_example(m, example: ShapedArray):
    """A Jacobian block `m` in `example`'s dtype and weak type (its real part if `m` is complex and `example` is
    not): JAX's `_possible_downcast`."""
    from .primitives.elementwise import convert_element_type, real
    if _dt.kind(aval_of(m).dtype) == "c" and _dt.kind(example.dtype) != "c":
        m = real(m)
    return convert_element_type(m, example.dtype, example.weak_type)


def _partial_tree_args(fun, args, kwargs, nums, trees):
    """`fun` of the flat leaves of the arguments `nums` (of structures `trees`), the other arguments fixed."""
    def f(*leaves):
        full, k = list(args), 0
        for i, t in zip(nums, trees):
            full[i] = tree_util.tree_unflatten(t, list(leaves[k:k + t.num_leaves]))
            k += t.num_leaves
        return fun(*full, **kwargs)
    return f


def _jacobian(lz, apply, basis_avals, result_avals, rev: bool) -> list[list]:
    """jac[b][r]: the Jacobian block for basis leaf b and result leaf r, shaped (b.shape + r.shape) when
    `rev` (output then input) and transposed to (r.shape + b.shape) otherwise. `apply` runs once per basis
    leaf, mapped over its identity basis by `vmap` (one batched pass in the module, as JAX does)."""
    out = []
    for b, b_aval in enumerate(basis_avals):
        if b_aval.size == 0:
            out.append([_full(r.update(shape=b_aval.shape + r.shape), 0) for r in result_avals])
            continue
        eye = np.eye(b_aval.size, dtype=b_aval.dtype).reshape((b_aval.size,) + b_aval.shape)
        one = lambda v, b=b: apply([v if i == b else _full(a.strip_weak(), 0) for i, a in enumerate(basis_avals)])
        rows = vmap(one)(Const(eye, ShapedArray(eye.shape, b_aval.dtype)))
        blocks = []
        for r_aval, m in zip(result_avals, rows):
            if isinstance(m, Const):  # (the basis itself, as an identity returns it: computed, as `_full` is)
                m = broadcast_in_dim_p.bind(m, shape=m.aval.shape, broadcast_dimensions=tuple(range(m.aval.ndim)))
            m = reshape(m, b_aval.shape + r_aval.shape)  # b.shape + r.shape
            if not rev:
                nb, nr = len(b_aval.shape), len(r_aval.shape)
                m = transpose(m, tuple(range(nb, nb + nr)) + tuple(range(nb)))
            blocks.append(m)
        out.append(blocks)
    return out


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
            holomorphic: bool = False) -> Callable:
    """The Hessian: jacfwd(jacrev(fun)), pytrees nested as JAX's."""
    return jacfwd(jacrev(fun, argnums, has_aux, holomorphic), argnums, has_aux, holomorphic)


# ---------------------------------------------------------------- custom rules


def _split_diff_args(args, nondiff_argnums):
    """The innermost JVP trace over the differentiable `args` (None when none), their primal and tangent
    leaves (a tangent None where zero) and their tree."""
    diff = [a for i, a in enumerate(args) if i not in nondiff_argnums]
    leaves, tree = tree_util.tree_flatten(diff)
    trace = _top_jvp_trace(leaves)
    if trace is None:
        return None, leaves, [], tree
    split = [trace.split(x) for x in leaves]
    return trace, [p for p, _ in split], [t for _, t in split], tree


def _rebuild(args, nondiff_argnums, diff):
    it = iter(diff)
    return [a if i in nondiff_argnums else next(it) for i, a in enumerate(args)]


def differentiated(x) -> bool:
    """Whether `x` carries a tangent: a JVP tracer, possibly batched by vmaps above it."""
    while isinstance(x, BatchTracer) and x._trace.active:
        x = x.val
    return isinstance(x, JVPTracer) and x._trace.active


def _batch_over_jvp(args) -> tuple[BatchTrace | None, list, list]:
    """When the innermost transformation of `args` is a vmap with values being differentiated below it
    (`grad(vmap(f))`): that batch trace, and the arguments' leaves unwrapped from it with their batch axes.
    The custom rule is then batched as a whole (its primal and its rule under vmap), as JAX does; otherwise
    the JVP trace would not see the call and would differentiate the primal function instead."""
    leaves = tree_util.tree_leaves(list(args))
    top = None
    for x in leaves:
        if isinstance(x, (JVPTracer, BatchTracer)) and x._trace.active and (top is None or x._trace.level > top.level):
            top = x._trace
    if not isinstance(top, BatchTrace) or not any(map(differentiated, leaves)):
        return None, [], []
    vals, dims = zip(*map(top.unpack, leaves))
    return top, list(vals), list(dims)


def _wrap_batched(trace: BatchTrace, out):
    return tree_util.tree_map(lambda o: BatchTracer(trace, o, 0), out)


def _primal_call(fn, args):
    """`fn` (a `custom_jvp` or `custom_vjp`) called on values not being differentiated. Inside a branch or loop body
    being traced (or a checkpointed function) it is recorded as one `custom_call` equation, so that differentiating the
    body later applies the custom rule: inlined, `grad` of a `scan` whose body called it took the derivative of its
    primal function (a relu's rule, a clipped gradient lost)."""
    leaves = tree_util.tree_leaves(list(args))
    if fn._nondiff or not any(isinstance(x, Tracer) and x._trace.sub for x in leaves):
        return fn._primal_fun(*args)
    graph, caps, out_tree = trace_subgraph(fn._primal_fun, list(args), f"custom function {fn.__name__}")
    outs = custom_call_p.bind(*leaves, *caps, fn=fn, graph=graph, in_tree=tree_util.tree_structure(list(args)),
                              n_args=len(leaves))
    return tree_util.tree_unflatten(out_tree, outs)


custom_call_p = Primitive("custom_call", lambda *avals, graph, **_: list(graph.out_avals), multiple_results=True)


@custom_call_p.def_lowering
def _custom_call_lower(ctx, *args, graph, **_):
    return L.emit_graph(graph, list(args))


@custom_call_p.def_stepwise
def _custom_call_stepwise(*args, graph, **_):
    return eval_graph(graph, list(args))


@custom_call_p.def_jvp
def _custom_call_jvp(primals, tangents, *, fn, graph, in_tree, n_args):
    """The custom rule: `fn` called again, on the primals with their tangents."""
    if any(t is not None for t in tangents[n_args:]):
        raise NotImplementedError(f"differentiating the custom function {fn.__name__} with respect to a value it "
                                  f"closes over (not an argument): pass that value as an argument")
    # (a constant of a recorded graph, as a backward pass hands one, becomes a computed array for `fn` to take)
    primals = [broadcast_in_dim_p.bind(p, shape=p.aval.shape, broadcast_dimensions=tuple(range(p.aval.ndim)))
               if isinstance(p, (Const, Literal)) else p for p in primals]
    jt = JVPTrace()
    with tracing(jt):
        ins = tree_util.tree_unflatten(in_tree, [jt.wrap(p, t) for p, t in zip(primals, tangents)])
        out = fn._apply(ins, forward=True) if isinstance(fn, custom_vjp) else fn(*ins)
    pairs = [jt.split(o) for o in tree_util.tree_leaves(out)]
    return ([p for p, _ in pairs],
            [(_full(aval_of(p).strip_weak(), 0) if t is None else t) if differentiable(aval_of(p)) else None
             for p, t in pairs])


@custom_call_p.def_batch
def _custom_call_batch(args, dims, *, fn, graph, in_tree, n_args):
    """`fn` mapped as a whole (its primal and its rule under vmap), as JAX's."""
    from .batching import run_batched
    size = axis_size(args, dims)
    if any(d is not None for d in dims[n_args:]):  # a batched value it closes over: its primal alone
        return run_batched(graph, list(args), list(dims), size, graph.name)
    vals = tree_util.tree_unflatten(in_tree, list(args[:n_args]))
    out = fn._batched(size, vals, list(args[:n_args]), list(dims[:n_args]))(*vals)
    outs = tree_util.tree_leaves(out)
    return outs, [0] * len(outs)


class custom_jvp:
    """A function with its own JVP rule: `@custom_jvp def f(x): ...`, then `@f.defjvp def f_jvp(primals,
    tangents): return out, tangent_out`. Applied when `f` is called on values being differentiated."""

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        self._primal_fun, self._nondiff = fun, tuple(nondiff_argnums)
        self._sig = _signature(fun)
        self._jvp_rule: Callable | None = None
        functools.update_wrapper(self, fun)

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        if symbolic_zeros:
            raise NotImplementedError("custom_jvp.defjvp(symbolic_zeros=True) is not supported by stagec: its rule "
                                      "gets instantiated zero tangents")
        self._jvp_rule = jvp
        return jvp

    def defjvps(self, *fns: Callable | None) -> None:
        """One function per argument: `fn(tangent, ans, *primals)` is that argument's contribution."""
        def rule(primals, tangents):
            ans = self(*primals)  # (itself, as JAX's: an outer derivative of `ans` takes these rules too, not the
            out = None            # primal's branches, whose untaken side gave NaN: log_ndtr''(0))
            for fn, t in zip(fns, tangents):
                if fn is not None:
                    out = add_tangents(out, fn(t, ans, *primals))
            return ans, out if out is not None else tree_util.tree_map(lambda a: _full(aval_of(a), 0), ans)
        self._jvp_rule = rule

    def __call__(self, *args, **kwargs):
        args = _resolve_kwargs(self._primal_fun, self._sig, args, kwargs)
        if self._jvp_rule is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {self.__name__} using defjvp.")
        btrace, vals, dims = _batch_over_jvp(args)
        if btrace is not None:
            return _wrap_batched(btrace, self._batched(btrace.size, args, vals, dims)(*_unflat(args, vals)))
        trace, p_leaves, t_leaves, tree = _split_diff_args(args, self._nondiff)
        if trace is None:
            return _primal_call(self, args)
        primals = tree_util.tree_unflatten(tree, p_leaves)
        tangents = tree_util.tree_unflatten(tree, [_full(aval_of(p).strip_weak(), 0) if t is None else t
                                                   for p, t in zip(p_leaves, t_leaves)])
        nondiff = [args[i] for i in self._nondiff]
        out, tout = self._jvp_rule(*nondiff, tuple(primals), tuple(tangents))
        o_leaves, o_tree = tree_util.tree_flatten(out)
        t_leaves, t_tree = tree_util.tree_flatten(tout)
        if o_tree != t_tree:
            raise TypeError(f"Custom JVP rule of {self.__name__} must produce primal and tangent outputs with equal "
                            f"container (pytree) structures, but got {o_tree} and {t_tree} respectively.")
        for o, t in zip(o_leaves, t_leaves):
            oa, ta = aval_of(o), aval_of(t)
            if oa.shape != ta.shape or (differentiable(oa) and oa.dtype != ta.dtype):
                raise TypeError(f"Custom JVP rule of {self.__name__} must produce primal and tangent outputs with "
                                f"corresponding shapes and dtypes. Expected {oa.dtype}{list(oa.shape)} (the tangent "
                                f"type of {oa.dtype}{list(oa.shape)}) but got {ta.dtype}{list(ta.shape)}.")
        return tree_util.tree_unflatten(o_tree, [trace.wrap(o, t) for o, t in zip(o_leaves, t_leaves)])

    def _batched(self, size: int, args, vals, dims) -> custom_jvp:
        """This function mapped over the batch axes `dims` of the leaves of `args`, outputs batched on axis 0,
        with its JVP rule mapped likewise (a tangent has its primal's batch axis)."""
        axes = tuple(_unflat(args, dims))
        nd_axes = tuple(axes[i] for i in self._nondiff)
        d_axes = tuple(a for i, a in enumerate(axes) if i not in self._nondiff)
        out = custom_jvp(vmap(self._primal_fun, in_axes=axes, axis_size=size), self._nondiff)
        rule = vmap(self._jvp_rule, in_axes=nd_axes + (d_axes, d_axes), axis_size=size)
        out.defjvp(lambda *a: rule(*a[:-2], tuple(a[-2]), tuple(a[-1])))
        return out


def _signature(fun: Callable):
    """(fun's signature, whether a parameter has a default), or None where Python cannot tell."""
    import inspect
    try:
        sig = inspect.signature(fun)
    except (TypeError, ValueError):
        return None
    return sig, any(p.default is not p.empty for p in sig.parameters.values())


def _resolve_kwargs(fun: Callable, sig, args: tuple, kwargs: dict) -> tuple:
    """Keyword arguments of a custom_jvp/custom_vjp function's call put in their positions (defaults filled in), as
    JAX's `resolve_kwargs`: the rules take positional arguments only."""
    if sig is None or (not kwargs and not sig[1]):  # (no defaults to fill in: the call as it is)
        return args
    try:
        bound = sig[0].bind(*args, **kwargs)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{getattr(fun, '__name__', 'fun')}: {e}") from None
    bound.apply_defaults()
    if bound.kwargs:
        raise TypeError(f"keyword arguments {sorted(bound.kwargs)} of {getattr(fun, '__name__', 'fun')} could not be "
                        f"resolved to positions")
    return tuple(bound.args)


def _unflat(args, leaves) -> list:
    """`leaves` put back in the tree of the list `args`."""
    return tree_util.tree_unflatten(tree_util.tree_structure(list(args)), list(leaves))


def _custom_vjp_call_rule(*avals, out_avals, **_):
    return list(out_avals)


custom_vjp_call_p = Primitive("custom_vjp_call", _custom_vjp_call_rule, multiple_results=True)


def _forward_refused(*args, **params):
    raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")


# The forward-mode tangent of a custom_vjp function as a loop's rule traces its body (to learn which values get a
# tangent): an error if it is ever computed, as JAX's.
custom_vjp_forward_p = Primitive("custom_vjp_forward", lambda *avals, out_avals: list(out_avals),
                                 multiple_results=True)
custom_vjp_forward_p.def_impl(_forward_refused)
custom_vjp_forward_p.def_lowering(_forward_refused)
custom_vjp_forward_p.def_jvp(_forward_refused)
custom_vjp_forward_p.def_batch(_forward_refused)


@custom_vjp_call_p.def_impl
def _custom_vjp_forward(*args, **params):
    raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")


@custom_vjp_call_p.def_lowering
def _custom_vjp_forward_lowered(ctx, *args, **params):
    raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")


@custom_vjp_call_p.def_transpose
def _custom_vjp_transpose(cts, *args, bwd, res, out_tree, out_avals, in_tree, in_nz, name):
    r_tree, fixed = res
    n_res = sum(r is None for r in fixed)
    it = iter(args[:n_res])
    res = tree_util.tree_unflatten(r_tree, [next(it) if r is None else r for r in fixed])
    cts = [_full(a.strip_weak(), 0) if c is None else c for c, a in zip(cts, out_avals)]
    got = _check_bwd(bwd(res, tree_util.tree_unflatten(out_tree, cts)), len(in_tree.kids), name)
    leaves = []
    for i, (g, arg_tree) in enumerate(zip(got, in_tree.kids)):
        try:
            leaves += _bwd_leaves(g, arg_tree)
        except ValueError as e:
            raise TypeError(f"Custom VJP bwd rule of {name} must produce an output with the same container (pytree) "
                            f"structure as the args tuple of the primal function: at output[{i}] it gave "
                            f"{tree_util.tree_structure(g)} for an argument of structure {arg_tree} ({e})") from None
    lin = iter(a.aval for a in args[n_res:])
    out = []
    for k, (c, z) in enumerate(zip(leaves, in_nz)):
        if not z:
            continue
        a = next(lin)
        if c is not None and np.shape(c) != a.shape:
            raise ValueError(f"Custom VJP bwd rule of {name} must produce an output with the same type as the args "
                             f"tuple of the primal function, but at (flat) cotangent {k} it produced an output of "
                             f"shape {np.shape(c)} corresponding to an input of shape {a.shape}, so the shapes do "
                             f"not match")
        out.append(c)
    return [None] * n_res + out


def _bwd_leaves(g, td) -> list:
    """A custom_vjp bwd rule's cotangent `g` for an argument of structure `td`, as a leaf per leaf of `td`: `g` has
    `td`'s structure or a prefix of it; None stands for zeros of a whole subtree, and a leaf standing for a subtree
    is given to each of its leaves (as JAX's)."""
    if g is None:
        return [None] * td.num_leaves
    if td.node_type is None:
        return [g]
    if not tree_util.is_tree_node(g):
        return [g] * td.num_leaves
    children, aux = tree_util.flatten_one_level(g)
    if type(g) is not td.node_type or len(children) != len(td.kids) or aux != td.aux:
        raise ValueError(f"a {type(g).__name__} node where the argument has {td}")
    return [x for c, t in zip(children, td.kids) for x in _bwd_leaves(c, t)]


def _check_bwd(got, n: int, name: str):
    if isinstance(got, list) and len(got) == n:  # (JAX takes a list of the right length as the tuple)
        got = tuple(got)
    if not isinstance(got, tuple) or len(got) != n:
        raise TypeError(f"Custom VJP bwd rule of {name} must produce a tuple with one cotangent per (non-static) "
                        f"argument ({n}), got {type(got).__name__}"
                        + (f" of length {len(got)}" if isinstance(got, tuple) else ""))
    return got


class custom_vjp:
    """A function with its own reverse-mode rule: `f.defvjp(fwd, bwd)`, `fwd(*args) -> (out, residuals)` and
    `bwd(residuals, ct) -> tuple of cotangents, one per argument`."""

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        self._primal_fun, self._nondiff = fun, tuple(nondiff_argnums)
        self._sig = _signature(fun)
        self._fwd: Callable | None = None
        self._bwd: Callable | None = None
        functools.update_wrapper(self, fun)

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False,
               optimize_remat: bool = False) -> None:
        if symbolic_zeros:
            raise NotImplementedError("custom_vjp.defvjp(symbolic_zeros=True) is not supported by stagec: fwd gets "
                                      "plain arrays (no CustomVJPPrimal) and bwd's None cotangents mean zeros")
        self._fwd, self._bwd = fwd, bwd

    def __call__(self, *args, **kwargs):
        return self._apply(_resolve_kwargs(self._primal_fun, self._sig, args, kwargs))

    def _apply(self, args, forward: bool = False):
        """The call; with `forward`, tangents that are not linear are let through (to a `custom_vjp_call` that raises
        JAX's error if it is computed, not only traced: a loop's rule probes its body with such tangents)."""
        if self._fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {self.__name__} using defvjp.")
        btrace, vals, dims = _batch_over_jvp(args)
        if btrace is not None:
            return _wrap_batched(btrace, self._batched(btrace.size, args, vals, dims)(*_unflat(args, vals)))
        trace, p_leaves, tangents, tree = _split_diff_args(args, self._nondiff)
        if trace is None:
            return _primal_call(self, args)
        if not forward and any(t is not None and not _ad.is_linear(t) for t in tangents):
            raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")
        primals = _rebuild(args, self._nondiff, tree_util.tree_unflatten(tree, p_leaves))
        if forward and any(t is not None and not _ad.is_linear(t) for t in tangents):
            out = self._primal_fun(*primals)
            o_leaves, o_tree = tree_util.tree_flatten(out)
            touts = custom_vjp_forward_p.bind(*[t for t in tangents if t is not None],
                                              out_avals=tuple(aval_of(o).strip_weak() for o in o_leaves))
            return tree_util.tree_unflatten(o_tree, [trace.wrap(o, t) for o, t in zip(o_leaves, touts)])
        out, res = self._fwd(*primals)
        o_leaves, o_tree = tree_util.tree_flatten(out)
        nondiff = [args[i] for i in self._nondiff]
        bwd = functools.partial(self._bwd, *nondiff) if nondiff else self._bwd
        lin_in = [t for t in tangents if t is not None]
        if not lin_in:
            return out
        # (the residuals' arrays are operands: a rule recorded in a branch or loop body reads them as the body's
        # values, not as tracers of a trace that has ended)
        r_leaves, r_tree = tree_util.tree_flatten(res)
        r_arr = tuple(isinstance(r, Tracer) for r in r_leaves)
        touts = custom_vjp_call_p.bind(*[r for r, a in zip(r_leaves, r_arr) if a], *lin_in, bwd=bwd,
                                       res=(r_tree, tuple(None if a else r for r, a in zip(r_leaves, r_arr))),
                                       out_tree=o_tree,
                                       out_avals=tuple(aval_of(o) for o in o_leaves), in_tree=tree,
                                       in_nz=tuple(t is not None for t in tangents), name=self.__name__)
        return tree_util.tree_unflatten(o_tree, [trace.wrap(o, t) for o, t in zip(o_leaves, touts)])

    def _batched(self, size: int, args, vals, dims) -> custom_vjp:
        """This function mapped over the batch axes `dims` of the leaves of `args`, outputs and residuals
        batched on axis 0. The mapped bwd rule returns each cotangent on its argument's batch axis, summed
        over the batch for an argument shared by every example."""
        axes = tuple(_unflat(args, dims))
        nd_axes = tuple(axes[i] for i in self._nondiff)
        diff = [i for i in range(len(args)) if i not in self._nondiff]
        ex = _unflat(args, [aval_of(v).update(shape=example_shape(v, d)) if d is not None else aval_of(v)
                            for v, d in zip(vals, dims)])
        name, bwd = self.__name__, self._bwd

        def one(*a):
            got = _check_bwd(bwd(*a), len(diff), name)
            return tuple(tree_util.tree_map(lambda av: _full(av.strip_weak(), 0), ex[i]) if g is None else g
                         for g, i in zip(got, diff))
        mapped = vmap(one, in_axes=nd_axes + (0, 0), axis_size=size)

        def batched_bwd(*a):
            got = mapped(*a)
            place = lambda d, g: reduce_sum(g, (0,)) if d is None else moveaxis(g, 0, d)
            return tuple(tree_util.tree_map(place, axes[i], g, is_leaf=lambda x: x is None)
                         for g, i in zip(got, diff))
        out = custom_vjp(vmap(self._primal_fun, in_axes=axes, axis_size=size), self._nondiff)
        out.defvjp(vmap(self._fwd, in_axes=axes, axis_size=size), batched_bwd)
        return out


# ---------------------------------------------------------------- checkpoint (remat)


class _RematPrimitive(Primitive):
    """The linear part of a checkpointed function in reverse mode: operands are its primal inputs (read again by
    the transpose, which recomputes the function's residuals from them: nothing of its inside is stored) and its
    input tangents. Only a `LinTrace` records it; anywhere else (a recorded linear graph run forward, under
    vmap or jit) it is the function's JVP, computed at once."""

    def bind(self, *args, **params):
        if isinstance(find_top_trace(args), LinTrace):
            return super().bind(*args, **params)
        n = params["n_primals"]
        primals, tans = list(args[:n]), iter(args[n:])
        tangents = [next(tans) if z else _full(aval_of(p).strip_weak(), 0)
                    for p, z in zip(primals, params["in_nz"])]
        _, touts = jvp(params["fun"], primals, tangents)
        return [t for t, z in zip(tree_util.tree_leaves(touts), params["out_nz"]) if z]


remat_p = _RematPrimitive("remat", lambda *avals, out_avals, **_: list(out_avals), multiple_results=True)


@remat_p.def_transpose
def _remat_transpose(cts, *args, fun, n_primals, in_nz, out_nz, out_avals):
    lz = _Linearized(fun, list(args[:n_primals]), who="checkpoint")  # the recomputation
    it = iter(cts)
    got = lz.backward([next(it) if z else None for z in out_nz])
    return [None] * n_primals + [g for g, z in zip(got, in_nz) if z]


def checkpoint(fun: Callable, *, prevent_cse: bool = True, policy: Callable | None = None,
               static_argnums: int | Sequence[int] = ()) -> Callable:
    """`fun`, whose intermediate values reverse mode recomputes from its inputs in the backward pass instead of
    storing them (JAX's `checkpoint`/`remat`): the same values and derivatives, less memory between the passes.
    `policy` (which values to keep) is accepted and not applied: every value is recomputed. Where IREE finds the
    recomputation equal to the forward pass it may share them (`prevent_cse` is not applied either)."""
    static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        static_here = {i % len(args) for i in static if -len(args) <= i < len(args)}  # (negative ones counted back)
        # Python numbers among the dynamic arguments as (weakly typed) arrays, as JAX's trace makes them: its outputs
        # are arrays (checkpoint(lambda x: x * 2)(1.0) was the Python float 2.0)
        args = tuple(a if i in static_here else _scalars_as_arrays(a) for i, a in enumerate(args))
        kwargs = {k: _scalars_as_arrays(v) for k, v in kwargs.items()}
        dyn = [a for i, a in enumerate(args) if i not in static_here]
        leaves, tree = tree_util.tree_flatten((dyn, kwargs))
        trace = _top_jvp_trace(leaves)
        if trace is None:
            return fun(*args, **kwargs)
        split = [trace.split(x) for x in leaves]
        tangents = [t for _, t in split]
        if not any(t is not None and _ad.is_linear(t) for t in tangents):
            return fun(*args, **kwargs)  # forward mode: nothing is kept for a later pass

        def flat(*xs):
            d, kw = tree_util.tree_unflatten(tree, list(xs))
            it = iter(d)
            return fun(*[a if i in static_here else next(it) for i, a in enumerate(args)], **kw)
        # The values `fun` closes over (tracers of this or other traces, arrays) become inputs of their own, so that
        # their tangents reach the rule and the recomputation reads them as operands (as JAX's closure conversion).
        graph, caps, o_tree = trace_subgraph(flat, [aval_of(p) for p, _ in split], "checkpoint")
        if caps:
            leaves = leaves + caps
            trace = _top_jvp_trace(leaves)
            split = [trace.split(x) for x in leaves]
            tangents = [t for _, t in split]
            if not any(t is not None and _ad.is_linear(t) for t in tangents):
                return fun(*args, **kwargs)
        primals = [p for p, _ in split]

        def closed(*xs):
            return eval_graph(graph, list(xs))
        # (an output the graph has as a constant comes back as a `Const`: a computed array instead, as `_full`'s)
        o_leaves = [broadcast_in_dim_p.bind(o, shape=o.aval.shape, broadcast_dimensions=tuple(range(o.aval.ndim)))
                    if isinstance(o, Const) else o for o in closed(*primals)]
        out_nz = tuple(differentiable(aval_of(o)) for o in o_leaves)
        in_nz = tuple(t is not None for t in tangents)
        touts = iter(remat_p.bind(*primals, *[t for t in tangents if t is not None], fun=closed, n_primals=len(primals),
                                  in_nz=in_nz, out_nz=out_nz,
                                  out_avals=tuple(aval_of(o).strip_weak() for o, z in zip(o_leaves, out_nz) if z)))
        return tree_util.tree_unflatten(o_tree, [trace.wrap(o, next(touts) if z else None)
                                                 for o, z in zip(o_leaves, out_nz)])
    return wrapped


remat = checkpoint


def _scalars_as_arrays(tree):
    return tree_util.tree_map(lambda x: _full(aval_of(x), x) if type(x) in (bool, int, float, complex) else x, tree)


# ---------------------------------------------------------------- control flow rules


class _Proto:
    """An abstract argument for `trace_subgraph`."""

    def __init__(self, aval: ShapedArray):
        self.aval = aval


def _protos(avals) -> list:
    return [_Proto(a.update()) for a in avals]


def _split_linear(fn: Callable, avals: Sequence[ShapedArray], nz: Sequence[bool], purpose: str):
    """Partially evaluate `fn` (on arrays of `avals`; tangents where `nz`): a primal graph (args -> outs +
    residuals) and a linear graph (residuals + tangents -> a tangent per differentiable output)."""
    box = {}

    def primal(*xs):
        lin = LinTrace()
        with tracing(lin):
            jt = JVPTrace()
            with tracing(jt):
                tin = [lin.new_input(a) if z else None for a, z in zip(avals, nz)]
                outs = fn(*[jt.wrap(x, t) for x, t in zip(xs, tin)])
        pairs = [jt.split(o) for o in outs]
        out_avals = [aval_of(p) for p, _ in pairs]
        t_out = [t if differentiable(a) else None for (_, t), a in zip(pairs, out_avals)]
        graph, residuals, _ = lin.to_graph(tin, [t for t, a in zip(t_out, out_avals) if differentiable(a)],
                                           [a for a in out_avals if differentiable(a)], instantiate=True)
        box["lin"], box["n_res"] = graph, len(residuals)
        return [p for p, _ in pairs] + residuals

    pgraph, caps, _ = trace_subgraph(primal, _protos(avals), purpose)
    if caps:
        raise NotImplementedError(f"differentiating {purpose}: the body captured values it was not given")
    return pgraph, box["lin"], box["n_res"]


@cond_p.def_jvp
def _cond_jvp(primals, tangents, *, branches, n_ops):
    index, args, t_args = primals[0], list(primals[1:]), list(tangents[1:])
    caps = args[n_ops:]
    splits = _split_caps(branches, n_ops, caps)
    starts = np.cumsum([0] + [len(s) for s in splits])
    avals = [aval_of(a) for a in args]
    nz = [t is not None for t in t_args]
    parts = []
    for k, g in enumerate(branches):
        fn = (lambda g, lo, hi: lambda *a: eval_graph(g, list(a[:n_ops]) + list(a[n_ops + lo:n_ops + hi])))(
            g, starts[k], starts[k + 1])
        parts.append(_split_linear(fn, avals, nz, "cond"))
    n_out = len(branches[0].outs)
    res_avals = [p.out_avals[n_out:] for p, _, _ in parts]
    all_res = [a for r in res_avals for a in r]
    offsets = np.cumsum([0] + [len(r) for r in res_avals])

    def primal_branch(k):
        def f(*a):
            outs = eval_graph(parts[k][0], list(a))
            res = []
            for j, r in enumerate(res_avals):
                res += outs[n_out:] if j == k else [_full(x, 0) for x in r]
            return outs[:n_out] + res
        return f

    def linear_branch(k):
        return lambda *a: eval_graph(parts[k][1], list(a[offsets[k]:offsets[k + 1]]) + list(a[len(all_res):]))

    p_graphs = [trace_subgraph(primal_branch(k), _protos(avals), "cond")[0] for k in range(len(branches))]
    outs = cond_p.bind(index, *args, branches=tuple(p_graphs), n_ops=len(args))
    res = outs[n_out:]
    t_in = [t for t in t_args if t is not None]
    l_avals = all_res + [aval_of(t) for t in t_in]
    l_graphs = [trace_subgraph(linear_branch(k), _protos(l_avals), "cond")[0] for k in range(len(branches))]
    touts = iter(cond_p.bind(index, *res, *t_in, branches=tuple(l_graphs), n_ops=len(l_avals)))
    out_avals = [aval_of(o) for o in outs[:n_out]]
    return outs[:n_out], [next(touts) if differentiable(a) else None for a in out_avals]


@cond_p.def_transpose
def _cond_transpose(cts, index, *args, branches, n_ops):
    if is_undefined(index) or n_ops != len(args):
        raise NotImplementedError("transposing a cond that is not linear in its operands")
    lin = [is_undefined(a) for a in args]
    consts = [a for a in args if not is_undefined(a)]
    out_avals = branches[0].out_avals
    cts = [_full(a.strip_weak(), 0) if c is None else c for c, a in zip(cts, out_avals)]
    lin_avals = [a.aval for a in args if is_undefined(a)]

    def t_branch(g):
        def f(*a):
            it_c, it_l = iter(a[:len(consts)]), iter(lin_avals)
            full = [UndefinedPrimal(next(it_l)) if z else next(it_c) for z in lin]
            got = backward_pass(g, full, list(a[len(consts):]))
            return [(_full(av.strip_weak(), 0) if c is None else c)
                    for c, av, z in zip(got, g.in_avals, lin) if z]
        return f

    avals = [aval_of(c) for c in consts] + [aval_of(c) for c in cts]
    graphs = tuple(trace_subgraph(t_branch(g), _protos(avals), "cond")[0] for g in branches)
    got = iter(cond_p.bind(index, *consts, *cts, branches=graphs, n_ops=len(avals)))
    return [None] + [next(got) if z else None for z in lin]


@while_p.def_jvp
def _while_jvp(primals, tangents, *, cond_graph, body_graph, n_carry, n_cond_caps):
    carry, ccaps, bcaps = (primals[:n_carry], primals[n_carry:n_carry + n_cond_caps],
                           primals[n_carry + n_cond_caps:])
    t_carry, t_bcaps = tangents[:n_carry], tangents[n_carry + n_cond_caps:]
    c_avals = [aval_of(c) for c in carry]
    b_avals = [aval_of(b) for b in bcaps]
    nz_b = [t is not None for t in t_bcaps]
    nz_c = [t is not None for t in t_carry]
    while True:  # the carries with a tangent: a fixed point (a tangent entering the body may reach others)
        def probe(*a):
            n, nb = n_carry, len(bcaps)
            ins = list(a)
            prim = ins[:n] + ins[2 * n:2 * n + nb]
            tans = [ins[n + i] if z else None for i, z in enumerate(nz_c)]
            tans += [ins[2 * n + nb + j] if z else None for j, z in enumerate(nz_b)]
            jt = JVPTrace()
            with tracing(jt):
                outs = eval_graph(body_graph, [jt.wrap(p, t) for p, t in zip(prim, tans)])
            box[0] = [jt.split(o)[1] is not None for o in outs]
            return [jt.split(o)[0] for o in outs]
        box = {}
        trace_subgraph(probe, _protos(c_avals + c_avals + b_avals + b_avals), "while_loop body")
        new = [a or b for a, b in zip(nz_c, box[0])]
        if new == nz_c:
            break
        nz_c = new
    tc_avals = [a.strip_weak() for a, z in zip(c_avals, nz_c) if z]
    tb = [t for t in t_bcaps if t is not None]

    def body(*a):
        a = list(a)
        n_t = len(tc_avals)
        cs, tcs = a[:n_carry], a[n_carry:n_carry + n_t]
        bs, tbs = a[n_carry + n_t:n_carry + n_t + len(bcaps)], a[n_carry + n_t + len(bcaps):]
        jt = JVPTrace()
        with tracing(jt):
            it_c, it_b = iter(tcs), iter(tbs)
            ins = [jt.wrap(p, next(it_c) if z else None) for p, z in zip(cs, nz_c)]
            ins += [jt.wrap(p, next(it_b) if z else None) for p, z in zip(bs, nz_b)]
            outs = eval_graph(body_graph, ins)
        pairs = [jt.split(o) for o in outs]
        t_outs = [_full(av, 0) if t is None else t for (p, t), av, z in zip(pairs, c_avals, nz_c) if z]
        return [p for p, _ in pairs] + t_outs

    def cond(*a):
        return eval_graph(cond_graph, list(a[:n_carry]) + list(a[n_carry + len(tc_avals):]))

    tcs = [_full(av.strip_weak(), 0) if t is None else t for t, av, z in zip(t_carry, c_avals, nz_c) if z]
    b_graph, b_caps, _ = trace_subgraph(body, _protos(c_avals + tc_avals + b_avals + [aval_of(t) for t in tb]),
                                        "while_loop body")
    c_graph, c_caps, _ = trace_subgraph(cond, _protos(c_avals + tc_avals + [aval_of(c) for c in ccaps]),
                                        "while_loop cond")
    if b_caps or c_caps:
        raise NotImplementedError("differentiating while_loop: the body captured values it was not given")
    outs = while_p.bind(*carry, *tcs, *ccaps, *bcaps, *tb, cond_graph=c_graph, body_graph=b_graph,
                        n_carry=n_carry + len(tcs), n_cond_caps=len(ccaps))
    prim_outs = outs[:n_carry]
    if any(_ad.is_linear(o) for o in prim_outs):  # recorded for reverse mode: compute the values apart
        prim_outs = while_p.bind(*primals, cond_graph=cond_graph, body_graph=body_graph, n_carry=n_carry,
                                 n_cond_caps=n_cond_caps)
    it = iter(outs[n_carry:])
    return list(prim_outs), [next(it) if z else None for z in nz_c]


@while_p.def_transpose
def _while_transpose(*args, **params):
    raise ValueError("Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with dynamic "
                     "start/stop values. Try using lax.scan, or using fori_loop with static start/stop.")


# ---------------------------------------------------------------- scan: forward as one loop, reverse as two


def _nonzero_outs(graph: Graph, nz: Sequence[bool]) -> list[bool]:
    """Which outputs of `graph` get a tangent when the inputs marked in `nz` have one (probed by tracing)."""
    box = []

    def probe(*a):
        jt = JVPTrace()
        with tracing(jt):
            outs = eval_graph(graph, [jt.wrap(x, _full(aval_of(x).strip_weak(), 0) if z else None)
                                      for x, z in zip(a, nz)])
        box[:] = [jt.split(o)[1] is not None for o in outs]
        return [jt.split(o)[0] for o in outs]
    trace_subgraph(probe, _protos(graph.in_avals), "scan")
    return box


def _scan_carry_nz(body: Graph, n_carry: int, nz_carry, nz_rest) -> list[bool]:
    """The carries with a tangent: a fixed point (a tangent entering the body may reach other carries)."""
    nz_carry = list(nz_carry)
    while True:
        new = [a or b for a, b in zip(nz_carry, _nonzero_outs(body, nz_carry + list(nz_rest))[:n_carry])]
        if new == nz_carry:
            return nz_carry
        nz_carry = new


def _split3(xs, n_carry, n_xs):
    return list(xs[:n_carry]), list(xs[n_carry:n_carry + n_xs]), list(xs[n_carry + n_xs:])


@scan_p.def_jvp
def _scan_jvp(primals, tangents, *, body, length, reverse, n_carry, n_xs):
    nz = [t is not None for t in tangents]
    nz_c = _scan_carry_nz(body, n_carry, nz[:n_carry], nz[n_carry:])
    nz = nz_c + nz[n_carry:]
    tangents = [(_full(aval_of(p).strip_weak(), 0) if t is None else t) if z else None
                for p, t, z in zip(primals, tangents, nz)]
    if any(_ad.is_linear(t) for t in tangents if t is not None):
        return _scan_linearized(primals, tangents, nz, body, length, reverse, n_carry, n_xs)
    return _scan_forward(primals, tangents, nz, body, length, reverse, n_carry, n_xs)


def _scan_forward(primals, tangents, nz, body, length, reverse, n_carry, n_xs):
    """Forward mode: one scan carrying primals and tangents together (carry, then carry tangents; likewise xs
    and consts); it returns the ys, then the tangents of the differentiable ys."""
    groups = list(zip(_split3(primals, n_carry, n_xs), _split3(tangents, n_carry, n_xs), _split3(nz, n_carry, n_xs)))
    ops = [vals + [t for t in ts if t is not None] for vals, ts, _ in groups]
    zc = groups[0][2]
    y_nz = [differentiable(a) for a in body.out_avals[n_carry:]]

    def step(*a):
        a, ins = list(a), []
        jt = JVPTrace()
        with tracing(jt):
            for (vals, _, zs), grp in zip(groups, ops):
                mine, a = a[:len(grp)], a[len(grp):]
                ts = iter(mine[len(vals):])
                ins += [jt.wrap(p, next(ts) if z else None) for p, z in zip(mine[:len(vals)], zs)]
            outs = eval_graph(body, ins)
        pairs = [jt.split(o) for o in outs]
        ps = [p for p, _ in pairs]
        ts = [_full(aval_of(p).strip_weak(), 0) if t is None else t for p, t in pairs]
        return (ps[:n_carry] + [t for t, z in zip(ts[:n_carry], zc) if z] + ps[n_carry:]
                + [t for t, z in zip(ts[n_carry:], y_nz) if z])

    avals = [aval_of(v) for v in ops[0]] + [_row(v) for v in ops[1]] + [aval_of(v) for v in ops[2]]
    g = _closed_subgraph(step, avals)
    outs = scan_p.bind(*ops[0], *ops[1], *ops[2], body=g, length=length, reverse=reverse, n_carry=len(ops[0]),
                       n_xs=len(ops[1]))
    n_tc, n_y = sum(zc), len(y_nz)
    t_c, t_y = iter(outs[n_carry:n_carry + n_tc]), iter(outs[n_carry + n_tc + n_y:])
    return (outs[:n_carry] + outs[n_carry + n_tc:n_carry + n_tc + n_y],
            [next(t_c) if z else None for z in zc] + [next(t_y) if z else None for z in y_nz])


def _row(x) -> ShapedArray:
    """The aval of one element of stacked `x` (one iteration's slice)."""
    a = x.aval if is_undefined(x) else aval_of(x)
    return a.update(shape=a.shape[1:])


def _closed_subgraph(fn: Callable, avals) -> Graph:
    g, caps, _ = trace_subgraph(fn, _protos(avals), "scan")
    if caps:
        raise NotImplementedError("differentiating scan: the body captured values it was not given")
    return g


def _prune(graph: Graph, keep: Sequence[int]) -> Graph:
    """`graph` with only the outputs `keep` and the equations they need."""
    outs = [graph.outs[i] for i in keep]
    live = {o.id for o in outs if isinstance(o, Var)}
    eqns = []
    for e in reversed(graph.eqns):
        if any(o.id in live for o in e.outputs):
            eqns.append(e)
            live.update(i.id for i in e.inputs if isinstance(i, Var))
    return Graph(graph.in_vars, eqns[::-1], outs, graph.name)


def _invariant(graph: Graph, varying: Sequence[bool]) -> set[int]:
    """Ids of the variables of `graph` that do not depend on the inputs marked `varying`."""
    var = {v.id for v, z in zip(graph.in_vars, varying) if z}
    for e in graph.eqns:
        if any(isinstance(i, Var) and i.id in var for i in e.inputs):
            var.update(o.id for o in e.outputs)
    known = {v.id for v in graph.in_vars} | {o.id for e in graph.eqns for o in e.outputs}
    return known - var


def _scan_linearized(primals, tangents, nz, body, length, reverse, n_carry, n_xs):
    """Reverse mode: a primal scan that also stacks the residuals its linear part needs, then a scan of the
    linear part alone (recorded, so that it can be transposed). Residuals that do not change between
    iterations (the constants and what only they determine) are computed once, outside the loop; residuals
    that are the xs themselves are read from the xs."""
    c, x, k = _split3(primals, n_carry, n_xs)
    b_avals = [aval_of(v) for v in c] + [_row(v) for v in x] + [aval_of(v) for v in k]
    pgraph, lin, _ = _split_linear(lambda *a: eval_graph(body, list(a)), b_avals, nz, "scan")
    n_out = len(body.outs)
    x_pos = {v.id: j for j, v in enumerate(pgraph.in_vars[n_carry:n_carry + n_xs])}
    inv_ids = _invariant(pgraph, [i < n_carry + n_xs for i in range(len(b_avals))])
    src = []  # per residual: ("inv", j) computed once, ("x", j) the j-th xs, ("stack", j) stacked by the scan
    n_inv = n_stack = 0
    for r in pgraph.outs[n_out:]:
        if isinstance(r, Literal) or r.id in inv_ids:
            src.append(("inv", n_inv)); n_inv += 1
        elif r.id in x_pos:
            src.append(("x", x_pos[r.id]))
        else:
            src.append(("stack", n_stack)); n_stack += 1
    inv_vals = eval_graph(_prune(pgraph, [n_out + j for j, (s, _) in enumerate(src) if s == "inv"]),
                          c + [None] * n_xs + k) if n_inv else []
    p_graph = _prune(pgraph, list(range(n_out)) + [n_out + j for j, (s, _) in enumerate(src) if s == "stack"])
    outs = scan_p.bind(*primals, body=p_graph, length=length, reverse=reverse, n_carry=n_carry, n_xs=n_xs)
    p_outs, stacked = outs[:n_out], outs[n_out:]
    # the linear scan: carry = carry tangents; xs = stacked residuals, x tangents; consts = invariant residuals,
    # constant tangents
    tc, tx, tk = _split3(tangents, n_carry, n_xs)
    lin_c, lin_x, lin_k = ([t for t in ts if t is not None] for ts in (tc, tx, tk))
    res_x = stacked + list(x)
    out_diff = [differentiable(a) for a in body.out_avals]
    n_cd = sum(out_diff[:n_carry])
    keep_c = [z for z, d in zip(nz[:n_carry], out_diff[:n_carry]) if d]  # lin's carry outputs that are carried
    sizes = [len(lin_c), len(res_x), len(lin_x), len(inv_vals), len(lin_k)]

    def lin_body(*a):
        tcs, rx, txs, rk, tks = _chunks(a, sizes)
        res = [rk[j] if s == "inv" else rx[j] if s == "stack" else rx[len(stacked) + j] for s, j in src]
        t_outs = eval_graph(lin, res + tcs + txs + tks)
        return [t for t, z in zip(t_outs[:n_cd], keep_c) if z] + t_outs[n_cd:]

    l_avals = ([aval_of(t) for t in lin_c] + [_row(r) for r in res_x] + [_row(t) for t in lin_x]
               + [aval_of(r) for r in inv_vals] + [aval_of(t) for t in lin_k])
    l_graph = _closed_subgraph(lin_body, l_avals)
    touts = scan_p.bind(*lin_c, *res_x, *lin_x, *inv_vals, *lin_k, body=l_graph, length=length, reverse=reverse,
                        n_carry=len(lin_c), n_xs=len(res_x) + len(lin_x))
    t_c, t_y = iter(touts[:len(lin_c)]), iter(touts[len(lin_c):])
    tan_c = [next(t_c) if z and d else None for z, d in zip(nz[:n_carry], out_diff[:n_carry])]
    return p_outs, tan_c + [next(t_y) if d else None for d in out_diff[n_carry:]]


@scan_p.def_transpose
def _scan_transpose(cts, *args, body, length, reverse, n_carry, n_xs):
    """The transpose of a linear scan: a scan the other way, carrying the carry cotangents and the sums of the
    constants' cotangents, and stacking the xs' cotangents."""
    c, x, k = _split3(args, n_carry, n_xs)
    lin_x, lin_k = [is_undefined(v) for v in x], [is_undefined(v) for v in k]
    vx, vk = [v for v in x if not is_undefined(v)], [v for v in k if not is_undefined(v)]
    out_avals = [a.strip_weak() for a in scan_p.out_avals([_aval_arg(a) for a in args], dict(
        body=body, length=length, reverse=reverse, n_carry=n_carry, n_xs=n_xs))]
    cts = [_full(a, 0) if ct is None else ct for ct, a in zip(cts, out_avals)]
    ct_c, ct_y = cts[:n_carry], cts[n_carry:]
    c_avals = [a.strip_weak() for a in body.in_avals[:n_carry]]
    k_avals = [a.strip_weak() for a, z in zip(body.in_avals[n_carry + n_xs:], lin_k) if z]
    acc0 = [_full(a, 0) for a in k_avals]

    in_c, in_x, in_k = _split3(body.in_avals, n_carry, n_xs)
    inst = lambda g, av: _full(av.strip_weak(), 0) if g is None else g

    def t_body(*a):
        cc, acc, xs_v, cys, ks = _chunks(a, [n_carry, len(acc0), len(vx), len(ct_y), len(vk)])
        it_x, it_k = iter(xs_v), iter(ks)
        full = ([UndefinedPrimal(av) for av in in_c]
                + [UndefinedPrimal(av) if z else next(it_x) for av, z in zip(in_x, lin_x)]
                + [UndefinedPrimal(av) if z else next(it_k) for av, z in zip(in_k, lin_k)])
        g_c, g_x, g_k = _split3(backward_pass(body, full, cc + cys), n_carry, n_xs)
        return ([inst(g, av) for g, av in zip(g_c, in_c)]
                + [add_tangents(s, inst(g, av)) for s, g, av in zip(acc, [g for g, z in zip(g_k, lin_k) if z],
                                                                  [av for av, z in zip(in_k, lin_k) if z])]
                + [inst(g, av) for g, av, z in zip(g_x, in_x, lin_x) if z])

    avals = c_avals + k_avals + [_row(v) for v in vx] + [_row(v) for v in ct_y] + [aval_of(v) for v in vk]
    g = _closed_subgraph(t_body, avals)
    outs = scan_p.bind(*ct_c, *acc0, *vx, *ct_y, *vk, body=g, length=length, reverse=not reverse,
                       n_carry=n_carry + len(acc0), n_xs=len(vx) + len(ct_y))
    ct_carry, ct_k, ct_x = _chunks(outs, [n_carry, len(acc0), len(outs) - n_carry - len(acc0)])
    ct_k, ct_x = iter(ct_k), iter(ct_x)
    return ct_carry + [next(ct_x) if z else None for z in lin_x] + [next(ct_k) if z else None for z in lin_k]


def _aval_arg(a) -> ShapedArray:
    return a.aval if is_undefined(a) else aval_of(a)


def _chunks(xs, sizes) -> list[list]:
    """`xs` cut into consecutive lists of the given sizes."""
    out, i = [], 0
    for n in sizes:
        out.append(list(xs[i:i + n]))
        i += n
    return out
