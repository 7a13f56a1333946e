# Sourced by demo.sh and test.sh: a virtual environment with stagec (editable), its test extras and the real
# clients the suite tests it with (scikit-learn, array-api-compat, dask.distributed).
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
PY=.venv/bin/python
if ! "$PY" -c "import stagec, pytest, hypothesis, mpmath, sklearn, array_api_compat, distributed, cloudpickle, iree.compiler, iree.runtime" >/dev/null 2>&1 \
   || [ pyproject.toml -nt .venv/.stagec-installed ]; then
  echo "Installing stagec and its test dependencies into .venv (log: .venv/install.log) ..." >&2
  if ! { "$PY" -m pip install --upgrade pip && "$PY" -m pip install -e ".[test,test-clients]"; } >.venv/install.log 2>&1; then
    tail -n 30 .venv/install.log >&2
    echo "error: installing into .venv failed (full log: .venv/install.log)" >&2
    exit 1
  fi
  touch .venv/.stagec-installed
fi
# Vulkan runs on the CPU through Mesa's lavapipe; install it where we can (root with apt).
if ! ldconfig -p 2>/dev/null | grep -q libvulkan.so.1 || ! ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mesa-vulkan-drivers libvulkan1) \
      >/dev/null 2>&1 || echo "note: could not install mesa-vulkan-drivers; Vulkan tests will fail" >&2
  fi
fi
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
