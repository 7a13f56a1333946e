"""Small helpers over the MLIR Python bindings shared by the passes (no pass logic here)."""
from __future__ import annotations

import importlib
import math
import sys
import types
from typing import Iterator

import ml_dtypes
import numpy as np
from iree.compiler import ir

def _empty_missing_dialect_modules() -> None:
    """The bindings import `iree.compiler.dialects.<dialect>` when they first wrap an op of a dialect, and remember
    the dialect only once an import succeeds. StableHLO and CHLO have no such module: every wrap tried again (80k
    failed imports, 0.26 s of a 3 s compile of `random.ball`, even with Python's negative cache). An empty module
    stands in for each: wrapped once, their ops stay generic `OpView`s, as before."""
    import importlib.util
    for d in ("stablehlo", "chlo"):
        name = f"iree.compiler.dialects.{d}"
        if sys.modules.get(name) is None and importlib.util.find_spec(name) is None:
            sys.modules[name] = types.ModuleType(name, f"stagec: no Python module for IREE's {d} dialect (irutil)")


_empty_missing_dialect_modules()


def _hash_ops_by_identity() -> None:
    """IREE 3.13's bindings hash an op by its contents (name, operands, attributes) but compare ops by identity: an
    op in a dict or set is lost there once a rewrite changes its operands (`recompute-activations` raised KeyError on a
    transformer's second block: the first backward reader read z, then the barrier). Ops hash by identity here, as
    they compare: the pointer in their C API capsule (0.4 us)."""
    import ctypes
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    name = ctypes.pythonapi.PyCapsule_GetName
    name.restype, name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    base = ir.Operation.__mro__[1]  # (`_OperationBase`: Operation's and every OpView's)
    with ir.Context(), ir.Location.unknown():
        key = name(ir.Module.create().operation._CAPIPtr)
    base.__hash__ = lambda op: get(op._CAPIPtr, key)


_hash_ops_by_identity()


class _Deferred(types.ModuleType):
    """Stands in `sys.modules` for a dialect's Python module (`_defer_dialect_modules`) until one of its attributes
    is read: then the module is imported, and this one takes its contents."""

    def __getattr__(self, attr: str):
        if sys.modules.get(self.__name__) is self:
            del sys.modules[self.__name__]
        real = importlib.import_module(self.__name__)  # (sets the package's attribute to it)
        self.__dict__.update({k: v for k, v in real.__dict__.items() if k != "__getattr__"})
        return getattr(real, attr)


def _defer_dialect_modules() -> None:
    """linalg's Python module costs ~80 ms to import (its named-op DSL: yaml, the complex dialect), which the
    bindings do when they first wrap a linalg op (`fuse`'s generics), in the first compile of a process. The passes
    use no op classes of it: until anyone reads an attribute of it, it is an empty module (ops wrap as OpView)."""
    import importlib.util
    name = "iree.compiler.dialects.linalg"
    if name not in sys.modules and (spec := importlib.util.find_spec(name)) is not None:
        import iree.compiler.dialects as package
        module = _Deferred(name)
        # (its spec and file, so that `find_spec` and tools that read them work; no `__path__`: importing a
        # submodule reads it, which imports the module first)
        module.__spec__, module.__loader__, module.__file__ = spec, spec.loader, spec.origin
        sys.modules[name] = module
        setattr(package, "linalg", module)


_defer_dialect_modules()


def producer(value: ir.Value):
    """The op defining `value`, or None for a block argument."""
    owner = value.owner
    return None if isinstance(owner, ir.Block) else owner


def op_name(op) -> str:
    """`op.name` without the `stablehlo.` prefix ('' for None)."""
    return op.name.removeprefix("stablehlo.") if op is not None else ""


def is_op(value: ir.Value, name: str):
    """The producer of `value` when it is `stablehlo.<name>`, else None."""
    op = producer(value)
    return op if op is not None and op.name == "stablehlo." + name else None


_FLOAT_DTYPES = {ir.F16Type: np.dtype(np.float16), ir.F32Type: np.dtype(np.float32), ir.F64Type: np.dtype(np.float64)}
_INT_DTYPES: dict = {}  # (width, unsigned) -> dtype, filled as met


def numpy_dtype(element_type: ir.Type) -> np.dtype | None:
    """The NumPy dtype of an MLIR element type, or None where NumPy has none (bf16, ...)."""
    # (by the bindings' concrete class first: asked ~10^5 times in a large module's passes)
    cls = type(element_type)
    d = _FLOAT_DTYPES.get(cls)
    if d is not None:
        return d
    if cls is ir.IntegerType:
        key = (element_type.width, element_type.is_unsigned)
        d = _INT_DTYPES.get(key)
        if d is None:
            d = _INT_DTYPES[key] = _numpy_dtype(element_type)
        return d
    return _numpy_dtype(element_type)


def _numpy_dtype(element_type: ir.Type) -> np.dtype | None:
    if isinstance(element_type, ir.IntegerType):
        t = element_type
        if t.width == 1:
            return np.dtype(np.bool_)
        return np.dtype(f"{'u' if t.is_unsigned else 'i'}{t.width // 8}")
    for cls, dt in ((ir.F16Type, np.float16), (ir.F32Type, np.float32), (ir.F64Type, np.float64)):
        if isinstance(element_type, cls):
            return np.dtype(dt)
    if isinstance(element_type, ir.ComplexType):
        inner = numpy_dtype(element_type.element_type)
        return None if inner is None else np.dtype(np.complex64 if inner == np.float32 else np.complex128)
    return None


def nbytes(value: ir.Value) -> int:
    """The bytes of a statically shaped tensor value (bf16 and other types NumPy lacks: 2 bytes an element)."""
    t = tensor_type(value)
    dt = numpy_dtype(t.element_type)
    return math.prod(t.shape) * (dt.itemsize if dt is not None else 2)


def tensor_type(value_or_type) -> ir.RankedTensorType:
    cls = type(value_or_type)
    t = value_or_type.type if cls is ir.OpResult or cls is ir.BlockArgument or isinstance(value_or_type, ir.Value) \
        else value_or_type
    return t if type(t) is ir.RankedTensorType or isinstance(t, ir.RankedTensorType) else ir.RankedTensorType(t)


def dtype_of(value: ir.Value) -> np.dtype | None:
    return numpy_dtype(tensor_type(value).element_type)


def is_float(value: ir.Value) -> bool:
    d = dtype_of(value)
    return d is not None and d.kind == "f"


def constant_value(value: ir.Value, max_elements: int | None = None):
    """(array, is_splat) for a value produced by `stablehlo.constant`, else None.

    A splat comes back as a 0-d array holding its one element, so huge splats cost nothing.
    """
    op = is_op(value, "constant")
    if op is None:
        return None
    ty = tensor_type(value)
    dtype = numpy_dtype(ty.element_type)
    try:
        attr = op.attributes["value"]  # the bindings cannot even wrap some (complex) constants
        if dtype is None or not isinstance(attr, ir.DenseElementsAttr):
            return None
        if attr.is_splat:
            v = attr.get_splat_value()
            v = v.value if hasattr(v, "value") else v
            return np.array(v, dtype=dtype), True
        if max_elements is not None and int(np.prod(ty.shape)) > max_elements:
            return None
        return np.array(attr).astype(dtype, copy=False).reshape(ty.shape), False
    except (TypeError, ValueError):  # element types the bindings cannot read back (complex): not foldable
        return None


def splat_value(value: ir.Value):
    """The scalar every element of `value` equals, when it is a splat constant (possibly behind a
    `broadcast_in_dim` or `reshape` of one); else None."""
    for _ in range(4):
        c = constant_value(value, max_elements=1)
        if c is not None:  # (an empty constant has no value to give: None)
            return c[0].reshape(()).item() if c[0].size == 1 else None
        op = producer(value)
        if op is None or op_name(op) not in ("broadcast_in_dim", "reshape", "convert"):
            return None
        if op_name(op) == "convert":
            inner = splat_value(op.operands[0])
            if inner is None:
                return None
            return np.array(inner, dtype=dtype_of(op.operands[0])).astype(dtype_of(value)).item()
        value = op.operands[0]
    return None


def make_constant(array: np.ndarray, ty: ir.RankedTensorType) -> ir.Value:
    """A `stablehlo.constant` of type `ty` holding `array` (a 0-d array makes a splat)."""
    dtype = ml_dtypes.bfloat16 if isinstance(ty.element_type, ir.BF16Type) else numpy_dtype(ty.element_type)
    flat = np.asarray(array, dtype=dtype).reshape(-1)
    if flat.size > 1 and (flat == flat[0]).all():
        flat = flat[:1]
    data = flat if flat.size == 1 else flat.reshape(ty.shape)
    attr = ir.DenseElementsAttr.get(data, type=ty)
    return ir.Operation.create("stablehlo.constant", results=[ty], attributes={"value": attr}).result


def through_barrier(v: ir.Value, after) -> ir.Value:
    """Every use of `v` made to read it through a new `optimization_barrier`, built right after op `after` (`v`'s
    producer): IREE neither fuses across it nor recomputes `v` in its readers' dispatches. The barrier's result."""
    with ir.InsertionPoint.after(after), after.location:
        bar = ir.Operation.create("stablehlo.optimization_barrier", results=[v.type], operands=[v])
    v.replace_all_uses_with(bar.results[0])
    bar.operands[0] = v
    return bar.results[0]


def func_blocks(module: ir.Module) -> Iterator[ir.Block]:
    """The blocks of the module's functions (not the blocks nested in their ops)."""
    for fn in module.body.operations:
        for region in fn.regions:
            yield from region.blocks


def count_ops(module: ir.Module) -> int:
    """Ops nested anywhere in the module (the module op itself excluded).

    A `linalg.generic`'s body is counted by its length, not walked: the passes build those bodies of scalar `arith` /
    `math` ops, none with regions (`fuse`, `fuse-int-chains`, `one-weight-pass`), and they are most of a fused
    float64 module's ops (5,691 of 7,426 in 53 stats functions: a walk of each op was 4.3 ms, once a pass)."""
    n = 0
    advance, skip = ir.WalkResult.ADVANCE, ir.WalkResult.SKIP

    def visit(op):
        nonlocal n
        n += 1
        if op.name == "linalg.generic":
            n += sum(len(block.operations) for region in op.regions for block in region.blocks)
            return skip
        return advance
    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return n - 1


def reduced_dims(reduce_op) -> list[int]:
    """The dimensions a `stablehlo.reduce` reduces, in order."""
    return sorted(int(d) for d in ir.DenseI64ArrayAttr(reduce_op.attributes["dimensions"]))


def sums_an_add(reduce_op) -> bool:
    """Whether a `stablehlo.reduce` has one input and adds (`stablehlo.add` then return)."""
    if len(reduce_op.operands) != 2:
        return False
    body = [op.name for op in reduce_op.regions[0].blocks[0].operations]
    return body == ["stablehlo.add", "stablehlo.return"]


def sums(module: ir.Module) -> list:
    """The module's top-level `stablehlo.reduce` ops that add (`sums_an_add`), listed first: callers may rewrite."""
    return [op.operation for block in func_blocks(module) for op in list(block.operations)
            if op.operation.name == "stablehlo.reduce" and sums_an_add(op.operation)]


def nested_ops(op, names: tuple[str, ...]) -> list:
    """The ops called `names` anywhere inside `op` (loop bodies and branches included)."""
    out = []
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                inner = inner.operation
                if inner.name in names:
                    out.append(inner)
                out.extend(nested_ops(inner, names))
    return out


def f64_ops(module: ir.Module, names: tuple[str, ...]) -> list:
    """`nested_ops` whose result is a float64 tensor."""
    with module.context:
        f64 = ir.F64Type.get()
    return [op for op in nested_ops(module.operation, names)
            if isinstance(op.result.type, ir.RankedTensorType) and tensor_type(op.result.type).element_type == f64]


class Builder:
    """StableHLO ops of one tensor type `t` (other types given as `ty=`), at the current insertion point."""

    def __init__(self, t: ir.RankedTensorType):
        self.t = t
        self.i1 = ir.RankedTensorType.get(t.shape, ir.IntegerType.get_signless(1))

    def c(self, v, ty=None) -> ir.Value:
        return make_constant(np.array(v), ty or self.t)

    def op(self, name: str, *operands, ty=None, **attrs) -> ir.Value:
        return ir.Operation.create("stablehlo." + name, results=[ty or self.t], operands=list(operands),
                                   attributes=attrs).result

    def compare(self, a, b, direction: str) -> ir.Value:
        attr = ir.Attribute.parse(f"#stablehlo<comparison_direction {direction}>")
        return self.op("compare", a, b, ty=self.i1, comparison_direction=attr)
