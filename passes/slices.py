"""`sliced-dots-apart`: the static slices that several matmuls of one signature read get buffers of their own.

IREE 3.13 fuses a slice into the dispatch of the matmul that reads it, with the slice's offsets as constants of the
dispatch, so matmuls alike but for their operands' offsets are as many executables, each compiled on its own. A
Python loop over a sequence (`for t in ...: h = tanh(h @ W + xs[t] @ U)`) and its gradient: 108 executables for 50
steps, 8.8 of the compile's 9.2 CPU-seconds. Through an `optimization_barrier` a slice is a copy (a transfer, no
executable) and the matmuls share one executable: 10 executables, 2.7 s (docs/log.md, 2026-11-29).
Each slice (with the views after it) is moved up to just after its source, so that the copies run together before
the dispatches: interleaved with them, each cost about 2 us a call (the 50-step gradient 100 -> 210 us), together
about 0.1 us (96 us). A module's moved copies hold at most `MOVED_BYTES` (they are all alive at once); the others
stay where they are. A matmul whose signature no other sliced one shares is left alone, and slices with offsets
computed at run time (`dynamic_slice`) are shared by IREE already.
"""
from __future__ import annotations

from collections import defaultdict

from iree.compiler import ir

from .base import Pass, PassStats, Workaround, register
from .irutil import nbytes, nested_ops, tensor_type
from .legalize import slice_chain

MOVED_BYTES = 16 << 20


def _signature(dot) -> str:
    return f"{[str(v.type) for v in dot.operands]} {dot.result.type} {dot.attributes['dot_dimension_numbers']}"


class SlicedDotsApart(Pass):
    name = "sliced-dots-apart"
    kind = "workaround"
    workaround = Workaround("3.13", "tests/test_perf_paths.py::test_matmuls_of_a_sequences_slices_share_an_executable")
    description = "static slices read by matmuls of a shared signature -> buffers of their own (one executable)"

    def apply(self, module: ir.Module, stats: PassStats) -> None:
        dots = nested_ops(module.operation, ("stablehlo.dot_general",))
        sliced = defaultdict(list)  # signature -> per dot reading static slices, (dot, operand index, chain) of each
        for dot in dots:
            reads = [(dot, i, chain) for i, v in enumerate(dot.operands)
                     if (chain := slice_chain(v, ("stablehlo.slice",))) is not None and tensor_type(v).has_static_shape]
            if reads:
                sliced[_signature(dot)].append(reads)
        barriers: dict = {}  # value -> its barrier's result (one copy for every matmul reading it)
        moved: set = set()  # ops moved up already (chains may share their first ops)
        after: dict = {}  # (source, block) -> the op the next chain of that source goes after
        budget = MOVED_BYTES
        for per_dot in sliced.values():
            if len(per_dot) < 2:
                continue
            for dot, i, chain in (read for reads in per_dot for read in reads):
                v = dot.operands[i]
                if v not in barriers:
                    block = chain[0].block
                    if budget >= nbytes(v) and all(op.block == block for op in chain):
                        budget -= nbytes(v)
                        self._move_up(chain, block, after, moved)
                    with ir.InsertionPoint.after(chain[-1]), chain[-1].location:
                        bar = ir.Operation.create("stablehlo.optimization_barrier", operands=[v], results=[v.type])
                    barriers[v] = bar.result
                    if chain[0] in moved:
                        after[(chain[0].operands[0], block)] = bar
                    stats.rewrites["barrier"] += 1
                dot.operands[i] = barriers[v]

    @staticmethod
    def _move_up(chain: list, block, after: dict, moved: set) -> None:
        """Move the ops of `chain` (a slice of a source, then views; all in `block`) to just after the source's
        definition (or the block's start, for a value of the block's or an enclosing one's), after the chains of
        that source moved before."""
        src = chain[0].operands[0]
        anchor = after.get((src, block))
        if anchor is None and not isinstance(src.owner, ir.Block) and src.owner.operation.block == block:
            anchor = src.owner.operation
        for op in chain:
            if op in moved:
                anchor = op
                continue
            if anchor is None:
                op.move_before(block.operations[0])
            else:
                op.move_after(anchor)
            moved.add(op)
            anchor = op


SLICED_DOTS_APART = register(SlicedDotsApart())
