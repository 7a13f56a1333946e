"""Rewrites of a StableHLO module for GPU targets, where IREE 3.13 miscompiles an op, cannot compile it, or
computes it much slower than the precision asked for allows, and for the CPU where it cannot compile a module
(`materialize_sliced_dot_operands`). Applied by `backend.Backend.compile` after stagec's passes; the MLIR and the
backend determine them, so the cache key covers them."""
from __future__ import annotations

import math
import re
from typing import Sequence

from .lowering import NUM_KEYS


# Unary float functions whose NaN input NVIDIA's Vulkan driver lost (exp(NaN) = 0, tanh(NaN) = 1): IREE's
# approximations clamp the argument with SPIR-V's FMin/FMax, which may return the non-NaN operand.
_NAN_GUARDED = ("stablehlo.exponential", "stablehlo.exponential_minus_one", "stablehlo.tanh", "stablehlo.logistic",
                "stablehlo.log", "stablehlo.log_plus_one", "stablehlo.sine", "stablehlo.cosine", "stablehlo.tan",
                "stablehlo.cbrt")


def gpu_rewrites(mlir: str, backend: str) -> list[str]:
    """The ops of `mlir` that `legalize_for_gpu` rewrites for `backend` (cheap text test, no parse)."""
    ops = []
    if "xbf16>" in mlir:
        ops += [op for op in ("stablehlo.dot_general", "stablehlo.power") if op in mlir]
    if backend == "cuda" and "stablehlo.dot_general" in mlir and "xf32>" in mlir and "stablehlo.dot_general" not in ops:
        ops.append("stablehlo.dot_general")
    if backend == "vulkan":
        ops += [op for op in _NAN_GUARDED if op + " " in mlir]
    return ops


def legalize_for_gpu(mlir: str, backend: str, ops: Sequence[str]) -> str:
    """Rewrite ops that IREE 3.13 miscompiles or cannot compile for a GPU, keeping the signature.

    - bf16 `dot_general`: CUDA fails on a bf16 result ("'func.func' op failed to distribute"), so the product
      accumulates in f32 (what JAX does for a bf16 dot) and is rounded once. SPIR-V fails on any bf16 operand
      fused into a matmul ("failed to legalize vector.bitcast"), so operands are widened to f32 in dispatches
      of their own (an optimization barrier keeps them apart) and the f32 product is rounded in another.
    - bf16 `power`: CUDA rounded the intermediate y*log(x) to bf16 (16.75**3.72: 34048, not 35629); it is
      computed in f32 and rounded once, as JAX computes bf16 elementwise ops.
    - Vulkan `_NAN_GUARDED` functions: NaN inputs are passed through by a select (NVIDIA returned exp(NaN) = 0).
    - float32 `dot_general` on CUDA below `Precision.HIGHEST`: IREE has no TF32, and its float32 matmul runs on
      the SIMT cores (4096²: 35 ms against 1.2 ms for bf16 on an H100). It becomes three bfloat16 tensor-core
      products accumulated in float32 (`bf16_3x`, `_bf16_3x`).
    """
    from iree.compiler import ir
    with ir.Context():
        module = ir.Module.parse(mlir)
        found = []

        def visit(op):
            if op.name in ops and (op.name in _NAN_GUARDED or str(op.results[0].type).endswith("xbf16>")
                                   or (backend == "cuda" and _is_f32_product_below_highest(op))):
                found.append(op)
            return ir.WalkResult.ADVANCE

        module.operation.walk(visit)
        f32, i1 = ir.F32Type.get(), ir.IntegerType.get_signless(1)

        def like(t, element):  # tensor type `t` with another element type
            return ir.RankedTensorType.get(ir.RankedTensorType(t).shape, element)

        def create(name, operands, results, attributes=None):
            return ir.Operation.create(name, results=results, operands=operands, attributes=attributes)

        def widen(v):
            return v if str(v.type).endswith("xf32>") else create("stablehlo.convert", [v], [like(v.type, f32)]).result

        for op in found:
            with ir.InsertionPoint(op), op.location:
                out_type, operands = op.results[0].type, list(op.operands)
                attrs = {name: op.attributes[name] for name in op.attributes}
                if str(out_type).endswith("xf32>") and op.name == "stablehlo.dot_general":
                    new = _bf16_3x(operands, out_type, attrs, create, like)
                elif op.name in _NAN_GUARDED:
                    e = create(op.name, operands, [out_type], attrs).result
                    nan = create("stablehlo.compare", [operands[0], operands[0]], [like(out_type, i1)],
                                 {"comparison_direction": ir.Attribute.parse("#stablehlo<comparison_direction NE>")})
                    new = create("stablehlo.select", [nan.result, operands[0], e], [out_type]).result
                else:
                    wide = like(out_type, f32)
                    if backend == "vulkan" or op.name != "stablehlo.dot_general":
                        operands = [widen(v) for v in operands]
                    if backend == "vulkan" and op.name == "stablehlo.dot_general":
                        operands = list(create("stablehlo.optimization_barrier", operands,
                                               [v.type for v in operands]).results)
                    product = create(op.name, operands, [wide], attrs).result
                    if backend == "vulkan" and op.name == "stablehlo.dot_general":
                        product = create("stablehlo.optimization_barrier", [product], [product.type]).result
                    new = create("stablehlo.convert", [product], [out_type]).result
                op.results[0].replace_all_uses_with(new)
                op.erase()
        return str(module)




_PASS_THROUGH = ("stablehlo.reshape", "stablehlo.convert")  # (no computation: looked through on the way to a reduce)


def _elementwise(op) -> bool:
    """One result of the shape of every operand, no regions (a transpose of a square array counts: conservative)."""
    from iree.compiler import ir
    types = [v.type for v in (*op.results, *op.operands)]
    if (len(op.results) != 1 or len(op.regions) or op.name == "stablehlo.optimization_barrier"
            or not all(isinstance(t, ir.RankedTensorType) for t in types)):  # (tokens: effects, not values)
        return False
    return all(t.shape == types[0].shape for t in types)


def isolate_multi_use_reductions(mlir: str) -> str | None:
    """`mlir` with each reduction result that IREE 3.13's multi-use fusion (`--iree-dispatch-creation-fuse-multi-use`,
    on at O2 and O3) may compute wrongly passed through an `optimization_barrier`; None if there is none.

    The pattern: a reduction result used more than once, one use an elementwise op (as `log(s)`) whose result reaches
    another reduction (a `stablehlo.reduce`, or a `linalg.generic` of `fuse` with a reduction loop).
    `s = sum(exp(z), 1); (sum(z - log(s)[:, None]), 1 / s)` over 8x33 float32 gave -1149.9 for -1052.4 (a log-softmax
    loss beside the softmax its gradient needs, in `jit(value_and_grad)`), `(sum(z - log(s)[:, None], 1), s)` over
    1000x1000 rows 40% off. Materialized, the result is read by each use and they are right. (Turning the fusion off
    for the whole module fixed those too, but made a complex SVD's module wrong, 4.4 off: the barrier changes the
    module only there.) Layernorm, softmax and log-softmax alone (the reduction's other uses are broadcasts) were
    right in every shape tried and are left alone."""
    if mlir.count("stablehlo.reduce(") + mlir.count('"reduction"') < 2:
        return None
    from iree.compiler import ir
    with ir.Context():
        module = ir.Module.parse(mlir)

        def reducing(op) -> bool:  # (stablehlo's, or a generic of `fuse`'s with a reduction loop)
            return op.name == "stablehlo.reduce" or (op.name == "linalg.generic"
                                                     and "reduction" in str(op.attributes["iterator_types"]))

        reduces = _ops_where(module, reducing)

        def uses(op):
            for r in op.results:
                for u in r.uses:
                    yield u.owner

        def users(op):  # (through keepdims' reshapes)
            for u in uses(op):
                if u.name in _PASS_THROUGH:
                    yield from users(u)
                else:
                    yield u

        def reaches_reduce(op) -> bool:
            # (`seen` holds the operations, equal and hashed by the op they wrap: each `owner` is a fresh Python
            # wrapper, and the `id` of a freed one was reused for another op, which then counted as seen: the walk
            # stopped early in about a third of the runs and the hazard went unfixed)
            work, seen = [op], set()
            while work:
                o = work.pop()
                if reducing(o):
                    return True
                if o.operation in seen or o.name == "func.return":
                    continue
                seen.add(o.operation)
                work.extend(uses(o))
            return False

        changed = False
        for r in reduces:
            found = list(users(r))
            # (a use whose results only feed another use, as `is_finite(m)` in `select(is_finite(m), m, 0)`, is part
            # of that use: one value derived from r, not a second consumer)
            ops = {u.operation for u in found}
            found = [u for u in found if not (feeds := [x.operation for x in uses(u)])
                     or not all(x in ops for x in feeds)]
            if len(found) < 2 or not any(_elementwise(u) and reaches_reduce(u) for u in found):
                continue
            for v in r.results:
                with ir.InsertionPoint.after(r), r.location:
                    bar = ir.Operation.create("stablehlo.optimization_barrier", operands=[v], results=[v.type])
                for use in list(v.uses):
                    if use.owner != bar.operation:
                        use.owner.operands[use.operand_number] = bar.result
            changed = True
        return str(module) if changed else None


def _ops_where(module, keep) -> list:
    """The ops of `module`, nested ones included, for which `keep(op)` holds, in walk order."""
    from iree.compiler import ir
    found = []
    module.operation.walk(lambda op: (found.append(op) if keep(op) else None) or ir.WalkResult.ADVANCE)
    return found


# Ops a sliced matmul operand may pass through on its way from the slice (layout and type changes).
_VIEWS = ("stablehlo.reshape", "stablehlo.transpose", "stablehlo.convert", "stablehlo.broadcast_in_dim")


def materialize_sliced_dot_operands(mlir: str) -> str | None:
    """`mlir` with each `dot_general` operand that is a slice (through reshapes, transposes, conversions) passed
    through an `optimization_barrier`, so that it is computed into a buffer of its own; None if there is none.

    With data tiling, IREE 3.13's llvm-cpu codegen fuses a slice into the packing of a matmul operand and tiles
    it with a whole panel on the stack: `a[:, :128] @ b[:128]` of 256x256 float32 needed 147456 bytes (limit
    32768), `b[:, :128]` as the right operand 66560. Materialized first, the operand packs as any other."""
    if "stablehlo.dot_general" not in mlir or "slice" not in mlir:
        return None
    from iree.compiler import ir
    with ir.Context():
        module = ir.Module.parse(mlir)
        dots = _ops_where(module, lambda op: op.name == "stablehlo.dot_general")

        def sliced(v) -> bool:
            while not isinstance(v.owner, ir.Block):  # (a block's: a function argument)
                op = v.owner
                if op.name in ("stablehlo.slice", "stablehlo.dynamic_slice"):
                    return True
                if op.name not in _VIEWS:
                    return False
                v = op.operands[0]
            return False

        changed = False
        for dot in dots:
            for i, v in enumerate(list(dot.operands)):
                if sliced(v):
                    with ir.InsertionPoint(dot), dot.location:
                        bar = ir.Operation.create("stablehlo.optimization_barrier", operands=[v], results=[v.type])
                    dot.operands[i] = bar.result
                    changed = True
        return str(module) if changed else None


def _is_f32_product_below_highest(op) -> bool:
    if op.name != "stablehlo.dot_general" or not str(op.results[0].type).endswith("xf32>"):
        return False
    if not all(str(v.type).endswith("xf32>") for v in op.operands):
        return False
    return "precision_config" not in op.attributes or "HIGHEST" not in str(op.attributes["precision_config"])


def _bf16_3x(operands, out_type, attrs: dict, create, like):
    """a·b as a_hi·b_lo + a_lo·b_hi + a_hi·b_hi, each split v = hi + lo into bfloat16 parts (hi = bf16(v),
    lo = bf16(v - hi)), each product accumulated in float32. The dropped lo·lo term and the rounding of lo
    leave about 2**-16 of relative error per product (f32: 2**-24, TF32: 2**-11). An infinite operand
    gives NaN (inf - inf in its lo part)."""
    from iree.compiler import ir
    bf16 = ir.BF16Type.get()
    attrs = {k: v for k, v in attrs.items() if k != "precision_config"}

    def split(v):
        hi = create("stablehlo.convert", [v], [like(v.type, bf16)]).result
        back = create("stablehlo.convert", [hi], [v.type]).result
        rest = create("stablehlo.subtract", [v, back], [v.type]).result
        return hi, create("stablehlo.convert", [rest], [like(v.type, bf16)]).result

    (a_hi, a_lo), (b_hi, b_lo) = split(operands[0]), split(operands[1])
    dot = lambda x, y: create("stablehlo.dot_general", [x, y], [out_type], attrs).result
    add = lambda x, y: create("stablehlo.add", [x, y], [out_type]).result
    return add(add(dot(a_hi, b_lo), dot(a_lo, b_hi)), dot(a_hi, b_hi))


SORT_MODULE = "stagec_sort"  # the Python VM module (`backend`) whose `sort<n>_<k>` sort with NumPy
SORT_OPERANDS, SORT_IMPORTS = 4, 8  # it sorts 1-4 arrays together; 8 symbols per count (one per operand types)
SORT_KEY_TYPES = ("f32", "f64", "i8", "i64")  # what `sort_p`'s lowering leaves keys as (signed; bool as i8)


def _declare(module, sym: str, fn_type) -> str:
    """Declare the private function `sym` of type `fn_type` (an import of a host module) at the top of `module`."""
    from iree.compiler import ir
    with ir.InsertionPoint.at_block_begin(module.body), ir.Location.unknown():
        ir.Operation.create("func.func", attributes={
            "sym_name": ir.StringAttr.get(sym), "function_type": ir.TypeAttr.get(fn_type),
            "sym_visibility": ir.StringAttr.get("private")}, regions=1)
    return sym


def _i64s(values: Sequence[int]) -> list:
    """`arith.constant`s of type i64 holding `values`, at the insertion point."""
    from iree.compiler import ir
    i64 = ir.IntegerType.get_signless(64)
    return [ir.Operation.create("arith.constant", results=[i64], attributes={
        "value": ir.IntegerAttr.get(i64, v)}).result for v in values]


def host_sorts(mlir: str, min_length: int) -> str | None:
    """`mlir` with each `stablehlo.sort` of `sort_p` (its comparator NumPy's order over the first `NUM_KEYS`
    operands, lexicographic, NaN last) along a dimension of at least `min_length`, static shapes, signed or float
    keys, replaced by a call to `SORT_MODULE.sort<n>_<k>(operands..., dimension, num_keys)`; None if none is.

    IREE 3.13's CPU sort compares every pair in a row: 1-D float32, 16000 values 1.25 s, 10^6 over an hour. NumPy's
    stable sort is O(n log n) (docs/design.md, "Sorts")."""
    if "stablehlo.sort" not in mlir or NUM_KEYS not in mlir:
        return None
    from iree.compiler import ir
    with ir.Context():
        module = ir.Module.parse(mlir)
        sorts = _ops_where(module, lambda op: op.name == "stablehlo.sort" and NUM_KEYS in op.attributes)
        symbols: dict[str, str] = {}
        i64 = ir.IntegerType.get_signless(64)
        for sort in sorts:
            types = [ir.RankedTensorType(v.type) for v in sort.operands]
            dim = ir.IntegerAttr(sort.attributes["dimension"]).value
            keys = ir.IntegerAttr(sort.attributes[NUM_KEYS]).value
            if not (len(types) <= SORT_OPERANDS and all(t.has_static_shape for t in types)
                    and types[0].shape[dim] >= min_length
                    and all(str(t.element_type) in SORT_KEY_TYPES for t in types[:keys])):
                continue
            n = len(types)
            fn_type = ir.FunctionType.get(types + [i64, i64], types)
            sym = symbols.get(str(fn_type))
            if sym is None:
                k = sum(1 for s in symbols.values() if s.startswith(f"{SORT_MODULE}.sort{n}_"))
                if k == SORT_IMPORTS:
                    continue
                sym = symbols[str(fn_type)] = _declare(module, f"{SORT_MODULE}.sort{n}_{k}", fn_type)
            with ir.InsertionPoint(sort), sort.location:
                call = ir.Operation.create("func.call", results=types, operands=[*sort.operands, *_i64s([dim, keys])],
                                           attributes={"callee": ir.FlatSymbolRefAttr.get(sym)})
            for old, new in zip(sort.results, call.results):
                old.replace_all_uses_with(new)
            sort.erase()
        return str(module) if symbols else None


BLAS_MODULE = "stagec_blas"  # the Python VM module (`backend`) whose `dot_general_<k>` call NumPy's BLAS
BLAS_IMPORTS = 32  # import symbols it exports: one per distinct operand and result types in a module
BLAS_TYPES = ("f32", "f64")
_DIMS = re.compile(r"(lhs|rhs)_(batching|contracting)_dimensions = \[([\d, ]*)\]")


def pack_dims(dims: Sequence[int]) -> int:
    """Dimension indices (each below 15, at most 15) as one integer: 4 bits each, index + 1, first lowest."""
    return sum((d + 1) << (4 * i) for i, d in enumerate(dims))


def unpack_dims(packed: int) -> list[int]:
    dims = []
    while packed:
        dims.append((packed & 15) - 1)
        packed >>= 4
    return dims


def calls_blas(element_types: Sequence[str], macs: int, min_macs: int, vector: bool = False,
               min_vector_macs: int | None = None) -> bool:
    """Whether a (statically shaped) `dot_general` whose operands and result have these element types ("f32", ...)
    and `macs` multiply-adds becomes a BLAS call (`blas_dots`): from `min_macs`, or where it is a matrix-vector
    product (`vector`: one side's free extent is 1) from `min_vector_macs` when given."""
    floor = min_vector_macs if vector and min_vector_macs is not None else min_macs
    return len(set(element_types)) == 1 and element_types[0] in BLAS_TYPES and macs >= floor


def blas_dots(mlir: str, min_macs: int, min_vector_macs: int | None = None) -> str | None:
    """`mlir` with each float32 or float64 `dot_general` of at least `min_macs` multiply-adds (`min_vector_macs`
    for a matrix-vector product; operands and result of one type, static shapes) replaced by a call to
    `BLAS_MODULE.dot_general_<k>(lhs, rhs, lhs batching, rhs batching, lhs contracting, rhs contracting)`
    (dimensions packed by `pack_dims`), two such calls in a row that do not read each other made one call of
    `dot_pair_<k>` (`_pair_calls`); None if there is none.

    IREE 3.13's packed float32 matmul kernel reaches ~140 GFLOP/s a core on the AVX-512 machine, OpenBLAS ~185-200
    (docs/passes.md, "Float32 matmuls" and "through BLAS"); the call costs ~20 us and no copy (operands and result
    are mapped host memory)."""
    if "stablehlo.dot_general" not in mlir or not any(f"x{t}>" in mlir for t in BLAS_TYPES):
        return None
    from iree.compiler import ir
    with ir.Context():
        module = ir.Module.parse(mlir)
        dots = _ops_where(module, lambda op: op.name == "stablehlo.dot_general")
        symbols: dict[str, str] = {}  # function type -> symbol
        i64 = ir.IntegerType.get_signless(64)
        for dot in dots:
            types = [ir.RankedTensorType(v.type) for v in (*dot.operands, dot.results[0])]
            if not all(t.has_static_shape and 0 < min(t.shape, default=1) for t in types) or \
                    max(len(t.shape) for t in types) > 15:
                continue
            dims = {(m[1], m[2]): [int(d) for d in m[3].split(",") if d.strip()]
                    for m in _DIMS.finditer(str(dot.attributes["dot_dimension_numbers"]))}
            lc = dims.get(("lhs", "contracting"), [])
            macs = math.prod(types[2].shape) * math.prod(types[0].shape[d] for d in lc)
            free = [math.prod(t.shape[d] for d in range(len(t.shape))
                              if d not in dims.get((side, "batching"), []) + dims.get((side, "contracting"), []))
                    for t, side in zip(types, ("lhs", "rhs"))]
            if not calls_blas([str(t.element_type) for t in types], macs, min_macs, min(free) == 1, min_vector_macs):
                continue
            operands = list(dot.operands)
            for i, side in enumerate(("lhs", "rhs")):  # read a transposed operand in place: BLAS takes either layout
                t = operands[i].owner
                if isinstance(t, ir.Block) or t.name != "stablehlo.transpose":
                    continue
                perm = list(ir.DenseI64ArrayAttr(t.attributes["permutation"]))
                b, c = dims.get((side, "batching"), []), dims.get((side, "contracting"), [])
                free = [perm[d] for d in range(len(perm)) if d not in b and d not in c]
                if free == sorted(free):  # (the result's free dimensions keep their order)
                    dims[side, "batching"], dims[side, "contracting"] = [perm[d] for d in b], [perm[d] for d in c]
                    operands[i] = t.operands[0]
                    types[i] = ir.RankedTensorType(operands[i].type)
            sym = _import(module, symbols, "dot_general", ir.FunctionType.get(types[:2] + [i64] * 4, types[2:]))
            if sym is None:
                continue
            with ir.InsertionPoint(dot), dot.location:
                packed = _i64s([pack_dims(dims.get((side, kind), []))
                                for kind in ("batching", "contracting") for side in ("lhs", "rhs")])
                call = ir.Operation.create("func.call", results=[types[2]], operands=[*operands, *packed],
                                           attributes={"callee": ir.FlatSymbolRefAttr.get(sym)})
            dot.results[0].replace_all_uses_with(call.results[0])
            dot.erase()
        if symbols:
            _pair_calls(module, [calls for calls in _blas_runs(module) if len(calls) > 1])
        return str(module) if symbols else None


def _import(module, symbols: dict, stem: str, fn_type) -> str | None:
    """The symbol of `BLAS_MODULE.<stem>_<k>` for `fn_type`, declared on first use (`symbols`: function type ->
    symbol); None once the module exports no more of them (`BLAS_IMPORTS`)."""
    sym = symbols.get(str(fn_type))
    if sym is None and len(symbols) < BLAS_IMPORTS:
        sym = symbols[str(fn_type)] = _declare(module, f"{BLAS_MODULE}.{stem}_{len(symbols)}", fn_type)
    return sym


def _blas_runs(module) -> list[list]:
    """The module's `dot_general_<k>` calls in runs, each call of a run right after the one before (but for the
    constants holding its dimension numbers) and reading none of its results."""
    from iree.compiler import ir
    prefix = f"@{BLAS_MODULE}.dot_general_"
    runs: list[list] = []

    def reads(op, other) -> bool:
        return any(not isinstance(v.owner, ir.Block) and v.owner.operation == other.operation for v in op.operands)

    def visit(op):
        for region in op.regions:
            for block in region.blocks:
                run: list = []
                for o in block.operations:
                    if o.name == "func.call" and str(o.attributes["callee"]).startswith(prefix):
                        if run and reads(o, run[-1]):
                            run = []
                        if not run:
                            runs.append(run)
                        run.append(o)
                    elif o.name != "arith.constant":
                        run = []
                    visit(o)
    visit(module.operation)
    return runs


def _pair_calls(module, runs: list[list]) -> None:
    """Each two calls in a row of a run (`_blas_runs`: a matmul's two cotangents in a backward pass) become one
    call of `dot_pair_<k>`: one way back to Python in place of two (after a large matmul, 30-40 us of a
    value_and_grad call)."""
    from iree.compiler import ir
    symbols: dict[str, str] = {}
    for run in runs:
        for first, second in zip(run[0:-1:2], run[1::2]):
            ops = [*first.operands[:2], *second.operands[:2], *first.operands[2:], *second.operands[2:]]
            results = [first.results[0].type, second.results[0].type]
            sym = _import(module, symbols, "dot_pair", ir.FunctionType.get([v.type for v in ops], results))
            if sym is None:
                continue
            with ir.InsertionPoint(second), second.location:
                pair = ir.Operation.create("func.call", results=results, operands=ops,
                                           attributes={"callee": ir.FlatSymbolRefAttr.get(sym)})
            for old, new in zip((first, second), pair.results):
                old.results[0].replace_all_uses_with(new)
                old.erase()
