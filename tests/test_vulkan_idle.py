"""An idle lavapipe device must not keep the machine's cores busy (backend.SPINNING_WAITS)."""
import os
import time

import numpy as np
import pytest

import stagec
from stagec import backend
from stagec.compiler.targets import device_names

lavapipe = any("llvmpipe" in n for n in device_names("vulkan"))


def _cpu_ticks() -> int:
    """User + system clock ticks of this process's threads."""
    total = 0
    for t in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{t}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total


@pytest.mark.skipif(not lavapipe or len(os.sched_getaffinity(0)) < 2, reason="needs lavapipe and 2+ cores")
def test_an_idle_lavapipe_device_keeps_at_most_one_core_busy(no_background):
    """IREE's completion threads poll lavapipe's semaphores without sleeping; confined to one core, the idle
    process uses at most that core (it used two). CPU time, not a timing: on a loaded machine it can only be less."""
    f = stagec.jit(lambda x: x * 2 + 1, backend="vulkan")
    np.testing.assert_array_equal(np.asarray(f(np.ones(4, np.float32))), np.full(4, 3, np.float32))
    stagec.wait_for_compiles()  # (the compile of a fused variant, if any, is not idling)
    hz, idle = os.sysconf("SC_CLK_TCK"), 1.0
    a, t0 = _cpu_ticks(), time.perf_counter()
    time.sleep(idle)
    busy = (_cpu_ticks() - a) / hz / (time.perf_counter() - t0)
    assert busy <= 1.15, f"an idle process with a lavapipe device used {busy:.2f} cores"
    # and a call still runs right afterwards
    np.testing.assert_array_equal(np.asarray(f(np.arange(3, dtype=np.float32))), np.float32([1, 3, 5]))


def test_the_quirk_says_where_it_shows():
    q = backend.SPINNING_WAITS
    assert q.devices == "llvmpipe" and "IREE" in q.versions and "Mesa" in q.versions
    path, name = q.test.split("::")
    assert os.path.exists(os.path.join(os.path.dirname(__file__), os.path.basename(path))) and name in globals()
