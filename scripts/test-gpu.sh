#!/usr/bin/env bash
# The test suite on every GPU backend IREE finds here: STAGEC_BACKEND=cuda, then vulkan (a real GPU's driver;
# lavapipe, Mesa's Vulkan on the CPU, is covered by scripts/test.sh). Without a GPU it says so and exits 0.
#   scripts/test-gpu.sh                  # whole suite, each backend
#   scripts/test-gpu.sh -n 8 tests/test_jit.py
set -uo pipefail
cd "$(dirname "$0")/.."
if [ -z "${PY:-}" ]; then PY=python3; [ -x .venv/bin/python ] && PY=.venv/bin/python; fi
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
backends=$("$PY" -c "from stagec.backend import gpu_backends; print(*gpu_backends())") || exit 1
if [ -z "$backends" ]; then
  echo "test-gpu: no GPU found by IREE's cuda or vulkan drivers; nothing to run (scripts/test.sh covers CPU and lavapipe)."
  exit 0
fi
status=0
for b in $backends; do
  echo "== STAGEC_BACKEND=$b"
  STAGEC_BACKEND=$b "$PY" -m pytest -q -p no:cacheprovider "$@" || status=1
done
exit $status
