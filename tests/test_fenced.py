"""Modules compiled for local-task take fences and their caller polls instead of IREE's blocking wait
(`compiler.driver.FENCED`, `backend._poll`; docs/runtime.md, "Waiting for local-task"): which modules, the same
bits on either driver and as the blocking form of the same module, a float64 oracle. No timing."""
import io
import pathlib
import threading
import time
import types

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


def test_barriers_of_dispatch_results_are_dropped_the_others_kept():
    from iree.compiler import ir

    from stagec.lowering import context
    text = """util.func public @f(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
      %c = arith.constant dense<1.0> : tensor<4xf32>
      %0 = util.optimization_barrier %a : tensor<4xf32>
      %1 = util.optimization_barrier %c : tensor<4xf32>
      %2 = flow.dispatch.region -> (tensor<4xf32>) {
        %3 = util.optimization_barrier %0 : tensor<4xf32>
        flow.return %3 : tensor<4xf32>
      }
      %4 = util.optimization_barrier %2 : tensor<4xf32>
      util.return %4, %1, %0 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
    }"""
    with context():
        out = io.BytesIO()
        ir.Module.parse(text).operation.write_bytecode(out)
    with context():
        m = ir.Module.parse(driver.drop_barriers(out.getvalue()))
        ops = list(m.body.operations[0].regions[0].blocks[0].operations)
        kept = [op for op in ops if op.name == "util.optimization_barrier"]
        # the argument's and the constant's stay, and the one inside the dispatch; the dispatch's result is returned
        assert [op.operands[0].owner.operation.name if isinstance(op.operands[0], ir.OpResult) else "argument"
                for op in kept] == ["argument", "arith.constant"]
        assert ops[3].name == "flow.dispatch.region" and "util.optimization_barrier" in str(ops[3])
        assert ops[-1].operands[0].owner.operation.name == "flow.dispatch.region"


def test_a_module_with_fusion_barriers_is_compiled_without_them_with_the_same_bits(monkeypatch):
    """`targets.BARRIERS_DROPPED`: IREE forms the dispatches with the barriers, the rest of the compile runs
    without them (no wait mid-call on local-task); the dispatches, and so the bits, are those of a module IREE
    compiled keeping them."""
    a, b = r(512, 512), r(512, 512) / 16
    lowered = stagec.jit(lambda a, b: snp.tanh(stagec.lax.optimization_barrier(a @ b)) * 2.0 + 1.0).lower(a, b)
    compiled = lowered.compile()
    art, flags, text = compiled.artifact, compiled.flags, lowered.as_text("final")
    assert "optimization_barrier" in text and driver.FENCED in flags
    cpu = backend.get_backend("cpu")
    runs, compile_str = [], driver.processes.compile_str
    monkeypatch.setattr(driver.processes, "compile_str",
                        lambda mlir, target, args: runs.append([f for f in args if "compile-" in f])
                        or compile_str(mlir, target, args))
    dropped = cpu.compile(text, art.name, flags)
    assert runs == [["--compile-to=dispatch-creation"], ["--compile-from=dispatch-creation"]]
    # a module whose second run fails is compiled in one run, keeping its barriers
    import iree.compiler as ic

    def late_failure(mlir, target, args):
        runs.append([f for f in args if "compile-" in f])
        if "--compile-from=dispatch-creation" in args:
            raise ic.CompilerToolError(types.SimpleNamespace(args=["iree-compile"], returncode=1, stdout=b"", stderr=b""))
        return compile_str(mlir, target, args)
    monkeypatch.setattr(driver.processes, "compile_str", late_failure)
    kept = cpu.compile(text, art.name, flags)
    assert runs[2:] == [["--compile-to=dispatch-creation"], ["--compile-from=dispatch-creation"], []]
    assert dropped != kept
    outs = [_run(cpu.load(v, art.in_avals, art.out_avals, art.name, driver="local-task", work=art.work), cpu, [a, b],
                 art.out_avals[0]) for v in (dropped, kept, art.vmfb)]
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0], outs[2])
    np.testing.assert_allclose(outs[0], np.tanh(a.astype(np.float64) @ b) * 2 + 1, rtol=2e-5, atol=2e-5)
    # a module that runs on local-sync only (not fenced) keeps its barriers: one run
    small = stagec.jit(lambda a, b: snp.tanh(stagec.lax.optimization_barrier(a @ b)) * 3.0).lower(a[:64, :64], b[:64, :64])
    monkeypatch.setattr(driver.processes, "compile_str", lambda mlir, target, args: runs.append(
        [f for f in args if "compile-" in f]) or compile_str(mlir, target, args))
    small_flags = small.compile().flags
    assert driver.FENCED not in small_flags
    cpu.compile(small.as_text("final"), "small", small_flags)
    assert runs[-1] == []


def test_a_dispatch_failing_after_the_drop_goes_to_the_retries_at_once(monkeypatch):
    """A failure of one dispatch's code (IREE's "large vector sizes", as a transformer step's data-tiled matmul with
    its gelu gave) comes from dispatches formed before the barriers were dropped: a compile keeping them fails the
    same, so the retry (without data tiling) follows at once, not a third compile of the whole module."""
    import iree.compiler as ic
    a, b = r(512, 512), r(512, 512) / 16
    lowered = stagec.jit(lambda a, b: snp.tanh(stagec.lax.optimization_barrier(a @ b)) * 4.0).lower(a, b)
    text, flags = lowered.as_text("final"), lowered.compile().flags
    assert driver.FENCED in flags and driver.DATA_TILING in flags
    runs, compile_str = [], driver.processes.compile_str

    def failing(mlir, target, args):
        runs.append(([f for f in args if "compile-" in f], driver.DATA_TILING in args))
        if "--compile-from=dispatch-creation" in args and driver.DATA_TILING in args:
            raise ic.CompilerToolError(types.SimpleNamespace(
                args=["iree-compile"], returncode=1, stdout=b"",
                stderr=b"error: One or more operations with large vector sizes (8192 bytes) were found"))
        return compile_str(mlir, target, args)
    monkeypatch.setattr(driver.processes, "compile_str", failing)
    variant: list = []
    driver.compile(text, "cpu", "f", flags, variant=variant)
    assert runs == [(["--compile-to=dispatch-creation"], True), (["--compile-from=dispatch-creation"], True),
                    (["--compile-to=dispatch-creation"], False), (["--compile-from=dispatch-creation"], False)]
    assert variant == ["no-data-tiling"]


def test_a_module_below_spare_work_is_not_fenced():
    a = r(64, 64)
    compiled = stagec.jit(_f).lower(a, a).compile()
    assert compiled.artifact.work < driver.SPARE_WORK and driver.FENCED not in compiled.flags
    assert not compiled.runner.exe._fenced and compiled.runner.exe._spare is None


def test_a_module_of_spare_work_runs_on_either_driver_as_a_core_is_spare(monkeypatch):
    """Work in [SPARE_WORK, TASK_WORK): local-sync, or local-task for a call while a core is spare
    (`backend._spare_core`, which tests leave to a stand-in: never a timing); the same bits either way."""
    monkeypatch.setattr(stagec.config, "_values", dict(stagec.config._values, cpu_threads=2))
    a, b = r(384, 384), r(384, 384) / 16  # 384^3 multiply-adds: work 7.2M
    compiled = stagec.jit(_f).lower(a, b).compile()
    art = compiled.artifact
    assert driver.SPARE_WORK <= art.work < driver.TASK_WORK and driver.FENCED in compiled.flags
    cpu = backend.get_backend("cpu")
    exe = cpu.load(art.vmfb, art.in_avals, art.out_avals, art.name, work=art.work)
    assert exe.driver == "local-sync" and exe._spare is not None
    invoked, sync, (task, dev) = [], exe._invoke, exe._spare
    exe._invoke = lambda *a: invoked.append("sync") or sync(*a)
    exe._spare = (lambda *a: invoked.append("task") or task(*a), dev)
    outs = []
    for spare in (False, True, False, True):
        monkeypatch.setattr(backend, "_spare_core", lambda spare=spare: spare)
        outs.append(_run(exe, cpu, [a, b], art.out_avals[0]))
    assert invoked == ["sync", "task", "sync", "task"]
    first = outs[0]
    for out in outs[1:]:
        np.testing.assert_array_equal(out, first)
    np.testing.assert_allclose(first, np.tanh(a.astype(np.float64) @ b) * 2 + 1, rtol=2e-5, atol=2e-5)
    # a module calling BLAS, or one core: never local-task
    assert not cpu.spares(art.work, calls_blas=True)
    monkeypatch.setattr(stagec.config, "_values", dict(stagec.config._values, cpu_threads=1))
    assert not cpu.spares(art.work)


@pytest.mark.parametrize("others, spare", [(0.0, True), (0.2, True), (0.5, False), (1.0, False), (1.9, False)])
def test_the_cores_are_spare_where_other_programs_use_little_of_them(monkeypatch, others, spare):
    """`_spare_core` from the machine's busy ticks less this process's CPU time, over windows; here both scripted:
    this process uses 1.5 cores, other programs `others`."""
    clock, ticks, ours = [100.0], [0], [0.0]
    monkeypatch.setattr(backend, "_spare_state", [-1.0, 0, 0.0, False, 0, 99])
    monkeypatch.setattr(backend, "_busy_ticks", lambda fd: ticks[0])
    monkeypatch.setattr(backend.resource, "getrusage", lambda who: types.SimpleNamespace(ru_utime=ours[0], ru_stime=0.0))
    monkeypatch.setattr(backend.time, "monotonic", lambda: clock[0])

    def window(others, dt=backend.SPARE_EVERY * 1.01):
        clock[0] += dt
        ours[0] += 1.5 * dt
        ticks[0] += round((1.5 + others) * dt * backend._TICKS)
        return backend._spare_core()
    answers = [window(others) for _ in range(backend.SPARE_READS + 1)]  # (the first read starts the first window)
    assert answers == [False] * backend.SPARE_READS + [spare]
    clock[0] += backend.SPARE_EVERY / 2  # (read at most every SPARE_EVERY s: the answer stands meanwhile)
    assert backend._spare_core() is spare
    assert window(1.0, backend.SPARE_EVERY * 0.51) is False  # (one busy window: no longer spare)
    monkeypatch.setattr(backend, "_spare_state", [-1.0, 0, 0.0, False, 0, False])  # (no /proc/stat: never spare)
    assert backend._spare_core() is False


def test_busy_ticks_reads_proc_stat():
    import os
    if not os.path.exists("/proc/stat"):
        pytest.skip("no /proc/stat here")
    fd = os.open("/proc/stat", os.O_RDONLY)
    try:
        a = backend._busy_ticks(fd)
        sum(range(3_000_000))  # (a moment's work: the busy ticks never fall)
        assert 0 < a <= backend._busy_ticks(fd)
    finally:
        os.close(fd)


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


def test_a_spared_call_waits_blocking_as_a_batch_thread_and_puts_the_policy_back():
    """`_wait_spared` (a call on local-task while the cores are spare): IREE's blocking wait with the calling thread
    SCHED_BATCH meanwhile (its wake-up then preempts no worker), its policy put back after; a thread of another
    policy is left alone."""
    import os
    if backend._set_policy is None:
        pytest.skip("no sched_setscheduler here")
    cpu = backend.get_backend("cpu")
    dev = cpu.hal("local-task")[1]
    seen = []

    def wait_for_signal(tid_out):
        sem = dev.create_semaphore(0)
        fence = backend._fence_at(sem, 1)
        tid = threading.get_native_id()

        def later():
            time.sleep(0.05)
            seen.append(os.sched_getscheduler(tid))  # (the waiter's policy while it waits)
            sem.signal(1)
        t = threading.Thread(target=later)
        t.start()
        backend._wait_spared(fence)
        t.join()
        tid_out.append((sem.query(), os.sched_getscheduler(0)))

    out = []
    wait_for_signal(out)
    assert seen == [os.SCHED_BATCH] and out == [(1, os.SCHED_OTHER)]

    def idle_thread():  # (a thread of its own: the policy is the thread's, and SCHED_IDLE needs no privilege)
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        wait_for_signal(out)
    t = threading.Thread(target=idle_thread)
    t.start()
    t.join()
    assert seen[1:] == [os.SCHED_IDLE] and out[1:] == [(1, os.SCHED_IDLE)]
    # a fence already signalled returns at once, the policy untouched
    sem = dev.create_semaphore(1)
    backend._wait_spared(backend._fence_at(sem, 1))
    assert os.sched_getscheduler(0) == os.SCHED_OTHER


def test_a_million_element_kernel_runs_on_the_spare_cores_with_the_same_bits(monkeypatch):
    """The spare band starts at a million elements' work: `jit(tanh)` of 2^20 float32 values (work 2^21) is fenced
    and loaded for local-task too; either driver gives the same bits, NumPy's float64 tanh to 5 ulps."""
    monkeypatch.setattr(stagec.config, "_values", dict(stagec.config._values, cpu_threads=2))
    x = np.random.default_rng(0).uniform(-5, 5, 1 << 20).astype(np.float32)
    compiled = stagec.jit(snp.tanh).lower(x).compile()
    art = compiled.artifact
    assert driver.SPARE_WORK <= art.work < driver.TASK_WORK and driver.FENCED in compiled.flags
    cpu = backend.get_backend("cpu")
    exe = cpu.load(art.vmfb, art.in_avals, art.out_avals, art.name, work=art.work)
    assert exe.driver == "local-sync" and exe._spare is not None
    waited = []
    monkeypatch.setattr(backend, "_wait_spared", lambda fence, wait=backend._wait_spared: waited.append(wait(fence)))
    outs = []
    for spare in (True, False):
        monkeypatch.setattr(backend, "_spare_core", lambda spare=spare: spare)
        outs.append(_run(exe, cpu, [x], art.out_avals[0]))
    assert len(waited) == 1
    np.testing.assert_array_equal(outs[0], outs[1])
    # (docs/accuracy.md: float32 tanh within JAX's 4.3 ulps; + the rounded reference's half ulp)
    np.testing.assert_array_max_ulp(outs[0], np.tanh(x.astype(np.float64)).astype(np.float32), maxulp=5)


def test_one_kernel_takes_the_spare_cores_only_from_twice_the_work(monkeypatch):
    """One dispatch of work in [SPARE_WORK, SPARE_ALONE) stays on the calling thread whether or not a core is spare
    (1M float32 `deg2rad`, work 1.2M: 112 us inline, 180-236 us on two workers; docs/runtime.md, rule 4); two such
    dispatches in one module take the spare cores. The same bits either way, float64 NumPy's to 1 ulp."""
    monkeypatch.setattr(stagec.config, "_values", dict(stagec.config._values, cpu_threads=2))
    x = np.random.default_rng(1).uniform(-1e3, 1e3, 1 << 20).astype(np.float32)
    cpu = backend.get_backend("cpu")
    exes = []
    for f in (snp.deg2rad, lambda x: (snp.deg2rad(x), snp.sqrt(snp.abs(x)))):
        compiled = stagec.jit(f).lower(x).compile()
        art = compiled.artifact
        assert driver.SPARE_WORK <= art.work < driver.SPARE_ALONE and driver.FENCED in compiled.flags
        exes.append(cpu.load(art.vmfb, art.in_avals, art.out_avals, art.name, work=art.work))
        assert exes[-1].driver == "local-sync" and backend._dispatches(art.vmfb) == len(exes)
    one, two = exes
    assert one._spare is None and two._spare is not None
    assert not cpu.spares(one.work, alone=True) and cpu.spares(one.work)
    want = np.deg2rad(x.astype(np.float64)).astype(np.float32)
    outs = []
    for spare in (True, False):
        monkeypatch.setattr(backend, "_spare_core", lambda spare=spare: spare)
        outs += [_run(one, cpu, [x], one.out_avals[0]), _run(two, cpu, [x], two.out_avals[0])]
    for out in outs:
        np.testing.assert_array_max_ulp(out, want, maxulp=1)
    np.testing.assert_array_equal(outs[1], outs[3])  # (the spared call's bits and the inline one's)


def test_the_cores_are_the_processs_whichever_thread_asks():
    """A thread pinned to one core (`backend._confine` pins the threads a Vulkan device starts) still reads the
    process's cores, and so loads a module of `TASK_WORK` for local-task as the main thread does."""
    import os
    if not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two cores and sched_getaffinity")
    cpu = backend.get_backend("cpu")
    seen = []

    def pinned():
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[-1]})
        seen.append((backend._cores(), cpu.driver_for(driver.TASK_WORK)))
    t = threading.Thread(target=pinned)
    t.start()
    t.join()
    assert seen == [(backend._cores(), cpu.driver_for(driver.TASK_WORK))] and seen[0][0] >= 2


def test_a_module_of_streaming_products_stays_on_the_calling_thread(monkeypatch):
    # a batch of one's SGD step (784-1024-1024-10, matrix-vector products and updates: fewer multiply-adds than the
    # elements it takes and returns) is in the spare band by its largest op's work, but two workers lost there even
    # idle (1.35-1.73 ms against 0.96 on the calling thread: a hand-over at each of its 10 short dispatches):
    # local-sync whether or not a core is spare
    monkeypatch.setattr(stagec.config, "_values", dict(stagec.config._values, cpu_threads=2))
    monkeypatch.syspath_prepend(str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
    from bench_models import step_and_args
    fn, args = step_and_args("784-1024-1024-10 b1 tanh xent sgd")
    art = stagec.jit(fn).lower(*args).compile().artifact
    assert driver.SPARE_WORK <= art.work < driver.TASK_WORK and 0 < art.macs
    cpu = backend.get_backend("cpu")
    exe = cpu.load(art.vmfb, art.in_avals, art.out_avals, art.name, art.host_calls, macs=art.macs, work=art.work)
    assert exe.driver == "local-sync" and exe._spare is None
    # a product of as much work but more multiply-adds, a matrix-vector product alone (one dispatch: 1x1024x2048,
    # 339-342 us on local-task against 401-411 idle) and three in a row (a batch of one's forward pass: 473-573 against
    # 601-626 us) keep local-task while spare
    three = lambda x, a, b, c: snp.tanh(snp.tanh(snp.tanh(x @ a) @ b) @ c)  # noqa: E731
    for f, args in ((_f, (r(384, 384), r(384, 384))), (_f, (r(1, 1024), r(1024, 2048))),
                    (three, (r(1, 1024), r(1024, 1024), r(1024, 1024), r(1024, 1024)))):
        art = stagec.jit(f).lower(*args).compile().artifact
        assert driver.SPARE_WORK <= art.work and art.host_calls == ()
        exe = cpu.load(art.vmfb, art.in_avals, art.out_avals, art.name, macs=art.macs, work=art.work)
        assert exe._spare is not None
