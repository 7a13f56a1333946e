"""Targets: each backend's IREE target, its default flags, and the pipeline it declares (which registered passes
run on its modules, in order). No pass asks where it runs: a target that does not want one omits it."""
from __future__ import annotations

import functools
import hashlib
import os
import platform
from typing import NamedTuple

# Data tiling by IREE's dispatch-creation path. (Its global-optimization path, `--iree-global-opt-data-tiling`, gave a
# transformer step fewer executables and faster calls, but failed on a VAE's loss, "large vector sizes", and the
# module was compiled again unpacked: docs/log.md, 2026-12-05.)
HOST, DATA_TILING = "--iree-llvmcpu-target-cpu=host", "--iree-dispatch-creation-data-tiling"
# IREE demotes f64 to f32 by default; under enable_x64 a float64 must stay float64 (without x64 no f64 reaches
# IREE, so the flag changes nothing then).
KEEP_F64 = "--iree-input-demote-f64-to-f32=false"
# llvm-cpu: the stack a tile may keep, in bytes. IREE's default (32 KiB) suits its own 128 KiB worker stacks; ours
# are `driver.WORKER_STACK` (4 MiB). Only a check: the machine code is the same under either limit (the executables
# of 4 modules byte-identical under 64 KiB and 1 MiB, 2026-11-28), but a module over it failed once and compiled
# again as a retry. 64 KiB is the target's; `driver.module_flags` gives a module with no sliced product operand 1 MiB
# (a sliced one keeps 64 KiB, over which `materialize-sliced-dots` materializes the slice: its operand then packs
# as any other).
STACK_LIMIT = "--iree-llvmcpu-stack-allocation-limit="
STACK_64K, STACK_1M = STACK_LIMIT + "65536", STACK_LIMIT + "1048576"
NO_CONST_EVAL = "--iree-opt-const-eval=false"  # hoisted constant expressions run at load, not inside iree-compile
# IREE 3.13 knows no sm_90 ("missing GPU target"); sm_80 and sm_89 both run on an H100, sm_80 faster on 9 of the 12
# workloads of benchmarks/bench_gpu.py (docs/log.md).
CUDA_ARCH = "sm_80"

COMMON = ("fold-constants", "simplify", "updates-as-concats", "pad-sums-as-concats", "lanes-batched", "fold-movement",
          "cse", "dce")


class Pipeline(NamedTuple):
    """The passes a target runs, by kind, in the order they run:

    - `expansions`: ops IREE lacks or gets wrong, as arithmetic, right after tracing (they always run);
    - `passes`: optimizations and performance workarounds, the part `passes=` / `config.passes` replaces;
    - `legalize`: what the module needs to compile and run right on this target (always run);
    - `offloads`: ops that call NumPy on the host, run when the compile asks for them (`host_blas`);
    - `finish`: what must see the module whole, calls to the host included (always run, last);
    - `calls`: named calls (`stagec.named`) answered on the host, run first when the compile asks for offloads; then
      `inline-calls` (every target) puts the other named calls' own ops in their place."""
    expansions: tuple[str, ...] = ()
    passes: tuple[str, ...] = ()
    legalize: tuple[str, ...] = ()
    offloads: tuple[str, ...] = ()
    finish: tuple[str, ...] = ()
    calls: tuple[str, ...] = ()


class Target(NamedTuple):
    """A backend's name, its IREE target backend, the flag that picks an architecture, its default flags, its
    pipeline, the most buffers its runtime binds to one dispatch where a compile checks them (a module over it
    fails at load), and the IREE phase after which a module's fusion barriers are dropped (`BARRIERS_DROPPED`)."""
    backend: str
    iree: str
    arch_flag: str
    flags: tuple[str, ...]
    pipeline: Pipeline
    max_bindings: int | None = None
    barriers_dropped_after: str | None = None


# Our passes break IREE's fusion with `stablehlo.optimization_barrier`s. IREE 3.13 keeps each barrier to the end,
# and its stream program waits on the host for the barrier's operand, mid-call: on local-task a drain of the
# workers, and the transients crossing it were kept (`backend.LOCAL_TASK_LEAK`: 720 MiB a 100 calls of an Adam
# step). Once IREE has formed its dispatches the barriers have done their work, so for a target naming this phase a
# module that may run on local-task is compiled in two runs, the barriers dropped between them
# (`driver.drop_barriers`, `driver._iree`): the same dispatches, no wait.
BARRIERS_DROPPED = "dispatch-creation"


TARGETS: dict[str, Target] = {t.backend: t for t in (
    # host: without it IREE emits generic x86 code. Data tiling: packed matmuls (1024^2 f32 2.7x faster; dropped for
    # a module with no product worth packing: `driver.module_flags`). O3:
    # dispatch formation fuses layernorm's reductions with their consumer, codegen vectorizes row reductions
    # better. Peeling: a vector dimension the vector length does not divide gets whole vectors and a remainder loop
    # (else a row reduction over 1000 floats ran an element at a time). No const-eval: IREE compiled each hoisted
    # constant expression (betaln(2, 3) of scipy.stats.beta) again and ran it inside iree-compile (12.3 -> 4.7 s of
    # that module's compile); its initializer now runs once, at load, with the module's own code. (Not hoisting at
    # all, 1.3 s, gave wrong sorts and eigh in IREE 3.13: three tests failed.) docs/passes.md.
    Target("cpu", "llvm-cpu", "--iree-llvmcpu-target-cpu=",
           (HOST, DATA_TILING, "--iree-opt-level=O3", KEEP_F64, "--iree-llvmcpu-vector-pproc-strategy=peel", STACK_64K,
            NO_CONST_EVAL),
           Pipeline(passes=("widen-half", *COMMON, "abs-squares", "compare-clamped", "merge-contracted-dims", "isolate-updates",
                            "recompute-activations", "isolate-batch-sums", "column-products", "split-sums",
                            "upcast-half-dots", "isolate-outer", "one-weight-pass", "weight-left",
                            "patches-as-one-copy", "fuse-int-chains", "fuse", "sliced-dots-apart",
                            "loop-weights-transposed"),
                    legalize=("mathlib-cpu", "mathlib", "mathlib-complex", "fold-expansions", "complex-constants-apart", "complex-pads-in-parts",
                              "merge-commuted", "fuse-narrowing",
                              "fuse-float64", "complex128-constants-in-parts", "bound-bindings", "isolate-reductions",
                              "round-to-bf16", "unsigned-to-float", "unsigned-extensions-apart", "half-products-in-f32",
                              "grouped-conv-kernels-apart",
                              "self-updates-apart", "sliced-indices-apart", "transposed-reductions-apart", "pads-of-pads-apart", "crossed-reductions-apart", "broadcast-contractions-apart", "loop-updates-apart", "loop-concats-apart", "strided-gather-operands-apart", "narrow-strided-slices-apart",
                              "sorts-apart", "pool-gradients-unfused", "dynamic-reductions-unfused"),
                    offloads=("blas-dots", "host-sorts"), finish=("loops-on-one-device",), calls=("host-lapack",)),
           barriers_dropped_after=BARRIERS_DROPPED),
    # The Vulkan target itself comes from the device found (`vulkan_target_flags`). A hoisted constant
    # expression (argsort's iota, sorted in place) was reused corrupted from the second call on NVIDIA's
    # Vulkan; not hoisting fixes it. IREE 3.13's memoized command buffer of transfers only (a concatenation or stack
    # of arguments: copies, no dispatch) took the first call's buffers on later calls on lavapipe (zeros, or every
    # other call right); recorded per call without indirect bindings it is right, and a module of dispatches costs
    # the same (docs/log.md, 2026-11-28 helper vulkan-sweep; tests/test_lavapipe.py::test_transfer_only_modules).
    Target("vulkan", "vulkan-spirv", "--iree-vulkan-target=",
           ("--iree-opt-const-expr-hoisting=false", "--iree-hal-indirect-command-buffers=false", KEEP_F64),
           Pipeline(passes=(*COMMON, "isolate-outer"),
                    legalize=("complex-division-constants-apart", "mathlib", "mathlib-glsl", "fuse-chains", "merge-commuted",
                              "fft-as-dft", "complex-products-apart", "grouped-convs-apart",
                              "long-contractions", "reductions-in-one-dimension", "long-reductions-in-rows", "outer-product-operands-apart",
                              "gathered-f64-operands-apart", "int64-constants-from-int32", "u8-division-in-i32",
                              "signed-remainders-of-min", "signed-zeros-of-max-min",
                              "clz64-in-halves", "popcnt64-in-halves", "complex-constants-apart", "complex-pads-in-parts",
                              "complex128-constants-in-parts", "bound-bindings",
                              "isolate-reductions", "bf16-in-f32-apart", "half-products-in-f32", "grouped-conv-kernels-apart",
                              "self-updates-apart", "sliced-indices-apart", "transposed-reductions-apart", "pads-of-pads-apart", "loop-updates-apart", "loop-concats-apart", "nan-guards", "bf16-from-integers-rounded", "round-to-bf16",
                              "unsigned-to-float", "negated-sums-as-sign-flips",
                              "converted-product-operands-apart", "int64-sort-slices-apart", "sorts-apart",
                              "sort-results-kept", "widening-converts-apart", "narrow-strided-slices-apart-any"),
                    finish=("loops-on-one-device",))),
    # Split reduction: `sum` of 1M floats 3.4x faster on an H100 (benchmarks/bench_gpu.py). IREE's CUDA runtime
    # binds at most 16 buffers a dispatch ("binding_flags count 18 exceeds maximum of 16" at load).
    # No const-eval, as on the CPU: IREE evaluated constant expressions with host (llvm-cpu) code, which has no
    # float64 sin or cos to link ("undefined symbol: cos"); hoisted, they run once at load on the GPU.
    Target("cuda", "cuda", "--iree-cuda-target=",
           (f"--iree-cuda-target={CUDA_ARCH}", "--iree-dispatch-creation-enable-split-reduction", KEEP_F64, NO_CONST_EVAL),
           Pipeline(passes=(*COMMON, "isolate-outer"),
                    legalize=("mathlib-cuda", "mathlib", "mathlib-complex", "fold-expansions", "fuse-chains", "sqrt-in-f64", "complex-constants-apart",
                              "complex-pads-in-parts", "merge-commuted",
                              "complex128-constants-in-parts", "bound-bindings-16", "isolate-reductions",
                              "half-products-in-f32", "grouped-conv-kernels-apart", "bf16-in-f32", "f32-dots-bf16x3",
                              "self-updates-apart", "sliced-indices-apart", "transposed-reductions-apart", "pads-of-pads-apart", "crossed-reductions-apart", "loop-updates-apart", "loop-concats-apart", "strided-gather-operands-apart", "narrow-strided-slices-apart-any", "unsigned-to-float",
                              "unsigned-extensions-apart", "widened-scatter-updates-apart",
                              "int64-sort-slices-apart", "sorts-apart", "sort-results-kept", "flatten-full-reductions", "complex-reductions-in-parts",
                              "complex-reduction-inputs-apart", "complex-of-reductions-apart", "variadic-reductions-in-rows",
                              "reduce-window-inits-apart")),
           max_bindings=16),
)}
IREE_TARGETS: dict[str, Target] = {t.iree: t for t in TARGETS.values()}


def find_target(name: str) -> Target:
    """The target named by an IREE target backend ("llvm-cpu") or a stagec backend ("cpu")."""
    t = IREE_TARGETS.get(name) or TARGETS.get(name)
    if t is None:
        raise ValueError(f"unknown target {name!r}; choose one of {sorted(IREE_TARGETS)} "
                         f"(or the backend names {sorted(TARGETS)})")
    return t


def pipeline(backend: str, passes=None, host_blas: bool = False, named: bool = False) -> tuple[str, ...]:
    """The pass names a module for `backend` runs through: where it has `named` calls (`stagec.named`), their
    offloads when `host_blas` and then `inline-calls`; its expansions, `passes` (see `stagec.passes.resolve`;
    "default" is the target's own), its legalization, its offloads when `host_blas`, and its finish."""
    from stagec.passes import resolve  # (imports iree.compiler: only once something is lowered)
    p = TARGETS[backend].pipeline
    calls = (*(p.calls if host_blas else ()), "inline-calls") if named else ()
    return (*calls, *p.expansions, *resolve(passes, p.passes), *p.legalize, *(p.offloads if host_blas else ()),
            *p.finish)


@functools.cache
def _cpuinfo() -> str:
    """The host CPU's model name and feature flags lines of /proc/cpuinfo ("" where there is none)."""
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        return ""
    return "".join(next((ln for ln in text.splitlines() if ln.startswith(k)), "") for k in ("model name", "flags"))


def host_id() -> str:
    """The host CPU (model and feature flags): what a module compiled for `target-cpu=host` assumes."""
    return f"{platform.machine()}:{hashlib.sha256(_cpuinfo().encode()).hexdigest()[:16]}"


def host_has_bf16() -> bool:
    """Whether the host CPU has bfloat16 arithmetic (AVX-512 BF16 or AMX-BF16) that IREE's data-tiled
    bf16 matmuls use."""
    return any(f in _cpuinfo().split() for f in ("avx512_bf16", "amx_bf16"))


# Vulkan targets. IREE's default (vp_android_baseline_2022) has 32-bit storage only: a bool or int8 tensor is
# written as read-modify-write of whole 32-bit words, and NVIDIA's driver drops stores past a buffer's end. An
# NVIDIA GPU gets its architecture's target; any other device the baseline plus the 8/16/64-bit storage and
# arithmetic that every desktop driver and lavapipe have.
_VULKAN_NVIDIA = ("--iree-vulkan-target=ampere",)
_VULKAN_PORTABLE = ("--iree-vulkan-target=vp_android_baseline_2022",
                    "--iree-vulkan-target-features=spirv:v1.3,cap:Shader,cap:StorageBuffer8BitAccess,"
                    "cap:StorageBuffer16BitAccess,cap:Int8,cap:Int16,cap:Int64,cap:Float16,cap:Float64,"
                    "ext:SPV_KHR_8bit_storage,ext:SPV_KHR_16bit_storage")


def device_names(driver: str) -> list[str]:
    """Names of the devices an IREE driver finds here ([] when the driver, its library or a device is missing)."""
    try:
        import iree.runtime as rt
        return [d["name"] for d in rt.get_driver(driver).query_available_devices()]
    except Exception:
        return []


@functools.cache
def vulkan_target_flags() -> tuple[str, ...]:
    """The Vulkan target for the first device IREE's Vulkan driver finds (portable when there is none), or
    STAGEC_VULKAN_TARGET's: an IREE Vulkan target name (`ampere`, `rdna3`, ...) or `portable`."""
    chosen = os.environ.get("STAGEC_VULKAN_TARGET")
    if chosen:
        return _VULKAN_PORTABLE if chosen == "portable" else (f"--iree-vulkan-target={chosen}",)
    names = device_names("vulkan")
    return _VULKAN_NVIDIA if names and "NVIDIA" in names[0] else _VULKAN_PORTABLE
