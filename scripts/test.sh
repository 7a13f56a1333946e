#!/usr/bin/env bash
# The whole test suite. Installs what it needs into .venv (and Vulkan's CPU driver where it can).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
# Test files run in parallel (one worker per core; STAGEC_TEST_WORKERS=0 for one process), each file in one
# worker so that the modules its tests share are compiled once.
exec "$PY" -m pytest -q -n "${STAGEC_TEST_WORKERS:-auto}" --dist loadfile "$@"
