#!/usr/bin/env bash
# The whole test suite (14m40s on a 2-core Intel Xeon at the end of 2026-12-03's forty-eighth session, 2906 tests;
# 23-67 minutes on a 2-vCPU AMD EPYC Zen 3, 23m04s for 2939 tests at the fifty-first session's end; 19m26s-21m46s for 2941 on
# a Zen 4 at the fifty-third's, 20m09s-22m47s for 2945 at the fifty-fourth's, 15m21s for 2970 at the fifty-sixth's, 15m22s for 2991 at the fifty-seventh's, 15m01s for 2995 at the fifty-ninth's, 16m56s for 2996 at the sixtieth's on a slower hour; over the 12-minute budget: docs/log.md), after the linter. Installs what it needs into .venv (and Vulkan's CPU driver where it can).
# `--fast`: only the tests that need no IREE compile (96 s of pytest on the Xeon, 103-136 s on the EPYC Zen 3, 66-107 s on a Zen 4).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
"$PY" -m ruff check --quiet . || { echo "error: ruff found the problems above" >&2; exit 1; }
# stagec's bytecode, once (0.3 s): where PYTHONDONTWRITEBYTECODE is set, each test's Python subprocess (about 30)
# and each worker compiled stagec's sources again as it imported them (~0.2 s each).
"$PY" -m compileall -q stagec passes >/dev/null || echo "note: stagec's bytecode not written (read-only checkout?)" >&2
# Test files run in parallel (one worker per core; STAGEC_TEST_WORKERS=0 for one process), each file in one
# worker so that the modules its tests share are compiled once, in the order tests/conftest.py gives them
# (--no-loadscope-reorder: xdist would send the files with most tests first). -rs: why tests were skipped, one line
# per reason; --durations: the slowest tests. --max-worker-restart=0: a worker that crashes fails the run (xdist
# 3.x replacing it left the run waiting forever at 99%, 2026-12-05: docs/log.md).
exec "$PY" -m pytest -q -rs --durations=15 -n "${STAGEC_TEST_WORKERS:-auto}" --dist loadfile --no-loadscope-reorder \
    --max-worker-restart=0 "$@"
