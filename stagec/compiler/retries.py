"""Retries: the variants of a compile that get around IREE 3.13's known failures, declared as data.

A compile that fails with a known error is compiled again as a variant of the request: its text through one more
pass, or its flags with one flag added or dropped. A module's *variant* is the list of retries taken (names, in
order); `variant_flags` gives the flags a variant compiles with, and the cache keys the module by those flags and
that list (`cache.key_components(variant=...)`), so a cache hit is exactly what IREE compiled and a changed retry
(its flags, its pass) compiles again. Each retry is taken at most once per compile, in the order of `RETRIES`, and
only where it changes something: the retries end.
"""
from __future__ import annotations

import re
from typing import NamedTuple, Sequence

from .. import tuning
from .targets import DATA_TILING, STACK_1M, STACK_LIMIT

SYSTEM_LINK = "--iree-llvmcpu-link-embedded=false"  # llvm-cpu: link with the host's linker, not IREE's ELF
NO_MULTI_USE = "--iree-dispatch-creation-fuse-multi-use=false"
NO_AGGRESSIVE_FUSION = "--iree-dispatch-creation-enable-aggressive-fusion=false"
_STACK_FAILURE, _LARGE_VECTORS = "exceeded stack allocation limit", "operations with large vector sizes"
# Failures of one dispatch's code generation: the dispatches IREE formed fail so whatever comes after their forming
DISPATCH_FAILURES = (_STACK_FAILURE, _LARGE_VECTORS)
RACE = "reads workgroup memory other threads wrote with no barrier"  # (`driver`'s check of IREE's SPIR-V)
_CPU = ("cpu",)


class Retry(NamedTuple):
    """A variant of a compile for a known IREE failure: where one of `errors` (regular expressions) is in IREE's
    error on one of `backends`, compile again with `passes` run on the text (a pipeline variant) or with `add`ed and
    `drop`ped flags (a flag ending in "=" drops every flag it begins). `iree` is the version it answers, `test` the
    test that shows the failure, `why` the failure in a few words."""
    name: str
    errors: tuple[str, ...]
    why: str
    add: tuple[str, ...] = ()
    drop: tuple[str, ...] = ()
    passes: tuple[str, ...] = ()
    backends: tuple[str, ...] = ("cpu", "vulkan", "cuda")
    iree: str = "3.13"
    test: str | None = None

    def matches(self, error: str, backend: str) -> bool:
        return backend in self.backends and any(re.search(e, error) for e in self.errors)

    def flags(self, flags: Sequence[str]) -> list[str]:
        """`flags` as this retry compiles them."""
        dropped = lambda f: any(f == d or (d.endswith("=") and f.startswith(d)) for d in self.drop)
        kept = [f for f in flags if not dropped(f)]
        return kept + [a for a in self.add if a not in kept]


RETRIES: tuple[Retry, ...] = (
    Retry("materialize-sliced-dots", (_STACK_FAILURE, _LARGE_VECTORS), passes=("materialize-sliced-dots",),
          backends=_CPU, test="tests/test_numpy_linalg.py::test_matmuls_of_sliced_operands_compile_and_match_numpy",
          why="a slice fused into the packing of a matmul operand needs 64-144 KiB of stack (over `STACK_64K`)"),
    Retry("link-libm", ("error: undefined symbol:",), add=(SYSTEM_LINK,), backends=_CPU,
          why="a libm call not foreseen (floor without SSE4.1): IREE's embedded linker has no libm"),
    Retry("no-aggressive-fusion", ("restricted to workgroup distributed contexts",),
          add=(NO_AGGRESSIVE_FUSION,),
          test="tests/test_retries.py::test_grad_of_an_overlapping_max_pool_then_a_product_compiles",
          why="at O2/O3, aggressive fusion puts an overlapping max pool's maximum and its gradient's selects in one "
              "dispatch, which IREE's CPU codegen cannot distribute, with or without multi-use fusion (so this is "
              "tried first): the gradient of conv -> max pool (stride 1) -> conv or dot, e.g. JAX's "
              "examples/differentially_private_sgd.py. The CPU's `pool-gradients-unfused` compiles the known form so "
              "at once (a failed compile saved); this retry is for the forms it does not foresee"),
    Retry("no-multi-use-fusion", ("failed on workgroup distribution verification", "does not dominate this use",
                                   "op expected collapsed type to be", "to match element or self type of the",
                                   "circular dependency: input operation uses partition output"),
          add=(NO_MULTI_USE,), test="tests/test_autodiff.py::test_grad_where_a_reduced_value_is_reused_compiles",
          why="at O2/O3 with data tiling some modules fail when IREE fuses multi-use producers (others keep it: "
              "it puts layernorm in one dispatch); fusing them can also leave a yield reading a value of the parent "
              "region (tests/test_random.py::test_gamma_family_grads_match_jax), or give a boolean operand a float64 "
              "type (complex svd/eigh after mathlib-complex's scaled division, until `fuse-float64` made each "
              "division one generic, 2026-11-29), or make "
              "stream partitions that depend on each other (\"circular dependency\": int8 `lcm(x, x + 1)` under jit, "
              "tests/test_retries.py::test_lcm_of_related_int8_operands_compiles)"),
    Retry("reductions-apart", (RACE,), passes=("reduction-results-apart",), backends=("vulkan",),
          test="tests/test_lavapipe.py::test_max_pool_gradients_read_their_window_maxima_synced",
          why="IREE's SPIR-V kept a reduction's result in workgroup memory beside the consumer broadcasting it and "
              "read it from other threads with no barrier (a max pool's gradient): found in the SPIR-V where the "
              "driver reads it (lavapipe), each reduction then a dispatch of its own"),
    Retry("elementwise-bindings", (r"binds \d+ buffers; the cuda runtime binds at most",),
          passes=("scalar-uses-apart", "elementwise-bindings-16"), backends=("cuda",),
          test="tests/test_gpu.py::test_long_elementwise_chains_compile_for_cuda_within_16_bindings",
          why="IREE fuses a long elementwise chain (40 float64 terms summed) into one dispatch of more buffers than "
              "CUDA's runtime binds (16), or splits a long scalar run (a scalar sine's gradient at 1e10) into "
              "dispatches of as many: elementwise runs cut at 12 bindings, scalars read 3 times or more apart"),
    Retry("stack-1m", (_STACK_FAILURE,), drop=(STACK_LIMIT,), add=(STACK_1M,), backends=_CPU,
          why="IREE's CPU sort keeps rows of its operands on the stack (local-task workers get `WORKER_STACK`)"),
    Retry("no-data-tiling", (_STACK_FAILURE, _LARGE_VECTORS), drop=(DATA_TILING,), backends=_CPU,
          why="a pattern not foreseen: unpacked matmuls are slower, never wrong"),
    Retry("loops-unplaced", ("failed to legalize unresolved target materialization",), passes=("loops-unplaced",),
          backends=("cpu", "vulkan"),
          test="tests/test_retries.py::test_a_placed_loop_iree_cannot_convert_compiles_unplaced",
          why="`loops-on-one-device` places a function holding a loop on the device; a form IREE then fails to "
              "convert to streams not foreseen compiles as before, its loop copying its carried values"),
    Retry("no-tuning-spec", ("tuning spec", "source executable"), drop=(tuning.FLAG,),
          why="the tuning spec is a speed-up only: never a reason to fail"),
    Retry("crash-no-data-tiling", (r"Error code: -\d+",), drop=(DATA_TILING,),
          why="iree-compile now and then segfaults in MaterializeDeviceEncodingPass on vmap(grad(cholesky)) modules "
              "with data tiling; without it they compile every time (docs/linalg.md)"),
)


def retry(name: str) -> Retry:
    """The retry called `name` (KeyError if none is declared)."""
    for r in RETRIES:
        if r.name == name:
            return r
    raise KeyError(name)


def variant_flags(flags: Sequence[str], variant: Sequence[str]) -> list[str]:
    """The flags the compile of `flags` taken as `variant` (retry names, in order) gives IREE."""
    flags = list(flags)
    for name in variant:
        flags = retry(name).flags(flags)
    return flags


def variant_passes(variant: Sequence[str]) -> list[str]:
    """The passes `variant` runs on the request's text, in order."""
    return [p for name in variant for p in retry(name).passes]
