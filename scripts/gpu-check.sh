#!/usr/bin/env bash
# A lent GPU's checks in one call (docs/gpu.md): the suite on CUDA and on Vulkan side by side, the files never run
# on that backend first, each run capped and its outcomes written as they come (scripts/gpu_report.py); then the
# GPU tests alone and the benchmark table. On the GPU machine, after ../shared/gpu/prepare.sh here:
#   bash .gpu/remote.sh bash scripts/gpu-check.sh [suite seconds, default 240]
# Results land in $OUT (cuda.rep, vulkan.rep, *.log, bench.log). BENCH=0 skips the benchmark.
cd "$(dirname "$0")/.." || exit 1
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONPATH="${PYTHONPATH:-}:$PWD/scripts" JAX_PLATFORMS=cpu
t=${1:-240}
# Never reached (or only in part: the last ones) on each backend by the H200 runs of 2026-11-27 (docs/log.md):
# these first, then the rest.
never_cuda="test_accuracy_composites.py test_accuracy_gamma.py test_aot.py test_bfloat16.py test_complex_edges.py test_complex_power.py test_compose.py test_dtypes_bf16_scalars.py test_edge_values.py test_fenced.py test_function_coverage.py test_lax_bits.py test_passes_squares.py test_passes_widen.py test_retries.py test_vulkan_functions.py test_vulkan_idle.py test_accuracy.py test_cache.py test_jit.py test_numpy.py test_trig.py "
never_vulkan="test_accuracy_composites.py test_accuracy_gamma.py test_aot.py test_bfloat16.py test_cache.py test_complex_edges.py test_complex_power.py test_dtypes_bf16_scalars.py test_fenced.py test_function_coverage.py test_passes_squares.py test_passes_widen.py test_retries.py test_vulkan_idle.py test_compose.py "
rest() { ls tests/test_*.py | grep -vxF -f <(for f in $1; do echo "tests/$f"; done); }
suite() {  # backend workers never-run-files: those first in a pytest run of their own (pytest collects the files of
  b=$1 n=$2                                # one run in its own order), then the rest in what time is left
  end=$((SECONDS + t))
  for files in "$(for f in $3; do echo "tests/$f"; done)" "$(rest "$3")"; do
    left=$((end - SECONDS)); [ $left -lt 20 ] && break
    REP_FILE=$OUT/$b.rep STAGEC_BACKEND=$b timeout -s INT -k 10 "$left" python3 -m pytest -q -p no:cacheprovider \
      -p gpu_report -n "$n" --dist loadfile --timeout 90 --tb=no $files >> "$OUT/$b.log" 2>&1
  done
  echo "$b: $(grep -c ' passed ' "$OUT/$b.rep") passed, $(grep -c ' FAILED ' "$OUT/$b.rep") failed in $t s or less"
}
suite cuda 9 "$never_cuda" &
suite vulkan 6 "$never_vulkan" &
wait
[ "${BENCH:-1}" = 0 ] && exit 0  # BENCH=0: the suites only
# (JAX on the GPU here: the suites above pin it to the CPU for their oracles)
env -u JAX_PLATFORMS timeout 150 python3 benchmarks/bench_gpu.py --quick > "$OUT/bench.log" 2>&1
cat "$OUT/bench.log"
