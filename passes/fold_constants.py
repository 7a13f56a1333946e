"""`fold-constants`: evaluate small constant subgraphs with NumPy, under each op's exact dtype.

An op whose operands are all constants is replaced by a constant when its result has at most
`MAX_ELEMENTS` elements, or when every operand is a splat (then only one element is computed).
NumPy computes float32 in float32 and wraps integers as StableHLO does. Numerics: transcendental
functions (exp, log, sin, ...) come from NumPy's libm rather than IREE's polynomial approximations,
so a folded value may differ from the compiled one by an ulp or two. Integer division or remainder
by zero (and INT_MIN / -1), and float-to-int converts out of range, are left to run unfolded.
"""
from __future__ import annotations

import numpy as np
from iree.compiler import ir

from .base import PatternPass, register
from .irutil import constant_value, dtype_of, make_constant, op_name, tensor_type

MAX_ELEMENTS = 1024

_UNARY = {
    "negate": np.negative, "abs": np.abs, "exponential": np.exp, "exponential_minus_one": np.expm1,
    "log": np.log, "log_plus_one": np.log1p, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
    "sine": np.sin, "cosine": np.cos, "tan": np.tan, "tanh": np.tanh, "floor": np.floor, "ceil": np.ceil,
    "sign": lambda x: np.where(x == 0, x, np.sign(x)),  # keeps -0.0, as StableHLO does
    "round_nearest_even": np.rint, "is_finite": np.isfinite, "cbrt": np.cbrt,
    "logistic": lambda x: 1 / (1 + np.exp(-x)),
    "not": lambda x: np.logical_not(x) if x.dtype == np.bool_ else np.invert(x),
}
_BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "maximum": np.maximum,
    "minimum": np.minimum, "power": np.power, "and": np.bitwise_and, "or": np.bitwise_or,
    "xor": np.bitwise_xor, "atan2": np.arctan2,
}
_COMPARE = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal, "GT": np.greater,
            "GE": np.greater_equal}


def _int_div(a: np.ndarray, b: np.ndarray, want_rem: bool):
    """StableHLO integer divide/remainder (truncating toward zero), or None where it is undefined."""
    if (b == 0).any():
        return None
    if a.dtype.kind == "i" and ((a == np.iinfo(a.dtype).min) & (b == -1)).any():
        return None
    q = a // b
    q = q + ((a % b != 0) & ((a < 0) != (b < 0))).astype(a.dtype)
    return a - b * q if want_rem else q


def _shift(name: str, x: np.ndarray, s: np.ndarray) -> np.ndarray:
    """StableHLO's shifts: an amount past the width (read unsigned) gives 0, or the sign for an arithmetic one."""
    bits = x.dtype.itemsize * 8
    u = np.dtype(f"u{x.dtype.itemsize}")
    amount = s.astype(u)
    over = amount >= bits
    a = np.where(over, 0, amount).astype(u)
    if name == "shift_left":
        return np.where(over, 0, (x.astype(u) << a).astype(x.dtype))
    if name == "shift_right_logical":
        return np.where(over, 0, (x.astype(u) >> a).astype(x.dtype))
    return np.where(over, np.where(x < 0, -1, 0).astype(x.dtype), x >> a)


def _clz(x: np.ndarray) -> np.ndarray:
    bits = x.dtype.itemsize * 8
    u = x.astype(np.dtype(f"u{x.dtype.itemsize}")).astype(np.uint64)
    n = np.zeros(u.shape, np.int64)
    for b in range(bits):  # (the index of the highest set bit + 1)
        n = np.where(u >> np.uint64(b) != 0, b + 1, n)
    return (bits - n).astype(x.dtype)


def evaluate(op, args: list[np.ndarray], out_shape: tuple, out_dtype: np.dtype):
    """The value of `op` on constant `args` as a NumPy array of `out_dtype`, or None if not foldable."""
    name = op_name(op)
    dt = args[0].dtype if args else out_dtype
    if name in _UNARY:
        if name in ("exponential", "log", "sqrt", "rsqrt", "logistic") and dt.kind not in "fc":
            return None
        r = _UNARY[name](args[0])
    elif name in _BINARY:
        if name == "power" and dt.kind != "f":
            return None
        r = _BINARY[name](args[0], args[1])
    elif name in ("divide", "remainder"):
        if dt.kind in "iu":
            r = _int_div(args[0], args[1], name == "remainder")
        else:
            r = np.divide(args[0], args[1]) if name == "divide" else np.fmod(args[0], args[1])
    elif name in _INT_BITS:
        if dt.kind not in "iu":
            return None
        if name == "popcnt":
            r = np.bitwise_count(args[0]).astype(dt)
        elif name == "count_leading_zeros":
            r = _clz(args[0])
        else:
            r = _shift(name, args[0], args[1])
    elif name == "clamp":  # (StableHLO's operand order: min, x, max)
        r = np.minimum(np.maximum(args[1], args[0]), args[2])
    elif name == "compare":
        direction = str(op.attributes["comparison_direction"]).split()[-1].rstrip(">")
        r = _COMPARE[direction](args[0], args[1])
    elif name == "select":
        r = np.where(args[0], args[1], args[2])
    elif name == "convert":
        x = args[0]
        if out_dtype.kind in "iu" and x.dtype.kind in "fc":
            info = np.iinfo(out_dtype)
            if not (np.isfinite(x) & (x >= info.min) & (x <= info.max)).all():
                return None
        if out_dtype == np.bool_:
            return None
        r = x.real if x.dtype.kind == "c" and out_dtype.kind != "c" else x
    elif name == "bitcast_convert":
        x = args[0]
        if x.dtype.itemsize != out_dtype.itemsize or x.dtype == np.bool_ or out_dtype == np.bool_:
            return None
        r = x.view(out_dtype)
    elif name == "broadcast_in_dim":
        dims = list(ir.DenseI64ArrayAttr(op.attributes["broadcast_dimensions"]))
        x = args[0]
        shape = [1] * len(out_shape)
        for i, d in enumerate(dims):
            shape[d] = x.shape[i]
        r = np.broadcast_to(x.reshape(shape), out_shape)
    elif name == "reshape":
        r = args[0].reshape(out_shape)
    elif name == "transpose":
        r = np.transpose(args[0], list(ir.DenseI64ArrayAttr(op.attributes["permutation"])))
    else:
        return None
    return None if r is None else np.asarray(r).astype(out_dtype, copy=False)


_SHAPE_OPS = {"broadcast_in_dim", "reshape", "transpose"}
_INT_BITS = {"popcnt", "count_leading_zeros", "shift_left", "shift_right_logical", "shift_right_arithmetic"}


def _constant_operands(op) -> bool:
    """Whether every operand of `op` is a `stablehlo.constant`'s result (most ops read another value: `_fold`'s
    guard, asked before any type is read)."""
    for v in op.operands:
        owner = v.owner
        if type(owner) is ir.Block or owner.name != "stablehlo.constant":
            return False
    return True


def _fold(op, rewriter) -> bool:
    if len(op.results) != 1 or len(op.regions) or not op.operands or not _constant_operands(op):
        return False
    out_ty = tensor_type(op.result)
    out_dtype = dtype_of(op.result)
    size = int(np.prod(out_ty.shape))
    consts = [constant_value(v, MAX_ELEMENTS) for v in op.operands]
    if out_dtype is None or any(c is None for c in consts):
        return False
    all_splat = all(s for _, s in consts)
    if all_splat:
        # Splats: compute one element; shape-only ops of a splat are a splat of the result type.
        args = [a.reshape(()) for a, _ in consts]
        if op_name(op) in _SHAPE_OPS:
            return _done(rewriter, op, args[0].astype(out_dtype), out_ty)
        shape = ()
    else:
        if size > MAX_ELEMENTS:
            return False
        args = [np.broadcast_to(a, tensor_type(v).shape) if s else a for (a, s), v in zip(consts, op.operands)]
        shape = tuple(out_ty.shape)
    with np.errstate(all="ignore"):
        r = evaluate(op, args, shape, out_dtype)
    if r is None:
        return False
    return _done(rewriter, op, r, out_ty)


_fold.guard = _constant_operands


def _done(rewriter, op, value: np.ndarray, ty) -> bool:
    rewriter.replace_op(op, [make_constant(value, ty)])
    return True


class FoldConstants(PatternPass):
    name = "fold-constants"
    description = f"evaluate ops on constants with NumPy (results up to {MAX_ELEMENTS} elements, or splats)"
    patterns = [(f"stablehlo.{n}", n, _fold) for n in
                [*_UNARY, *_BINARY, "divide", "remainder", "compare", "select", "convert", "bitcast_convert", "clamp",
                 *_INT_BITS, *_SHAPE_OPS]]


FOLD_CONSTANTS = register(FoldConstants())


# Ops whose NumPy value may differ from the compiled one (libm against IREE's approximations, 1/sqrt rounded twice)
_INEXACT = {"exponential", "exponential_minus_one", "log", "log_plus_one", "rsqrt", "sine", "cosine", "tan", "tanh",
            "cbrt", "logistic", "power", "atan2"}


def _fold_f64(op, rewriter) -> bool:
    """An inexact op (`_INEXACT`) of float64 values folded: NumPy's float64 functions are within an ulp, as IREE's."""
    return str(tensor_type(op.result).element_type) == "f64" and _fold(op, rewriter)


_fold_f64.guard = _constant_operands


class FoldExpansions(FoldConstants):
    """`fold-constants` again after the legalization's expansions (`mathlib`), of correctly rounded ops only: an
    expansion of an op with a constant operand (`0.9 ** t`: the base's exponent and mantissa, its log's polynomial)
    holds constant subgraphs that IREE 3.13, with const-eval off, hoists into initializers, each an executable
    compiled on its own: a 6-layer Adam step had 17 of its 23 (7 folded, compile 1.85 -> 1.3 CPU-s; docs/log.md
    2026-11-29). Each folded op is rounded on its own, as the expansion is written (compiled, IREE may contract a
    multiply and an add into one FMA); powers of constant bases gave the same bits either way. Float64 transcendental
    ops too (IREE's own there, as NumPy's within an ulp): float64 `gammaln(x) + gammaln(3.5)` was 5 executables, 4 of
    them initializers computing gammaln(3.5)'s logs and sine."""
    name = "fold-expansions"
    description = ("fold-constants after the expansions, exact ops and float64 ones only (their constant subgraphs: "
                   "no initializers)")
    patterns = [p if p[1] not in _INEXACT else (p[0], p[1], _fold_f64) for p in FoldConstants.patterns]


FOLD_EXPANSIONS = register(FoldExpansions())
