"""Named calls (`stagec.named`): `host-lapack` answers LU, Cholesky, eigh, SVD and QR with LAPACK on the host (the CPU's
offload, `LAPACK_MODULE`); `inline-calls` puts every other named call's own ops in its place (every target, first).

IREE 3.13 runs `_lu`'s loop as ~4 dispatches a column and each substitution as 1-2 a row, each a few microseconds
(float32 `inv` of 4x4 ~90 us, 64x64 ~1.4 ms), eigh's Jacobi sweeps 5 ms at 64x64; LAPACK takes 1-300 us
(docs/linalg.md)."""
from __future__ import annotations

from iree.compiler import ir, passmanager

from stagec.lowering import LAPACK_BATCH_PER_ORDER, LAPACK_IMPORTS, LAPACK_MODULE, LAPACK_TYPES, NAMED, lapack_offloaded

from .base import Pass, PassStats, register
from .legalize import _declare

# What each named function becomes: the host module's export (operands and results as the named function's).
HOST_LAPACK = {"lapack.getrf": "getrf", "lapack.getrs": "getrs", "lapack.getri": "getri", "lapack.solve": "solve",
               "lapack.inv": "inv", "lapack.det": "det", "lapack.slogdet": "slogdet", "lapack.potrf": "potrf", "lapack.potrf_sym": "potrf_sym",
               "lapack.syevd": "syevd", "lapack.syevd_sym": "syevd_sym", "lapack.gesdd": "gesdd", "lapack.gesdd_full": "gesdd_full",
               "lapack.gesdd_vals": "gesdd_vals", "lapack.geqrf": "geqrf", "lapack.geqrf_complete": "geqrf_complete",
               "lapack.geqrf_r": "geqrf_r"}
# Which calls go to the host, by shape only: `lowering.lapack_offloaded` (eager calls read it too, without this
# module's IR imports).
offloaded = lapack_offloaded


def _named(module: ir.Module) -> dict[str, ir.Operation]:
    return {ir.StringAttr(op.attributes["sym_name"]).value: op for op in module.body.operations
            if op.operation.name == "func.func" and NAMED in op.attributes}


def _calls(module: ir.Module, names) -> list:
    found = []

    def visit(op):
        if op.name == "func.call" and ir.FlatSymbolRefAttr(op.attributes["callee"]).value in names:
            found.append(op)
        return ir.WalkResult.ADVANCE
    module.operation.walk(visit)
    return found


def _function(op):
    while op.name != "func.func":
        op = op.parent
    return op


def host_lapack(module: ir.Module) -> int:
    """Each call of a named LU, Cholesky or eigh function (`HOST_LAPACK`) on float or complex matrices of static shape
    that `offloaded` takes, made a call of `LAPACK_MODULE`; how many."""
    fns = {sym: f for sym, f in _named(module).items() if ir.StringAttr(f.attributes[NAMED]).value in HOST_LAPACK}
    symbols: dict[tuple, str] = {}  # (export, function type) -> import symbol
    n = 0
    for call in _calls(module, fns):
        if NAMED in _function(call).attributes:  # (inside a named function: replaced with it, or inlined)
            continue
        kind = HOST_LAPACK[ir.StringAttr(fns[ir.FlatSymbolRefAttr(call.attributes["callee"]).value]
                                         .attributes[NAMED]).value]
        types = [ir.RankedTensorType(v.type) for v in call.operands]
        a = types[0]
        batch = 1
        for d in a.shape[:-2]:
            batch *= d
        if not (all(t.has_static_shape for t in types) and str(a.element_type) in LAPACK_TYPES
                and offloaded(kind, a.shape[-1], batch)):
            continue
        fn_type = ir.FunctionType.get(types, [r.type for r in call.results])
        sym = symbols.get((kind, str(fn_type)))
        if sym is None:
            k = sum(1 for s in symbols.values() if s.startswith(f"{LAPACK_MODULE}.{kind}_"))
            if k == LAPACK_IMPORTS:
                continue
            sym = symbols[kind, str(fn_type)] = _declare(module, f"{LAPACK_MODULE}.{kind}_{k}", fn_type)
        call.attributes["callee"] = ir.FlatSymbolRefAttr.get(sym)
        n += 1
    return n


def inline_calls(module: ir.Module) -> int:
    """Every named function's calls replaced by its ops, the functions dropped; how many functions there were."""
    named = _named(module)
    if named:
        pm = passmanager.PassManager.parse("builtin.module(inline{default-pipeline=''})")
        pm.run(module.operation)
        for f in _named(module).values():
            f.erase()
    return len(named)


class HostLapack(Pass):
    name, kind = "host-lapack", "offload"
    description = (f"LU, Cholesky, eigh, SVD and QR of up to {LAPACK_BATCH_PER_ORDER} x n matrices of order n call LAPACK on "
                   f"the host ({LAPACK_MODULE})")

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        stats.rewrites[self.name] += host_lapack(module)


class InlineCalls(Pass):
    name, kind = "inline-calls", "legalize"
    description = "named calls no offload answered run their own ops (inlined)"

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        stats.rewrites[self.name] += inline_calls(module)


register(HostLapack())
register(InlineCalls())
