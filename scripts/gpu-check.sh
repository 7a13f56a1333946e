#!/usr/bin/env bash
# A lent GPU's checks in one call (docs/gpu.md): the suite on CUDA and on Vulkan side by side, the files the last run did not reach
# on that backend first, each run capped and its outcomes written as they come (scripts/gpu_report.py); then the
# GPU tests alone and the benchmark table. On the GPU machine, after ../shared/gpu/prepare.sh here:
#   bash .gpu/remote.sh bash scripts/gpu-check.sh [suite seconds, default 240]
# Results land in $OUT (cuda.rep, vulkan.rep, *.log, bench.log). BENCH=0 skips the benchmark.
cd "$(dirname "$0")/.." || exit 1
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONPATH="${PYTHONPATH:-}:$PWD/scripts" JAX_PLATFORMS=cpu
t=${1:-240}
# Not reached on each backend by the last H200 run (2026-11-27, fifteenth session; docs/log.md), those of CPU-only
# mechanisms left out: these first, then the rest.
first_cuda="test_accuracy_special_more.py test_array_api.py test_async.py test_background.py test_bessel.py test_callbacks.py test_complex128.py test_compose_fuzz.py test_control_flow.py test_conv.py test_dask.py test_derivative_traps.py test_determinism.py test_dtypes.py test_eager_dispatch.py test_faq.py test_fenced.py test_fft.py test_function_coverage_cuda.py test_fusion_hazards.py test_gather_bounds.py test_gpu.py test_jit_pytree_calls.py test_layers.py test_linspace.py test_numpy_histograms_sets.py test_numpy_index_modes.py test_numpy_indexing.py test_numpy_linalg.py test_numpy_names.py test_numpy_reductions.py test_numpy_shapes.py test_numpy_ufuncs.py test_numpy_where_complex.py test_precision.py test_random_more.py test_safety.py test_special_tails.py test_vmap.py "
first_vulkan="test_accuracy.py test_accuracy_special_more.py test_array_api.py test_async.py test_background.py test_bessel.py test_callbacks.py test_complex128.py test_compose_fuzz.py test_control_flow.py test_conv.py test_dask.py test_derivative_traps.py test_determinism.py test_dtypes.py test_eager_dispatch.py test_eager_fastpath.py test_edge_values.py test_faq.py test_fenced.py test_fft.py test_function_coverage_cuda.py test_fusion_hazards.py test_gather_bounds.py test_gpu.py test_jit.py test_jit_pytree_calls.py test_lax_bits.py test_layers.py test_linspace.py test_numpy.py test_numpy_histograms_sets.py test_numpy_index_modes.py test_numpy_indexing.py test_numpy_linalg.py test_numpy_names.py test_numpy_reductions.py test_numpy_shapes.py test_numpy_ufuncs.py test_numpy_where_complex.py test_perf_paths.py test_precision.py test_random_more.py test_safety.py test_special_tails.py test_trig.py test_vmap.py test_vulkan_functions.py "
rest() { ls tests/test_*.py | grep -vxF -f <(for f in $1; do echo "tests/$f"; done); }
suite() {  # backend workers first-files: those first in a pytest run of their own (pytest collects the files of
  b=$1 n=$2                                # one run in its own order), then the rest in what time is left
  end=$((SECONDS + t))
  for files in "$(for f in $3; do echo "tests/$f"; done)" "$(rest "$3")"; do
    left=$((end - SECONDS)); [ $left -lt 20 ] && break
    REP_FILE=$OUT/$b.rep STAGEC_BACKEND=$b timeout -s INT -k 10 "$left" python3 -m pytest -q -p no:cacheprovider \
      -p gpu_report -n "$n" --dist loadfile --timeout 90 --tb=no $files >> "$OUT/$b.log" 2>&1
  done
  echo "$b: $(grep -c ' passed ' "$OUT/$b.rep") passed, $(grep -c ' FAILED ' "$OUT/$b.rep") failed in $t s or less"
}
suite cuda 9 "$first_cuda" &
suite vulkan 6 "$first_vulkan" &
wait
[ "${BENCH:-1}" = 0 ] && exit 0  # BENCH=0: the suites only
# (JAX on the GPU here: the suites above pin it to the CPU for their oracles)
env -u JAX_PLATFORMS timeout 150 python3 benchmarks/bench_gpu.py --quick > "$OUT/bench.log" 2>&1
cat "$OUT/bench.log"
