"""StableHLO elementwise ops as scalar `arith` / `math` ops, for the bodies of fused `linalg.generic`s.

`emit(op, args)` builds the scalar form of one StableHLO op on element values `args` (inside the
current insertion point) or returns None; `supported(op)` says beforehand whether it can.
Only signless integer, bool and float types take part (arith has no unsigned integer types);
integer divide/remainder and ops without an exact arith/math counterpart are left out.
"""
from __future__ import annotations

from iree.compiler import ir

from .irutil import numpy_dtype, op_name, splat_value, tensor_type

_FLOAT_UNARY = {
    "negate": "arith.negf", "abs": "math.absf", "exponential": "math.exp", "exponential_minus_one": "math.expm1",
    "log": "math.log", "log_plus_one": "math.log1p", "sqrt": "math.sqrt", "rsqrt": "math.rsqrt",
    "sine": "math.sin", "cosine": "math.cos", "tan": "math.tan", "tanh": "math.tanh", "floor": "math.floor",
    "ceil": "math.ceil", "round_nearest_even": "math.roundeven", "cbrt": "math.cbrt"}
_FLOAT_BINARY = {
    "add": "arith.addf", "subtract": "arith.subf", "multiply": "arith.mulf", "divide": "arith.divf",
    "remainder": "arith.remf", "maximum": "arith.maximumf", "minimum": "arith.minimumf", "power": "math.powf",
    "atan2": "math.atan2"}
_INT_BINARY = {
    "add": "arith.addi", "subtract": "arith.subi", "multiply": "arith.muli", "maximum": "arith.maxsi",
    "minimum": "arith.minsi", "and": "arith.andi", "or": "arith.ori", "xor": "arith.xori"}
# Shifts by a constant below the width only (StableHLO's result for larger amounts, 0 or the sign, is arith's poison).
_SHIFTS = {"shift_left": "arith.shli", "shift_right_logical": "arith.shrui", "shift_right_arithmetic": "arith.shrsi"}
_BOOL_BINARY = {"and": "arith.andi", "or": "arith.ori", "xor": "arith.xori", "maximum": "arith.ori",
                "minimum": "arith.andi"}


def float_op(name: str) -> str | None:
    """The scalar op a float StableHLO op (`name` without its dialect) becomes in a generic's body, or None."""
    return _FLOAT_UNARY.get(name) or _FLOAT_BINARY.get(name)


_CMPF = {"EQ": 1, "GT": 2, "GE": 3, "LT": 4, "LE": 5, "NE": 13}  # ordered, except NE (true on NaN)
_CMPI_SIGNED = {"EQ": 0, "NE": 1, "LT": 2, "LE": 3, "GT": 4, "GE": 5}
_CMPI_UNSIGNED = {"EQ": 0, "NE": 1, "LT": 6, "LE": 7, "GT": 8, "GE": 9}


def _kind(t: ir.Type) -> str | None:
    """'f' float, 'i' signless integer, 'b' bool, None for anything else (unsigned, complex, bf16)."""
    d = numpy_dtype(t)
    if d is None:
        return None
    if d.kind == "b":
        return "b"
    if d.kind == "i":
        return "i"
    return "f" if d.kind == "f" else None


def _elem(v: ir.Value) -> ir.Type:
    return tensor_type(v).element_type


def _direction(op) -> str:
    return str(op.attributes["comparison_direction"]).split()[-1].rstrip(">")


def _convert_name(src: ir.Type, dst: ir.Type) -> str | None:
    ks, kd = _kind(src), _kind(dst)
    if ks is None or kd is None or kd == "b":
        return None
    ws = 1 if ks == "b" else src.width
    wd = dst.width
    if ks == "f" and kd == "f":
        return "arith.extf" if wd > ws else "arith.truncf"
    if ks in "ib" and kd == "f":
        return "arith.uitofp" if ks == "b" else "arith.sitofp"
    if ks == "f" and kd == "i":
        return None  # out-of-range float->int differs between lowerings; leave it to IREE
    return "arith.extui" if ks == "b" else "arith.extsi" if wd > ws else "arith.trunci"


def supported(op) -> bool:
    """Whether `op` is an elementwise StableHLO op `emit` can express."""
    name = op_name(op)
    if len(op.results) != 1 or not op.name.startswith("stablehlo."):
        return False
    operands = op.operands
    elems = [_elem(v) for v in operands]  # (each read once: asked of every op a fused float64 module has)
    kinds = [_kind(e) for e in elems]
    if None in kinds:
        return False
    out = _elem(op.result)
    if _kind(out) is None:
        return False
    k = kinds[0] if kinds else None
    if name == "convert":
        src, dst = elems[0], out
        return src == dst or _convert_name(src, dst) is not None
    if name == "compare":
        return True
    if name == "select":
        return True
    if name == "bitcast_convert":  # (same width: a reinterpretation of each element)
        return elems[0].width == out.width
    if name in _SHIFTS:
        amount = splat_value(operands[1])
        return k == "i" and amount is not None and 0 <= amount < out.width
    if name == "not":
        return k in "ib"
    if name == "is_finite":
        return k == "f"
    if k == "f":
        return name in _FLOAT_UNARY or name in _FLOAT_BINARY
    if k == "i":
        return name in _INT_BINARY or name == "negate"
    return name in _BOOL_BINARY


def scalar_constant(value, t: ir.Type) -> ir.Value:
    """An `arith.constant` of element type `t`."""
    if _kind(t) == "f":
        attr = ir.FloatAttr.get(t, float(value))
    else:
        attr = ir.IntegerAttr.get(t, int(bool(value)) if _kind(t) == "b" else int(value))
    return ir.Operation.create("arith.constant", results=[t], attributes={"value": attr}).result


def _create(name: str, t: ir.Type, args, attributes=None) -> ir.Value:
    return ir.Operation.create(name, results=[t], operands=list(args), attributes=attributes or {}).result


def emit(op, args: list[ir.Value]) -> ir.Value:
    """The scalar result of StableHLO `op` applied to element values `args`."""
    name = op_name(op)
    t = _elem(op.result)
    src = _elem(op.operands[0])
    k = _kind(src)
    if name == "convert":
        return args[0] if src == t else _create(_convert_name(src, t), t, args)
    if name == "select":
        return _create("arith.select", t, args)
    if name == "bitcast_convert":
        return _create("arith.bitcast", t, args)
    if name in _SHIFTS:
        return _create(_SHIFTS[name], t, args)
    if name == "compare":
        i64 = ir.IntegerType.get_signless(64)
        d = _direction(op)
        if k == "f":
            return _create("arith.cmpf", t, args, {"predicate": ir.IntegerAttr.get(i64, _CMPF[d])})
        table = _CMPI_UNSIGNED if k == "b" else _CMPI_SIGNED
        return _create("arith.cmpi", t, args, {"predicate": ir.IntegerAttr.get(i64, table[d])})
    if name == "not":
        return _create("arith.xori", t, [args[0], scalar_constant(-1 if k == "i" else 1, t)])
    if name == "is_finite":  # (|x| != inf, ordered: false for NaN and the infinities)
        i64 = ir.IntegerType.get_signless(64)
        return _create("arith.cmpf", t, [_create("math.absf", src, args), scalar_constant(float("inf"), src)],
                       {"predicate": ir.IntegerAttr.get(i64, 6)})  # ("one")
    if k == "f":
        return _create(_FLOAT_UNARY.get(name) or _FLOAT_BINARY[name], t, args)
    if k == "i":
        if name == "negate":
            return _create("arith.subi", t, [scalar_constant(0, t), args[0]])
        return _create(_INT_BINARY[name], t, args)
    return _create(_BOOL_BINARY[name], t, args)


REDUCE_COMBINERS = {"add", "multiply", "maximum", "minimum", "and", "or"}
