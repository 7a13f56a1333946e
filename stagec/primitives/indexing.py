"""Indexing primitives: XLA's `gather` and `scatter` (index vectors along the last dimension of the indices)."""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from .. import lowering as L
from ..core import Const, Primitive, ShapedArray, aval_of
from . import _ad
from . import elementwise as ew
from .structural import broadcast_in_dim


def _gather_rule(x: ShapedArray, idx: ShapedArray, *, offset_dims: tuple, collapsed_slice_dims: tuple,
                 start_index_map: tuple, slice_sizes: tuple) -> ShapedArray:
    """XLA gather with `index_vector_dim` = the last dimension of `idx`."""
    if _dt.kind(idx.dtype) not in "iu" or idx.ndim < 1 or idx.shape[-1] != len(start_index_map):
        raise TypeError(f"gather: indices {idx.str_short()} need an integer last dimension of size "
                        f"{len(start_index_map)}")
    if len(slice_sizes) != x.ndim or any(not 0 <= s <= d for s, d in zip(slice_sizes, x.shape)):
        raise TypeError(f"gather: slice_sizes {slice_sizes} do not fit shape {x.shape}")
    if any(slice_sizes[d] > 1 for d in collapsed_slice_dims):
        raise TypeError(f"gather: collapsed dimensions {collapsed_slice_dims} must have slice size <= 1")
    batch = list(idx.shape[:-1])
    offsets = [s for i, s in enumerate(slice_sizes) if i not in collapsed_slice_dims]
    if len(offset_dims) != len(offsets):
        raise TypeError(f"gather: offset_dims {offset_dims} must name {len(offsets)} output dimensions")
    out, it_b, it_o = [], iter(batch), iter(offsets)
    for i in range(len(batch) + len(offsets)):
        out.append(next(it_o) if i in offset_dims else next(it_b))
    return x.update(shape=out)


gather_p = Primitive("gather", _gather_rule)


@gather_p.def_lowering
def _gather(ctx: L.Ctx, x, idx, *, offset_dims, collapsed_slice_dims, start_index_map, slice_sizes):
    ir = L.mlir()
    xav, iav = ctx.avals_in
    if L.DYNAMIC in (*xav.shape, *iav.shape):  # (gather is not shape-polymorphic: `eager.POLYMORPHIC`)
        raise NotImplementedError("gather with dynamic dimensions: its starts would not be clamped (stagec.numpy "
                                  "indexing relies on the clamp)")
    if iav.size:
        # Each start clamped into [0, dim - slice size], as StableHLO's gather defines it: IREE 3.13 reads past the
        # operand instead (an index of 5 into 4 values gave 0, 2^31 - 1 crashed the process).
        top = np.iinfo(iav.dtype).max
        hi = np.array([min(xav.shape[d] - slice_sizes[d], top) for d in start_index_map], iav.dtype)
        his = ctx.op1("stablehlo.broadcast_in_dim", [L.constant(hi, ShapedArray(hi.shape, iav.dtype))],
                      result_avals=[iav], attributes={"broadcast_dimensions": L.i64s([iav.ndim - 1])})
        idx = ctx.op1("stablehlo.clamp", [L.full(0, iav.update(shape=())), idx, his], result_avals=[iav])
    dn = ir.Attribute.parse(
        f"#stablehlo.gather<offset_dims = {L.dims(offset_dims)}, collapsed_slice_dims = {L.dims(collapsed_slice_dims)}, "
        f"start_index_map = {L.dims(start_index_map)}, index_vector_dim = {ctx.avals_in[1].ndim - 1}>")
    return [ctx.op1("stablehlo.gather", [x, idx], attributes={
        "dimension_numbers": dn, "slice_sizes": L.i64s(slice_sizes), "indices_are_sorted": ir.BoolAttr.get(False)})]


def _scatter_rule(x: ShapedArray, idx: ShapedArray, upd: ShapedArray, *, update_window_dims: tuple,
                  inserted_window_dims: tuple, scatter_dims_to_operand_dims: tuple, mode: str) -> ShapedArray:
    """XLA scatter with `index_vector_dim` = the last dimension of `idx`; `mode` combines old and new values."""
    if mode not in ("set", "add", "mul", "min", "max"):
        raise ValueError(f"scatter: unknown mode {mode!r}")
    if upd.dtype != x.dtype:
        raise TypeError(f"scatter: updates dtype {upd.dtype} differs from operand dtype {x.dtype}")
    if _dt.kind(idx.dtype) not in "iu" or idx.ndim < 1 or idx.shape[-1] != len(scatter_dims_to_operand_dims):
        raise TypeError(f"scatter: indices {idx.str_short()} need an integer last dimension of size "
                        f"{len(scatter_dims_to_operand_dims)}")
    if upd.ndim != idx.ndim - 1 + len(update_window_dims) or len(update_window_dims) + len(inserted_window_dims) != x.ndim:
        raise TypeError(f"scatter: updates of shape {upd.shape} do not match indices {idx.shape} and "
                        f"update_window_dims {update_window_dims}")
    window = _window_sizes(x.shape, upd.shape, update_window_dims, inserted_window_dims)
    if any(w > d for w, d in zip(window, x.shape)):
        raise TypeError(f"scatter: update window {window} is larger than the operand's shape {x.shape}")
    return x.strip_weak() if not (x.weak_type and upd.weak_type) else x


scatter_p = Primitive("scatter", _scatter_rule)


def _raw_scatter(ctx: L.Ctx, x, idx, upd, aval: ShapedArray, dn, mode: str):
    ir = L.mlir()
    op = ctx.op("stablehlo.scatter", [x, idx, upd], result_avals=[aval], attributes={
        "scatter_dimension_numbers": dn, "indices_are_sorted": ir.BoolAttr.get(False),
        "unique_indices": ir.BoolAttr.get(False)}, regions=1)
    s = aval.update(shape=(), weak_type=False)
    block = L.scalar_block(op, [s, s])
    with ir.InsertionPoint(block):
        old, new = block.arguments
        r = new if mode == "set" else L.combine(ctx, L.combiner(mode, s.dtype), old, new, s)
        ir.Operation.create("stablehlo.return", results=[], operands=[r])
    return op.result


@scatter_p.def_lowering
def _scatter(ctx: L.Ctx, x, idx, upd, *, update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims, mode):
    """IREE 3.13's CPU scatter writes into its operand's buffer even when that is a function argument (the
    caller's array), so never scatter into `x`: scatter into a fresh neutral-element tensor and combine.
    IREE checks no bounds (it checks the flattened offset at most: [0, 4] into (3, 4) wrote at [1, 0], a row
    index of 10^6 crashed the process), so an index vector whose window does not fit is sent into a padding past
    the first scattered dimension's end, sliced off after: dropped, as StableHLO's scatter defines it. The scatter
    itself is emitted in the one form IREE compiles (`_leading_form`)."""
    ir = L.mlir()
    aval, iav, uav = ctx.avals_in[0].update(weak_type=False), ctx.avals_in[1], ctx.avals_in[2]
    dims = scatter_dims_to_operand_dims
    if iav.size == 0 or uav.size == 0:
        return [x]
    padded, perm, uwd, iwd = aval.shape, list(range(aval.ndim)), update_window_dims, inserted_window_dims
    if dims:
        window = _window_sizes(aval.shape, uav.shape, update_window_dims, inserted_window_dims)
        idx, iav = _indices_into_padding(ctx, idx, iav, aval.shape, dims, [window[d] for d in dims])
        padded = tuple(s + (window[d] if d == dims[0] else 0) for d, s in enumerate(aval.shape))
        form = _leading_form(ctx, idx, iav, upd, uav, aval.shape, update_window_dims, inserted_window_dims, dims,
                             window)
        if form is not None:
            idx, iav, upd, uav, perm = form
            dims = iwd = tuple(range(iav.shape[-1]))
            uwd = tuple(range(1, uav.ndim))
    dn = ir.Attribute.parse(
        f"#stablehlo.scatter<update_window_dims = {L.dims(uwd)}, inserted_window_dims = "
        f"{L.dims(iwd)}, scatter_dims_to_operand_dims = {L.dims(dims)}, "
        f"index_vector_dim = {iav.ndim - 1}>")
    inner = tuple(padded[d] for d in perm)

    def scattered(value, u, a: ShapedArray, how: str):
        out = _raw_scatter(ctx, L.splat(ctx, value, a.update(shape=inner)), idx, u, a.update(shape=inner), dn, how)
        if perm != sorted(perm):
            out = ctx.op1("stablehlo.transpose", [out], result_avals=[a.update(shape=padded)],
                          attributes={"permutation": L.i64s(np.argsort(perm))})
        if padded == a.shape:
            return out
        return ctx.op1("stablehlo.slice", [out], result_avals=[a], attributes={
            "start_indices": L.i64s([0] * a.ndim), "limit_indices": L.i64s(a.shape), "strides": L.i64s([1] * a.ndim)})
    if mode == "set":
        m_aval = aval.update(dtype=np.int8)
        mask = scattered(0, L.splat(ctx, 1, uav.update(dtype=np.int8, weak_type=False)), m_aval, "set")
        vals = scattered(0, upd, aval, "set")
        pred = L.compare(ctx, mask, L.splat(ctx, 0, m_aval), "NE", m_aval)
        return [ctx.op1("stablehlo.select", [pred, vals, x])]
    s = scattered(_dt.identity({"add": "sum", "mul": "prod"}.get(mode, mode), aval.dtype), upd, aval, mode)
    return [L.combine(ctx, L.combiner(mode, aval.dtype), x, s, aval)]


def _leading_form(ctx: L.Ctx, idx, iav: ShapedArray, upd, uav: ShapedArray, shape, update_window_dims,
                  inserted_window_dims, dims, window):
    """The scatter as IREE 3.13 compiles every one: the indexed dimensions leading the operand and inserted (one
    element each), whole windows along the others, trailing the updates. Else it failed
    ("expected indices to be equal to batch rank or batch rank + 1", "shape of update value ... must match"): a vmap of
    `.at[i].set` over the operand only, of `dynamic_update_slice` with a batched start. A window that is not whole
    along a dimension is scattered element by element (its offsets added to the index vectors; a window sent into
    the padding stays there). Returns (indices, their aval, updates, their aval, the operand's permutation), or None
    where the scatter has that form already."""
    r, nb = len(shape), iav.ndim - 1
    whole = [d for d in range(r) if d not in dims and d not in inserted_window_dims and window[d] == shape[d]]
    lead = list(dims) + [d for d in range(r) if d not in dims and d not in whole]
    if tuple(lead) == tuple(range(len(dims))) and set(inserted_window_dims) == set(dims) and \
            tuple(update_window_dims) == tuple(range(nb, uav.ndim)):
        return None
    it = iav.dtype
    n = int(np.prod(iav.shape[:-1], dtype=np.int64))
    # Updates as (batch..., the lead dimensions' windows..., the whole ones...), then one batch of n * p.
    win_of = dict(zip([d for d in range(r) if d not in inserted_window_dims], update_window_dims))
    batch_pos = [p for p in range(uav.ndim) if p not in update_window_dims]
    order = batch_pos + [win_of[d] for d in lead if d in win_of] + [win_of[d] for d in whole]
    p = int(np.prod([window[d] for d in lead], dtype=np.int64))
    if order != list(range(uav.ndim)):
        upd = ctx.op1("stablehlo.transpose", [upd], result_avals=[uav.update(shape=tuple(uav.shape[o] for o in order))],
                      attributes={"permutation": L.i64s(order)})
    uav = uav.update(shape=(n * p,) + tuple(shape[d] for d in whole))
    upd = ctx.op1("stablehlo.reshape", [upd], result_avals=[uav])
    # Index vectors: the given component for an indexed dimension, 0 for another, plus each offset of the window.
    k = len(lead)
    flat = ctx.op1("stablehlo.reshape", [idx], result_avals=[iav.update(shape=(n, len(dims)))])
    one = iav.update(shape=(n, 1))
    cols = [ctx.op1("stablehlo.slice", [flat], result_avals=[one], attributes={
        "start_indices": L.i64s([0, dims.index(d)]), "limit_indices": L.i64s([n, dims.index(d) + 1]),
        "strides": L.i64s([1, 1])}) if d in dims else L.full(0, one) for d in lead]
    base = cols[0] if k == 1 else ctx.op1("stablehlo.concatenate", cols, result_avals=[iav.update(shape=(n, k))],
                                          attributes={"dimension": L.i64(1)})
    out = iav.update(shape=(n, p, k))
    base = ctx.op1("stablehlo.broadcast_in_dim", [base], result_avals=[out], attributes={"broadcast_dimensions": L.i64s([0, 2])})
    if p > 1:
        offsets = np.indices([window[d] for d in lead]).reshape(k, p).T.astype(it)
        off = ctx.op1("stablehlo.broadcast_in_dim", [L.constant(offsets, iav.update(shape=(p, k)))], result_avals=[out],
                      attributes={"broadcast_dimensions": L.i64s([1, 2])})
        base = ctx.op1("stablehlo.add", [base, off], result_avals=[out])
    iav = iav.update(shape=(n * p, k))
    return ctx.op1("stablehlo.reshape", [base], result_avals=[iav]), iav, upd, uav, lead + whole


def _indices_into_padding(ctx: L.Ctx, idx, iav: ShapedArray, shape, dims, window):
    """`idx` (int32 or int64) with each index vector whose window does not fit `shape` replaced by (shape[dims[0]],
    0, ...): a place in the padding `_scatter` adds past the first scattered dimension."""
    wide = iav.dtype.itemsize == 8 or iav.dtype == np.uint32 or max(shape) >= 2 ** 31 - 1
    it = np.dtype(np.int64 if wide else np.int32)
    a = iav.update(dtype=it, weak_type=False)
    if iav.dtype != it:
        idx = ctx.op1("stablehlo.convert", [idx], result_avals=[a])
    row = lambda v: ctx.op1("stablehlo.broadcast_in_dim", [L.constant(np.array(v, it), ShapedArray((len(v),), it))],
                            result_avals=[a], attributes={"broadcast_dimensions": L.i64s([a.ndim - 1])})
    fits = L.bool_op(ctx, "and", L.compare(ctx, idx, L.splat(ctx, 0, a), "GE", a),
                     L.compare(ctx, idx, row([shape[d] - w for d, w in zip(dims, window)]), "LE", a), shape=a.shape)
    one = a.update(shape=a.shape[:-1] + (1,), dtype=np.bool_)
    cols = [ctx.op1("stablehlo.slice", [fits], result_avals=[one], attributes={
        "start_indices": L.i64s([0] * (a.ndim - 1) + [j]), "limit_indices": L.i64s(a.shape[:-1] + (j + 1,)),
        "strides": L.i64s([1] * a.ndim)}) for j in range(a.shape[-1])]
    ok = cols[0]
    for c in cols[1:]:
        ok = L.bool_op(ctx, "and", ok, c, shape=one.shape)
    ok = ctx.op1("stablehlo.broadcast_in_dim", [ok], result_avals=[a.update(dtype=np.bool_)],
                 attributes={"broadcast_dimensions": L.i64s(range(a.ndim))})
    away = row([shape[dims[0]]] + [0] * (len(dims) - 1))
    return ctx.op1("stablehlo.select", [ok, idx, away], result_avals=[a]), a


# ---------------------------------------------------------------- differentiation rules


def _in_bounds(idx, operand_shape, dims, window) -> object:
    """Per index vector (idx's batch shape): whether the window at it lies inside the operand."""
    from .reductions import reduce_and
    iav = aval_of(idx)
    hi = np.array([operand_shape[d] - w for d, w in zip(dims, window)], iav.dtype)
    his = broadcast_in_dim(Const(hi, ShapedArray(hi.shape, iav.dtype)), iav.shape, (iav.ndim - 1,))
    ok = ew.and_p.bind(ew.ge(idx, _ad.zeros(iav)), ew.le(idx, his))
    return reduce_and(ok, (iav.ndim - 1,))


def _clamped(idx, operand_shape, dims, window):
    """Indices clamped as gather clamps them (so a scatter writes where the gather read)."""
    iav = aval_of(idx)
    hi = np.array([max(operand_shape[d] - w, 0) for d, w in zip(dims, window)], iav.dtype)
    his = broadcast_in_dim(Const(hi, ShapedArray(hi.shape, iav.dtype)), iav.shape, (iav.ndim - 1,))
    return ew.clamp(_ad.zeros(iav), idx, his)


def _gather_jvp(primals, tangents, **params):
    x, idx = primals
    out = gather_p.bind(x, idx, **params)
    return out, None if tangents[0] is None else gather_p.bind(tangents[0], idx, **params)


def _gather_transpose(ct, x, idx, *, offset_dims, collapsed_slice_dims, start_index_map, slice_sizes):
    if ct is None or not _ad.is_undefined(x):
        return [None, None]
    shape = x.aval.shape
    idx = _clamped(idx, shape, start_index_map, [slice_sizes[d] for d in start_index_map])
    return [scatter(_ad.zeros(x.aval), idx, ct, update_window_dims=offset_dims,
                    inserted_window_dims=collapsed_slice_dims, scatter_dims_to_operand_dims=start_index_map,
                    mode="add"), None]


def _window_sizes(x_shape, upd_shape, update_window_dims, inserted_window_dims):
    it = iter(upd_shape[d] for d in update_window_dims)
    return tuple(1 if d in inserted_window_dims else next(it) for d in range(len(x_shape)))


def _gather_updates(ct, idx, upd_aval, *, update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims):
    """The cotangent of scatter updates: ct read back where they went (zero where they were dropped)."""
    shape = aval_of(ct).shape
    sizes = _window_sizes(shape, upd_aval.shape, update_window_dims, inserted_window_dims)
    window = [sizes[d] for d in scatter_dims_to_operand_dims]
    g = gather(ct, idx, offset_dims=update_window_dims, collapsed_slice_dims=inserted_window_dims,
               start_index_map=scatter_dims_to_operand_dims, slice_sizes=sizes)
    ok = _in_bounds(idx, shape, scatter_dims_to_operand_dims, window)
    batch = [d for d in range(upd_aval.ndim) if d not in update_window_dims]
    return ew.select(broadcast_in_dim(ok, upd_aval.shape, batch), g, _ad.zeros(upd_aval))


def _scatter_jvp(primals, tangents, *, mode, **dn):
    x, idx, upd = primals
    tx, _, tu = tangents
    out = scatter_p.bind(x, idx, upd, mode=mode, **dn)
    if mode in ("add", "set"):
        tx, tu = _ad.instantiate(tx, aval_of(x)), _ad.instantiate(tu, aval_of(upd))
        return out, scatter_p.bind(tx, idx, tu, mode=mode, **dn)
    if mode == "mul" and tu is None:
        return out, scatter_p.bind(tx, idx, upd, mode=mode, **dn)
    raise NotImplementedError(f"differentiation of scatter with mode={mode!r} is not implemented"
                              + (" with respect to the updates" if mode == "mul" else ""))


def _scatter_transpose(ct, x, idx, upd, *, mode, **dn):
    if ct is None:
        return [None, None, None]
    if mode == "mul":
        if _ad.is_undefined(upd):
            raise TypeError("scatter mul is not linear in its updates")
        return [scatter_p.bind(ct, idx, upd, mode=mode, **dn), None, None]
    u_aval = upd.aval if _ad.is_undefined(upd) else aval_of(upd)
    ct_x = None
    if _ad.is_undefined(x):  # set: the overwritten positions get nothing
        ct_x = ct if mode == "add" else scatter_p.bind(ct, idx, _ad.zeros(u_aval), mode="set", **dn)
    ct_u = _gather_updates(ct, idx, u_aval, **dn) if _ad.is_undefined(upd) else None
    return [ct_x, None, ct_u]


gather_p.def_jvp(_gather_jvp)


# ---------------------------------------------------------------- NumPy rule (`Primitive.def_host`)

def _gather_host(x, idx, *, offset_dims, collapsed_slice_dims, start_index_map, slice_sizes):
    """XLA gather on the host: each start clamped to [0, dim - slice size] (as `stablehlo.gather`), its window
    cut out, the collapsed dimensions dropped, the batch and window dimensions placed as `offset_dims` says.
    Data movement: the compiled op's bits."""
    batch = idx.shape[:-1]
    starts = idx.reshape(-1, idx.shape[-1]).astype(np.int64)
    nb = starts.shape[0]
    grids = []
    for d in range(x.ndim):
        shape = [nb] + [1] * x.ndim
        start = np.zeros(shape, np.int64)
        if d in start_index_map:
            start = np.clip(starts[:, start_index_map.index(d)], 0, x.shape[d] - slice_sizes[d]).reshape(shape)
        shape[0], shape[1 + d] = 1, slice_sizes[d]
        grids.append(start + np.arange(slice_sizes[d]).reshape(shape))
    window = x[tuple(grids)]  # (batch, *slice_sizes)
    offsets = tuple(s for i, s in enumerate(slice_sizes) if i not in collapsed_slice_dims)
    window = window.reshape(batch + offsets)
    order, b, o = [], 0, len(batch)  # output dimension -> the window's
    for i in range(len(batch) + len(offsets)):
        if i in offset_dims:
            order.append(o)
            o += 1
        else:
            order.append(b)
            b += 1
    return window.transpose(order)


def _take_axis(x: ShapedArray, idx: ShapedArray, params: dict) -> int | None:
    """The axis of a gather that is a take along one axis (one start index, that axis collapsed, the others whole,
    the batch where `np.take` puts it), else None."""
    sim = params["start_index_map"]
    if len(sim) != 1:
        return None
    a, nb, sizes = sim[0], idx.ndim - 1, params["slice_sizes"]
    if tuple(params["collapsed_slice_dims"]) == (a,) and sizes[a] == 1 and all(
            s == d for i, (s, d) in enumerate(zip(sizes, x.shape)) if i != a) and \
            tuple(params["offset_dims"]) == (*range(a), *range(a + nb, x.ndim - 1 + nb)):
        return a
    return None


def _point_order(x: ShapedArray, idx: ShapedArray, params: dict) -> tuple | None:
    """For a gather of single elements (every dimension collapsed, slices of 1, an index coordinate per dimension:
    `take_along_axis`, `x[i, j]` of arrays), the coordinate each dimension reads, else None."""
    sim = tuple(params["start_index_map"])
    if params["offset_dims"] or sorted(params["collapsed_slice_dims"]) != list(range(x.ndim)) or \
            any(s != 1 for s in params["slice_sizes"]) or sorted(sim) != list(range(x.ndim)) or \
            idx.shape[-1:] != (x.ndim,) or 0 in x.shape or x.ndim == 0:
        return None
    return tuple(sim.index(d) for d in range(x.ndim))


def _gather_bound(avals, params):
    """`_gather_host` for one signature of a take along one axis (`ndarray.take` with clipped indices) or of single
    elements (NumPy's indexing by each coordinate clamped into its dimension, as `stablehlo.gather` clamps)."""
    a, batch = _take_axis(avals[0], avals[1], params), avals[1].shape[:-1]
    if a is not None:
        return lambda x, i: x.take(i.reshape(batch), a, None, "clip")
    order, top = _point_order(avals[0], avals[1], params), [d - 1 for d in avals[0].shape]
    return lambda x, i: x[tuple(np.minimum(np.maximum(i[..., k], 0), t) for k, t in zip(order, top))]


# Only takes along one axis (`x[k]`, `take`) and gathers of single elements (`take_along_axis`): there one or two
# NumPy steps beat a kernel's call and its index upload (`x[a, b]` on 4x4 90 -> 81 us); a general gather's rule
# (several NumPy steps) does not, and takes its kernel as before.
gather_p.def_host(_gather_host, lambda avals, params: avals[1].dtype != np.uint64 and (
    _take_axis(avals[0], avals[1], params) is not None or _point_order(avals[0], avals[1], params) is not None),
    _gather_bound)
gather_p.def_transpose(_gather_transpose)
scatter_p.def_jvp(_scatter_jvp)
scatter_p.def_transpose(_scatter_transpose)


# ---------------------------------------------------------------- strict wrappers (stagec.lax)


def gather(x, indices, *, offset_dims, collapsed_slice_dims, start_index_map, slice_sizes):
    """XLA gather; the index vectors lie along the last dimension of `indices` (clamped into bounds)."""
    return gather_p.bind(x, indices, offset_dims=tuple(offset_dims), collapsed_slice_dims=tuple(collapsed_slice_dims),
                         start_index_map=tuple(start_index_map), slice_sizes=tuple(map(int, slice_sizes)))


def scatter(x, indices, updates, *, update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims,
            mode: str = "set"):
    """XLA scatter combining with `mode` (set/add/mul/min/max); out-of-bounds updates are dropped."""
    return scatter_p.bind(x, indices, updates, update_window_dims=tuple(update_window_dims),
                          inserted_window_dims=tuple(inserted_window_dims),
                          scatter_dims_to_operand_dims=tuple(scatter_dims_to_operand_dims), mode=mode)


# ---------------------------------------------------------------- batching rules

from ._batch import at_front, axis_size, example_shape  # noqa: E402
from .structural import broadcasted_iota, concatenate  # noqa: E402


def _with_example_index(idx, n: int):
    """Indices (batch first) with each index vector prefixed by its example's number, as JAX's rules do."""
    shape = aval_of(idx).shape
    return concatenate([broadcasted_iota(aval_of(idx).dtype, shape[:-1] + (1,), 0), idx], len(shape) - 1)


@gather_p.def_batch
def _gather_batch(args, dims, *, offset_dims, collapsed_slice_dims, start_index_map, slice_sizes):
    (x, idx), (xd, id_) = args, dims
    n = axis_size(args, dims)
    up = lambda t: tuple(a + 1 for a in t)
    if id_ is None:  # the batch axis is one more slice dimension, taken whole and put first
        return gather(at_front(x, xd, n), idx, offset_dims=(0,) + up(offset_dims),
                      collapsed_slice_dims=up(collapsed_slice_dims), start_index_map=up(start_index_map),
                      slice_sizes=(n,) + tuple(slice_sizes)), 0
    idx = at_front(idx, id_, n)
    if xd is not None and n == 0:  # a batch of no examples: the example-number slice of size 1 would not fit
        example = _gather_rule(aval_of(x).update(shape=example_shape(x, xd)), aval_of(idx).update(shape=aval_of(idx).shape[1:]),
                               offset_dims=offset_dims, collapsed_slice_dims=collapsed_slice_dims,
                               start_index_map=start_index_map, slice_sizes=slice_sizes)
        return _ad.zeros(example.update(shape=(0,) + example.shape)), 0
    if xd is None:  # the batch axis is the first index batch dimension, first in the result
        return gather(x, idx, offset_dims=up(offset_dims), collapsed_slice_dims=collapsed_slice_dims,
                      start_index_map=start_index_map, slice_sizes=slice_sizes), 0
    return gather(at_front(x, xd, n), _with_example_index(idx, n), offset_dims=up(offset_dims),
                  collapsed_slice_dims=(0,) + up(collapsed_slice_dims), start_index_map=(0,) + up(start_index_map),
                  slice_sizes=(1,) + tuple(slice_sizes)), 0


@scatter_p.def_batch
def _scatter_batch(args, dims, *, update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims, mode):
    (x, idx, upd), (xd, id_, ud) = args, dims
    n = axis_size(args, dims)
    up = lambda t: tuple(a + 1 for a in t)
    x, upd = at_front(x, xd, n), at_front(upd, ud, n)
    if id_ is None:  # the batch axis is one more window dimension
        return scatter(x, idx, upd, update_window_dims=(0,) + up(update_window_dims),
                       inserted_window_dims=up(inserted_window_dims),
                       scatter_dims_to_operand_dims=up(scatter_dims_to_operand_dims), mode=mode), 0
    if n == 0:  # a batch of no examples: nothing to update (the example-number window of size 1 would not fit)
        return x, 0
    idx = _with_example_index(at_front(idx, id_, n), n)
    return scatter(x, idx, upd, update_window_dims=up(update_window_dims),
                   inserted_window_dims=(0,) + up(inserted_window_dims),
                   scatter_dims_to_operand_dims=(0,) + up(scatter_dims_to_operand_dims), mode=mode), 0
