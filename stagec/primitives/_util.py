"""Checks shared by the shape rules of every primitive family."""
from __future__ import annotations

from .. import dtypes as _dt
from ..core import ShapedArray

FLOAT, FLOAT_OR_COMPLEX, INT_OR_BOOL, NUMBER, ANY = "f", "fc", "iub", "iufc", "biufc"
_KIND_NAMES = {"b": "boolean", "i": "signed integer", "u": "unsigned integer", "f": "floating", "c": "complex"}


def check_kind(name: str, aval: ShapedArray, kinds: str) -> None:
    if _dt.kind(aval.dtype) not in kinds:
        want = " or ".join(_KIND_NAMES[k] for k in kinds)
        raise TypeError(f"{name} does not accept dtype {aval.dtype} (it needs a {want} dtype)")


def of_kinds(kinds: str):
    """A NumPy rule's `accepts` (`Primitive.def_host`): every operand's dtype kind is in `kinds`."""
    return lambda avals, params: all(_dt.kind(a.dtype) in kinds for a in avals)


def same_shapes_only(name: str, *avals: ShapedArray) -> None:
    if any(a.shape != avals[0].shape for a in avals[1:]):
        raise TypeError(f"{name} got incompatible shapes: {', '.join(str(a.shape) for a in avals)} (primitives "
                        f"need equal shapes; stagec.numpy broadcasts before calling them)")


def same_shapes(name: str, *avals: ShapedArray) -> None:
    same_shapes_only(name, *avals)
    dts = [a.dtype for a in avals]
    if any(d != dts[0] for d in dts[1:]):
        raise TypeError(f"{name} got different dtypes: {', '.join(map(str, dts))}")


def check_axis(name: str, x: ShapedArray, axis: int) -> None:
    if not 0 <= axis < x.ndim:
        raise ValueError(f"{name}: axis {axis} is out of bounds for shape {x.shape}")
