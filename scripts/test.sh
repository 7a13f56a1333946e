#!/usr/bin/env bash
# The whole test suite. Installs what it needs into .venv (and Vulkan's CPU driver where it can).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
exec "$PY" -m pytest -q "$@"
