#!/usr/bin/env bash
# The main job: jit-compile real code, show MLIR and timings. Installs what it needs into .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
exec "$PY" examples/selu_demo.py "$@"
