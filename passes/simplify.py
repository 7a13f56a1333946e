"""`simplify`: algebraic rewrites on StableHLO, each a Python pattern.

Numerics of each rewrite (the unit tests in tests/test_passes_simplify.py show IR before/after):
- log(exp(x)) -> x: exact where exp(x) is finite and normal; where exp overflows (x > ~88.7 in f32)
  or underflows, the rewritten form returns x instead of inf / -inf (more accurate). Floats only.
- log(sqrt(x)) -> 0.5 * log(x): may differ by an ulp (one rounding instead of two); x < 0 gives NaN
  both ways; x = 0 gives -inf both ways. Floats only.
- x*1, 1*x, x/1, x-0 -> x: exact. x+0, 0+x -> x: exact except x = -0.0, where x+0.0 is +0.0 and the
  rewrite keeps -0.0 (XLA makes the same choice).
- neg(neg(x)) -> x: exact (also for integers, two's complement wraps back).
- transpose(transpose(x)) -> one transpose, or x when the composed permutation is the identity;
  reshape(reshape(x)) -> one reshape, or x when the types match: data movement only, exact.
- broadcast_in_dim(splat constant) -> splat constant: exact.
- convert(convert(x)) -> convert(x) or x when the first convert is lossless (NumPy's "safe" cast:
  every value of the source type is exactly representable in the middle type): exact.
- select(constant predicate, a, b) -> a or b; select(p, a, a) -> a: exact.
- not(not(x)), abs(abs(x)), abs(neg(x)) -> abs(x), and/or/max/min(x, x) -> x, broadcast_in_dim and
  slice that change nothing -> x: exact (max(x, x) is x for NaN too).
- Integers and booleans only, ops whose value is a constant whatever x is (compare(x, x), x ^ x, x & 0, x % 1,
  shifts past the width, clamp(k, x, k), ...: `_integer_fold`) -> that constant: exact (not for floats: NaN).
"""
from __future__ import annotations

import numpy as np
from iree.compiler import ir

from .base import PatternPass, register
from .fold_constants import FOLD_CONSTANTS
from .irutil import dtype_of, is_float, is_op, make_constant, op_name, producer, splat_value, tensor_type


def _replace(rewriter, op, value: ir.Value) -> bool:
    rewriter.replace_op(op, [value])
    return True


def _log_of_exp(op, rewriter) -> bool:
    e = is_op(op.operands[0], "exponential")
    if e is None or not is_float(op.result):
        return False
    return _replace(rewriter, op, e.operands[0])


def _log_of_sqrt(op, rewriter) -> bool:
    s = is_op(op.operands[0], "sqrt")
    if s is None or not is_float(op.result):
        return False
    ty = op.result.type
    log = ir.Operation.create("stablehlo.log", results=[ty], operands=[s.operands[0]]).result
    half = make_constant(np.array(0.5), tensor_type(ty))
    mul = ir.Operation.create("stablehlo.multiply", results=[ty], operands=[half, log]).result
    return _replace(rewriter, op, mul)


def _identity_operand(unit, commutes: bool):
    """Pattern for `x op unit -> x` (and `unit op x -> x` when the op commutes)."""
    def pattern(op, rewriter) -> bool:
        a, b = op.operands[0], op.operands[1]
        if splat_value(b) == unit and a.type == op.result.type:
            return _replace(rewriter, op, a)
        if commutes and splat_value(a) == unit and b.type == op.result.type:
            return _replace(rewriter, op, b)
        return False
    return pattern


def _neg_neg(op, rewriter) -> bool:
    inner = is_op(op.operands[0], "negate")
    return inner is not None and _replace(rewriter, op, inner.operands[0])


def _perm(op) -> list[int]:
    return list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))


def _transpose_identity(op, rewriter) -> bool:
    return _perm(op) == list(range(len(_perm(op)))) and _replace(rewriter, op, op.operands[0])


def _transpose_transpose(op, rewriter) -> bool:
    inner = is_op(op.operands[0], "transpose")
    if inner is None:
        return False
    p_in, p_out = _perm(inner), _perm(op)
    composed = [p_in[i] for i in p_out]  # out[i] = mid[p_out[i]] = x[p_in[p_out[i]]]
    if composed == list(range(len(composed))):
        return _replace(rewriter, op, inner.operands[0])
    new = ir.Operation.create("stablehlo.transpose", results=[op.result.type], operands=[inner.operands[0]],
                              attributes={"permutation": ir.DenseI64ArrayAttr.get(composed)}).result
    return _replace(rewriter, op, new)


def _reshape_reshape(op, rewriter) -> bool:
    src = op.operands[0]
    inner = is_op(src, "reshape")
    if inner is not None:
        src = inner.operands[0]
    if src.type == op.result.type:
        return _replace(rewriter, op, src)
    if inner is None:
        return False
    new = ir.Operation.create("stablehlo.reshape", results=[op.result.type], operands=[src]).result
    return _replace(rewriter, op, new)


def _broadcast_splat(op, rewriter) -> bool:
    v = splat_value(op.operands[0])
    if v is None or is_op(op.operands[0], "constant") is None:
        return False
    return _replace(rewriter, op, make_constant(np.array(v), tensor_type(op.result)))


def _convert_convert(op, rewriter) -> bool:
    src = op.operands[0]
    if src.type == op.result.type:
        return _replace(rewriter, op, src)
    inner = is_op(src, "convert")
    if inner is None:
        return False
    a, b = dtype_of(inner.operands[0]), dtype_of(src)
    if a is None or b is None or not np.can_cast(a, b, "safe"):
        return False
    x = inner.operands[0]
    if x.type == op.result.type:
        return _replace(rewriter, op, x)
    new = ir.Operation.create("stablehlo.convert", results=[op.result.type], operands=[x]).result
    return _replace(rewriter, op, new)


def _select(op, rewriter) -> bool:
    pred, a, b = op.operands
    if a == b:
        return _replace(rewriter, op, a)
    p = splat_value(pred)
    if p is None:
        return False
    return _replace(rewriter, op, a if p else b)


def _involution(op, rewriter) -> bool:
    """not(not(x)) -> x."""
    inner = is_op(op.operands[0], op.name.removeprefix("stablehlo."))
    return inner is not None and _replace(rewriter, op, inner.operands[0])


def _abs(op, rewriter) -> bool:
    """abs(abs(x)), abs(neg(x)) -> abs(x) (real types: abs of complex changes the type)."""
    x = op.operands[0]
    inner = is_op(x, "abs") or is_op(x, "negate")
    if inner is None or inner.operands[0].type != op.result.type:
        return False
    if op_name(inner) == "abs":
        return _replace(rewriter, op, x)
    new = ir.Operation.create("stablehlo.abs", results=[op.result.type], operands=[inner.operands[0]]).result
    return _replace(rewriter, op, new)


def _idempotent(op, rewriter) -> bool:
    """and/or/max/min(x, x) -> x."""
    a, b = op.operands
    return a == b and _replace(rewriter, op, a)


def _exact_kind(value) -> bool:
    d = dtype_of(value)
    return d is not None and d.kind in "biu"


# Ops two of which with like operands may differ: host callbacks, random draws, I/O (constants: by value).
_NOT_SAME = frozenset({"constant", "custom_call", "rng", "rng_bit_generator", "infeed", "recv", "send", "outfeed"})


def _same(a: ir.Value, b: ir.Value, depth: int = 3) -> bool:
    """a and b are one value: the same SSA value, equal splat constants, or results of like ops (name, attributes)
    of the same operands (`cse` runs after this pass)."""
    if a == b:
        return True
    if depth == 0 or a.type != b.type:
        return False
    va, vb = splat_value(a), splat_value(b)
    if va is not None or vb is not None:
        return va is not None and va == vb
    pa, pb = producer(a), producer(b)
    if pa is None or pb is None or op_name(pa) != op_name(pb) or op_name(pa) in _NOT_SAME or len(pa.regions):
        return False
    return (len(pa.operands) == len(pb.operands) and dict(pa.attributes) == dict(pb.attributes)
            and all(_same(x, y, depth - 1) for x, y in zip(pa.operands, pb.operands)))


def _int_constant(op, value) -> ir.Value:
    return make_constant(np.array(value).astype(dtype_of(op.result)), tensor_type(op.result))


def _all_ones(dt: np.dtype):
    return True if dt == np.bool_ else np.array(-1).astype(dt).item()


_SELF_COMPARE = {"EQ": True, "LE": True, "GE": True, "NE": False, "LT": False, "GT": False}


def _direction(op) -> str:
    return str(op.attributes["comparison_direction"]).split()[-1].rstrip(">")


def _integer_fold(op, rewriter) -> bool:
    """Integer and boolean ops whose value is a constant whatever x is: compare(x, x), x ^ x, x - x, x & 0, x * 0,
    x | ~0, x & ~x, x | ~x, x ^ ~x, x % 1, shifts past the width, x >= the type's least value (and the like),
    clamp(k, x, k), max(x, the type's max), min(x, its min). IREE 3.13 folds these itself, after stagec's passes,
    and its vectorizer then turned a reduction whose body no longer reads its input into one step (`sum(x == x)`
    of 6 int8 values gave 1; `sum(~isnan(x))`, int8 `nanvar`): folded here, `fold-constants` takes the reduction."""
    if not _exact_kind(op.result) or not all(_exact_kind(v) for v in op.operands):
        return False
    name, dt = op_name(op), dtype_of(op.operands[-1])
    args = list(op.operands)
    value = None
    if name == "clamp":
        lo, hi = splat_value(args[0]), splat_value(args[2])
        value = lo if lo is not None and lo == hi else None
    elif name in ("compare", "xor", "subtract") and _same(args[0], args[1]):
        value = _SELF_COMPARE[_direction(op)] if name == "compare" else 0
    elif name == "compare":  # (against the type's least or greatest value: x >= min, x > max, min <= x, ...)
        lo, hi = (False, True) if dt == np.bool_ else (np.iinfo(dt).min, np.iinfo(dt).max)
        d, ka, kb = _direction(op), splat_value(args[0]), splat_value(args[1])
        if kb is not None and ka is None:
            value = {("GE", lo): True, ("LT", lo): False, ("LE", hi): True, ("GT", hi): False}.get((d, kb))
        elif ka is not None and kb is None:
            value = {("LE", lo): True, ("GT", lo): False, ("GE", hi): True, ("LT", hi): False}.get((d, ka))
    elif name in ("and", "or", "multiply", "maximum", "minimum"):
        info = None if dt == np.bool_ else np.iinfo(dt)
        absorbing = {"and": 0, "multiply": 0, "or": _all_ones(dt), "maximum": True if info is None else info.max,
                     "minimum": False if info is None else info.min}[name]
        if any(splat_value(x) == absorbing for x in args if splat_value(x) is not None):
            value = absorbing
        elif name in ("and", "or") and any(is_op(y, "not") is not None and _same(is_op(y, "not").operands[0], x)
                                           for x, y in (args, args[::-1])):
            value = 0 if name == "and" else _all_ones(dt)
    elif name == "remainder" and splat_value(args[1]) in (1, -1) and dt.kind != "b":
        value = 0
    elif name in ("shift_left", "shift_right_logical"):
        amount = splat_value(args[1])
        if amount is not None and not isinstance(amount, bool) and \
                int(np.array(amount).astype(np.dtype(f"u{dt.itemsize}"))) >= dt.itemsize * 8:
            value = 0
    if name == "xor" and value is None and any(
            is_op(y, "not") is not None and _same(is_op(y, "not").operands[0], x) for x, y in (args, args[::-1])):
        value = _all_ones(dt)
    if value is None:
        return False
    return _replace(rewriter, op, _int_constant(op, value))


def _broadcast_identity(op, rewriter) -> bool:
    x = op.operands[0]
    dims = list(ir.DenseI64ArrayAttr(op.attributes["broadcast_dimensions"]))
    return x.type == op.result.type and dims == sorted(dims) and _replace(rewriter, op, x)


def _slice_identity(op, rewriter) -> bool:
    return op.operands[0].type == op.result.type and _replace(rewriter, op, op.operands[0])


class Simplify(PatternPass):
    name = "simplify"
    description = "algebraic rewrites: log(exp x), log(sqrt x), unit operands, double negate/transpose/reshape/convert, constant selects, idempotent ops"
    patterns = [
        ("stablehlo.log", "log-exp", _log_of_exp),
        ("stablehlo.log", "log-sqrt", _log_of_sqrt),
        ("stablehlo.multiply", "mul-one", _identity_operand(1, True)),
        ("stablehlo.divide", "div-one", _identity_operand(1, False)),
        ("stablehlo.add", "add-zero", _identity_operand(0, True)),
        ("stablehlo.subtract", "sub-zero", _identity_operand(0, False)),
        ("stablehlo.negate", "neg-neg", _neg_neg),
        ("stablehlo.transpose", "transpose-identity", _transpose_identity),
        ("stablehlo.transpose", "transpose-transpose", _transpose_transpose),
        ("stablehlo.reshape", "reshape-reshape", _reshape_reshape),
        ("stablehlo.broadcast_in_dim", "broadcast-splat", _broadcast_splat),
        ("stablehlo.convert", "convert-convert", _convert_convert),
        ("stablehlo.select", "select-const", _select),
        ("stablehlo.not", "not-not", _involution),
        ("stablehlo.abs", "abs-abs-neg", _abs),
        *[(f"stablehlo.{n}", "idempotent", _idempotent) for n in ("and", "or", "maximum", "minimum")],
        *[(f"stablehlo.{n}", "integer-fold", _integer_fold) for n in ("compare", "xor", "subtract", "and", "or",
                                                                      "multiply", "maximum", "minimum", "remainder",
                                                                      "shift_left", "shift_right_logical", "clamp")],
        ("stablehlo.broadcast_in_dim", "broadcast-identity", _broadcast_identity),
        ("stablehlo.slice", "slice-identity", _slice_identity),
        # Ops on the constants this pass makes (a constant select's branch, a broadcast splat) are folded here too,
        # after `fold-constants` ran: IREE 3.13 miscompiles a sum over a unary op of a splat constant, counting one
        # element (`sum(exp(where(False, x, 0.0)), -1)` over 3 columns gave 1, not 3).
        *FOLD_CONSTANTS.patterns,
    ]


SIMPLIFY = register(Simplify())
