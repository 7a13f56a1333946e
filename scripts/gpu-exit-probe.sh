#!/usr/bin/env bash
# Which exits segfault on NVIDIA's Vulkan (docs/gpu.md, "a crash at exit"), 3 tries each, and where (gdb, when there is one):
# on the GPU machine, `bash .gpu/remote.sh bash scripts/gpu-exit-probe.sh`; the log goes to $OUT/exit.log.
cd "$(dirname "$0")/.." || exit 1
log=$OUT/exit.log
try() {  # name, python code
  for i in 1 2 3; do
    timeout 60 python3 -X faulthandler -c "$2" > /tmp/o.txt 2> /tmp/e.txt; rc=$?
    echo "$1 try $i: rc $rc out $(tail -c 80 /tmp/o.txt | tr '\n' ' ')" >> "$log"
    [ $rc -ne 0 ] && grep -v "RuntimeWarning\|warnings.warn" /tmp/e.txt | head -30 | sed 's/^/    /' >> "$log"
  done
}
S='import numpy as np, stagec, stagec.numpy as snp
stagec.config.update("default_backend", "vulkan")
x = snp.ones(4) + 1
print(np.asarray(stagec.jit(lambda v: v * 2)(x)))'
try iree-only 'import numpy as np, iree.runtime as rt
d = rt.get_device("vulkan"); a = rt.asdevicearray(d, np.ones(4, np.float32)); print(a.shape)'
try iree-only-2 'import numpy as np, iree.runtime as rt
d = rt.get_device("vulkan"); a = rt.asdevicearray(d, np.ones(4, np.float32)); print(a.shape); del a, d
import gc; gc.collect()'
try stagec "$S"
try stagec-cuda-too "$S
stagec.config.update(\"default_backend\", \"cuda\"); print(np.asarray(snp.ones(3) * 3))"
try stagec-os-exit "$S
import atexit, os, sys
atexit.register(lambda: (sys.stdout.flush(), sys.stderr.flush(), os._exit(0)))"
try stagec-released "import stagec.backend as B
B._pinned = lambda t: t
$S
import gc, atexit
def release():
    stagec.effects_barrier(); stagec.clear_caches()
    for b in B.backends():
        b._hal.clear(); b._numpy.clear(); b._put = None
    B._inst = None; gc.collect()
atexit.register(release)
del x"
if command -v gdb > /dev/null; then
  echo "gdb:" >> "$log"
  timeout 90 gdb -q -batch -ex "set print thread-events off" -ex "set auto-load safe-path /" -ex run -ex "thread apply all bt 12" --args python3 -c "$S" >> "$log" 2>&1
else
  echo "no gdb" >> "$log"
fi
cat "$log"
