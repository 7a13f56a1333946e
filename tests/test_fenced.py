"""Modules compiled for local-task take fences and their caller polls instead of IREE's blocking wait
(`compiler.driver.FENCED`, `backend._poll`; docs/runtime.md, "Waiting for local-task"): which modules, the same
bits on either driver and as the blocking form of the same module, a float64 oracle. No timing."""
import threading
import time

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import backend
from stagec.compiler import driver

pytestmark = pytest.mark.skipif(stagec.default_backend() != "cpu", reason="CPU drivers only")


def r(*shape):
    return np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)


def _f(a, b):
    return snp.tanh(a @ b) * 2.0 + 1.0


def _run(exe, cpu, args, aval):
    return cpu.get(exe.run([cpu.put(x) for x in args])[0], aval)


def test_a_module_for_local_task_is_fenced_and_gives_the_bits_of_the_blocking_form(monkeypatch):
    # 512^3 multiply-adds: work 17M, above TASK_WORK (2^24); one module, three ways to run it
    a, b = r(512, 512), r(512, 512) / 16
    lowered = stagec.jit(_f).lower(a, b)
    compiled = lowered.compile()
    art = compiled.artifact
    assert art.work >= driver.TASK_WORK and driver.FENCED in compiled.flags
    cpu = backend.get_backend("cpu")
    polled = []  # each fenced call waits for its signal fence (results read before it would be a race)
    monkeypatch.setattr(backend, "_poll", lambda fence, waits=None, poll=backend._poll:
                        polled.append(poll(fence, waits)))
    outs = []
    for drv in ("local-task", "local-sync"):
        exe = cpu.load(art.vmfb, art.in_avals, art.out_avals, art.name, driver=drv, work=art.work)
        assert exe._fenced
        outs.append(_run(exe, cpu, [a, b], art.out_avals[0]))
    # The same text compiled without fences: IREE waits inside `main`; the dispatches, and so the bits, are the same.
    blocking = cpu.compile(lowered.as_text("final"), art.name, [f for f in compiled.flags if f != driver.FENCED])
    exe = cpu.load(blocking, art.in_avals, art.out_avals, art.name, driver="local-task", work=art.work)
    assert not exe._fenced
    outs.append(_run(exe, cpu, [a, b], art.out_avals[0]))
    assert len(polled) == 2
    for o in outs[1:]:
        np.testing.assert_array_equal(outs[0], o)
    np.testing.assert_allclose(outs[0], np.tanh(a.astype(np.float64) @ b) * 2 + 1, rtol=2e-5, atol=2e-5)
    # through the jit as users call it
    np.testing.assert_array_equal(np.asarray(stagec.jit(_f)(a, b)), outs[0])


def test_a_module_below_task_work_is_not_fenced():
    a = r(64, 64)
    compiled = stagec.jit(_f).lower(a, a).compile()
    assert compiled.artifact.work < driver.TASK_WORK and driver.FENCED not in compiled.flags
    assert not compiled.runner.exe._fenced


def test_poll_returns_once_the_fence_is_signalled_from_another_thread():
    cpu = backend.get_backend("cpu")
    dev = cpu.hal("local-task")[1]
    sem = dev.create_semaphore(0)
    fence = backend._fence_at(sem, 1)
    signalled = []

    def later():
        time.sleep(0.05)
        signalled.append(True)
        sem.signal(1)

    t = threading.Thread(target=later)
    t.start()
    backend._poll(fence)
    assert signalled and sem.query() == 1
    t.join()
