#!/usr/bin/env bash
# A lent GPU's checks in one call (docs/gpu.md): the suite on CUDA and on Vulkan side by side, the files the last run did not reach
# on that backend first, each run capped and its outcomes written as they come (scripts/gpu_report.py); then the
# GPU tests alone and the benchmark table. On the GPU machine, after ../shared/gpu/prepare.sh here:
#   bash .gpu/remote.sh bash scripts/gpu-check.sh [suite seconds, default 240]
# Results land in $OUT (cuda.rep, vulkan.rep, *.log, bench.log). BENCH=0 skips the benchmark.
cd "$(dirname "$0")/.." || exit 1
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONPATH="${PYTHONPATH:-}:$PWD/scripts" JAX_PLATFORMS=cpu
t=${1:-240}
# First: on CUDA the files of that day's fixes not rerun there (logs of subnormals: ndtri; the bindings retry: a
# float64 chain, trig gradients, vmap over one element), then the files neither H200 call of 2026-12-04 reached on
# each backend (fifty-fourth session; docs/log.md: CUDA reached 91 files, Vulkan 11); then the rest.
# FIRST_CUDA / FIRST_VULKAN name a file of test ids (one a line: failures to check again) run first instead.
first_cuda="test_gpu.py test_accuracy_composites.py test_jit.py test_trig.py test_vmap.py test_complex128.py test_complex_edges.py test_complex_power.py test_compose_fuzz.py test_dtype_parity.py test_eager_hypot_sinc_exp2.py test_faq.py test_fenced.py test_first_hour.py test_function_coverage.py test_function_coverage_cuda.py test_heap.py test_jit_pytree_calls.py test_layers.py test_numpy_linalg.py test_numpy_where_complex.py test_passes_activations.py test_passes_contractions.py test_passes_differential.py test_passes_exp64.py test_passes_tanh64.py test_passes_updates.py test_sort_bits.py test_special_tails.py test_tempfiles.py test_tree_util.py test_vulkan_functions.py test_vulkan_idle.py test_zeta.py "
first_vulkan="test_dtype_parity.py test_one_answer.py test_sort_bits.py test_special_value_fixes.py test_zeta.py test_sweep_edges.py test_complex128_splats.py test_fuzz3_fixes.py test_incomplete_compile.py test_eager_rows.py test_eager_gammainc_small.py test_eager_hypot_sinc_exp2.py test_eager_sizes.py test_lapack.py test_control_flow.py test_numpy_names.py test_numpy_histograms_sets.py test_conv.py test_complex128.py test_fft.py test_fusion_hazards.py test_linspace.py test_accuracy_gamma.py test_aot.py test_bfloat16.py test_cache.py test_cli.py test_compile_server.py test_complex_edges.py test_complex_power.py test_compose.py test_compose_fuzz.py test_dtypes_bf16_scalars.py test_explorer.py test_faq.py test_fenced.py test_first_hour.py test_function_coverage.py test_function_coverage_cuda.py test_jit_pytree_calls.py test_lavapipe.py test_lax_edges.py test_layers.py test_numpy_indexing.py test_numpy_where_complex.py test_passes.py test_passes_differential.py test_passes_movement.py test_passes_simplify.py test_retries.py test_scipy_stats.py test_special_tails.py test_stages.py test_tempfiles.py test_transform_api.py test_tree_util.py test_tutorial.py test_vulkan_idle.py "
rest() { ls tests/test_*.py | grep -vxF -f <(for f in $1; do echo "tests/$f"; done); }
# (--tb=short: a failure's report names its line; with --tb=no the 2026-12-04 run needed a second call to read them)
suite() {  # backend workers first-files: those first in a pytest run of their own (pytest collects the files of
  b=$1 n=$2                                # one run in its own order), then the rest in what time is left
  end=$((SECONDS + t))
  for files in "$(for f in $3; do echo "tests/$f"; done)" "$(rest "$3")"; do
    left=$((end - SECONDS)); [ $left -lt 20 ] && break
    REP_FILE=$OUT/$b.rep STAGEC_BACKEND=$b timeout -s INT -k 10 "$left" python3 -m pytest -q -p no:cacheprovider \
      -p gpu_report -n "$n" --dist loadfile --timeout 90 --tb=short $files >> "$OUT/$b.log" 2>&1
  done
  echo "$b: $(grep -c ' passed ' "$OUT/$b.rep") passed, $(grep -c ' FAILED ' "$OUT/$b.rep") failed in $t s or less"
}
[ -n "${FIRST_CUDA:-}" ] && first_cuda=$(sed 's#^tests/##' "$FIRST_CUDA")
[ -n "${FIRST_VULKAN:-}" ] && first_vulkan=$(sed 's#^tests/##' "$FIRST_VULKAN")
suite cuda "${CUDA_WORKERS:-9}" "$first_cuda" &
suite vulkan "${VULKAN_WORKERS:-6}" "$first_vulkan" &
wait
[ "${BENCH:-1}" = 0 ] && exit 0  # BENCH=0: the suites only
# (JAX on the GPU here: the suites above pin it to the CPU for their oracles)
env -u JAX_PLATFORMS timeout 150 python3 benchmarks/bench_gpu.py --quick > "$OUT/bench.log" 2>&1
cat "$OUT/bench.log"
