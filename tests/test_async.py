"""Async dispatch: calls return once enqueued; synchronizing points wait and raise the errors of the work they
wait for, naming its function; dependent calls and ordered effects keep their order; threads do not deadlock.

Work is held back with a host callback that waits on an Event, so every test knows a call is still pending."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import debug
from stagec.backend import get_backend
from stagec.dispatch import LATE_WAITS
from stagec.errors import CallbackError
from threads import run_at_once
from stagec.experimental import io_callback

S = stagec.ShapeDtypeStruct
F32 = S((3,), np.float32)
X = np.arange(3, dtype=np.float32)


class Gate:
    """A host function that blocks the worker until `open()` (or 30 s, so that a failing test cannot hang)."""

    def __init__(self):
        self.event = threading.Event()
        self.reached = threading.Event()

    def __call__(self, v):
        self.reached.set()
        self.event.wait(30)
        return v

    def open(self):
        self.event.set()


def gated(gate: Gate):
    """jit(x -> gate(x) * 2 + 1): pending until the gate opens."""
    return stagec.jit(lambda v: io_callback(gate, F32, v) * 2 + 1)


@pytest.fixture
def mode():
    """Set config.async_dispatch for the executables a test loads; restored after."""
    def set_mode(m):
        stagec.config.update("async_dispatch", m)
    yield set_mode
    stagec.config.update("async_dispatch", "auto")


def test_call_returns_before_the_work_is_done_and_block_until_ready_waits():
    gate = Gate()
    y = gated(gate)(X)
    assert gate.reached.wait(30)  # the worker runs it while this thread holds the result
    assert not y.is_ready()
    gate.open()
    assert y.block_until_ready() is y
    assert y.is_ready()
    np.testing.assert_array_equal(np.asarray(y), X * 2 + 1)


@pytest.mark.parametrize("convert", [np.asarray, lambda a: a.__array__(), lambda a: a[1].item(),
                                     lambda a: float(a[2]), repr, str, lambda a: a.tolist(),
                                     lambda a: stagec.block_until_ready({"k": [a]})["k"][0]])
def test_conversions_wait_for_the_value(convert):
    gate = Gate()
    y = gated(gate)(X)
    threading.Timer(0.05, gate.open).start()  # opened while this thread already waits (or before: same result)
    out = convert(y)
    assert y.is_ready()
    np.testing.assert_array_equal(np.asarray(y), X * 2 + 1)
    assert out is not None


@pytest.fixture(params=["never", "auto"])
def eager_tiers(request):
    """Eager operations through their kernels ("never"), or "auto" with no kernel loaded or stored (each call meets a
    new one). (The default, "exact", computes a small float op by its NumPy rule always: it waits for its inputs.)"""
    from stagec import eager
    old = stagec.config.eager_tiering, stagec.config.persistent_cache
    stagec.config.update("eager_tiering", request.param)
    if request.param == "auto":
        stagec.config.update("eager_tiering", "auto")
        stagec.config.update("persistent_cache", False)
        eager.clear_cache()
    yield request.param
    stagec.config.update("eager_tiering", old[0])
    stagec.config.update("persistent_cache", old[1])


def test_dependent_calls_and_eager_ops_see_their_inputs(eager_tiers):
    """(With NumPy rules on, an op on a pending array is not answered by its rule, which would wait for it.)"""
    gate = Gate()
    y = gated(gate)(X)
    z = stagec.jit(lambda a, b: a * b)(y, y)  # enqueued behind y's call
    w = z + 1.0  # an eager op on a pending array: enqueued behind z's call, it returns at once
    assert not w.is_ready()
    gate.open()
    np.testing.assert_array_equal(np.asarray(w), (X * 2 + 1) ** 2 + 1)
    np.testing.assert_array_equal(np.asarray(z), (X * 2 + 1) ** 2)


def test_a_donated_pending_buffer_is_used_once_ready():
    gate = Gate()
    y = gated(gate)(X)
    double = stagec.jit(lambda a: a * 2, donate_argnums=0)
    z = double(y)
    assert y.is_deleted()
    gate.open()
    np.testing.assert_array_equal(np.asarray(z), (X * 2 + 1) * 2)


def failing(v):
    if float(v[0]) < 0:
        raise ValueError("negative input")
    return v


@stagec.jit
def checked_plus_one(v):
    return io_callback(failing, F32, v) + 1


@stagec.jit
def triple(v):
    return v * 3


def test_an_async_error_surfaces_at_the_sync_point_naming_callback_and_function():
    y = checked_plus_one(-X - 1)  # returns: the error happens on the worker
    with pytest.raises(CallbackError, match=r"callback 'failing_0' called from jit_checked_plus_one") as e:
        y.block_until_ready()
    assert "negative input" in str(e.value) and "asynchronously" in str(e.value)
    with pytest.raises(CallbackError, match="negative input"):  # the value never existed: every sync raises
        np.asarray(y)
    np.testing.assert_array_equal(np.asarray(checked_plus_one(X)), X + 1)  # the next call works


def test_a_call_on_a_failed_result_fails_naming_both_functions():
    z = triple(checked_plus_one(-X - 1))
    with pytest.raises(CallbackError, match=r"argument 0 of jit_triple is a result of jit_checked_plus_one.*negative"):
        z.block_until_ready()
    stagec.effects_barrier()  # the first call's error was raised with the second's


def test_an_error_without_results_surfaces_at_the_next_barrier_once():
    def check(v):
        raise KeyError("checked")
    f = stagec.jit(lambda v: debug.callback(check, v))
    assert f(X) is None  # nothing to wait on
    with pytest.raises(CallbackError, match="check.*checked"):
        stagec.effects_barrier()
    stagec.effects_barrier()  # reported once


def test_ordered_io_callbacks_keep_order_across_calls_and_functions():
    seen = []

    def log(v):
        seen.append(int(v))
        return np.int32(len(seen))
    f = stagec.jit(lambda v: io_callback(log, S((), np.int32), v, ordered=True))
    g = stagec.jit(lambda v: io_callback(log, S((), np.int32), v * 10, ordered=True) + 0)
    outs = [(f if k % 2 else g)(np.int32(k)) for k in range(12)]
    assert [int(o) for o in outs] == list(range(1, 13))
    assert seen == [k if k % 2 else 10 * k for k in range(12)]


def test_a_waiting_caller_never_runs_a_call_of_effects_beside_the_worker(monkeypatch):
    """A caller waiting for a call no one had started ran it on its thread, and the worker meanwhile took the next
    call: two ordered callbacks ran at once, out of order (the test above failed so in a CI-like run). Calls of
    debug and io callbacks now run on the worker, in order. The worker's claim is slowed here so that the caller's
    wait comes first every time."""
    backend = get_backend()
    claim = type(backend).claim

    def slow_claim(self, job, alone=False):
        if threading.get_ident() == self._worker_id:
            time.sleep(0.02)
        return claim(self, job, alone)
    monkeypatch.setattr(type(backend), "claim", slow_claim)
    seen = []

    def log(v):
        seen.append(int(v))
        time.sleep(0.05)  # (long enough for the worker to take the next call meanwhile)
        return np.int32(len(seen))
    f = stagec.jit(lambda v: io_callback(log, S((), np.int32), v, ordered=True))
    stagec.block_until_ready(f(np.int32(-1)))
    seen.clear()
    outs = [f(np.int32(k)) for k in range(4)]
    assert [int(o) for o in outs] == [1, 2, 3, 4]
    assert seen == [0, 1, 2, 3]


def test_threads_calling_one_module_at_once_each_get_a_results_list():
    """A module's calls reuse results lists from a pool; two threads taking its last list at once made the second
    call raise IndexError. The pool here yields between its look and its pop, so that threads meet there."""
    f = stagec.jit(lambda v: v * 2 + 1)
    np.asarray(f(X))
    (exe,) = [c.exe for c in f._cache.values()]

    class Yielding(list):
        def pop(self, *args):
            time.sleep(0.002)
            return super().pop(*args)
    exe._rets = Yielding(exe._rets)

    def work(i):
        for _ in range(20):
            np.testing.assert_array_equal(np.asarray(f(X + i)), (X + i) * 2 + 1)
    assert run_at_once(work, n=4) == []


def test_ordered_debug_prints_keep_order_across_calls_and_eager_prints(capsys):
    gate = Gate()
    f = stagec.jit(lambda v: debug.print("call {}", io_callback(gate, S((), np.int32), v), ordered=True))
    g = stagec.jit(lambda v: debug.print("other {}", v + 100, ordered=True))
    for k in range(6):
        (f if k % 2 else g)(np.int32(k))
    threading.Timer(0.05, gate.open).start()
    debug.print("eager {}", 6, ordered=True)  # waits for the queued prints
    stagec.effects_barrier()
    want = [f"call {k}" if k % 2 else f"other {k + 100}" for k in range(6)] + ["eager 6"]
    assert capsys.readouterr().out.splitlines() == want


def test_a_callback_may_call_compiled_code():
    inner = stagec.jit(lambda a: a * 5)

    def host(v):
        return np.asarray(inner(v)) + 1  # runs on the worker: must not wait behind itself
    f = stagec.jit(lambda v: stagec.pure_callback(host, F32, v))
    np.testing.assert_array_equal(np.asarray(f(X)), X * 5 + 1)


def test_eight_threads_calling_at_once_do_not_deadlock():
    f = stagec.jit(lambda v: stagec.pure_callback(np.cos, F32, v) * 2)
    g = stagec.jit(lambda v: snp.exp(v) + 1)
    errors, results = [], {}

    def work(t):
        x = X + t
        for _ in range(15):
            y = g(f(x))
        results[t] = np.asarray(y)
    errors = run_at_once(work)  # (fails the test if a thread is still running after 120 s: a deadlock)
    assert not errors
    for t in range(8):
        np.testing.assert_allclose(results[t], np.exp(np.cos(X + t) * 2) + 1, rtol=1e-6)


def test_modes_always_and_never(mode):
    mode("never")
    gate = Gate()
    gate.open()
    y = gated(gate)(X)  # synchronous: done on return
    assert y.is_ready()
    mode("always")
    tiny = stagec.jit(lambda v: v + 1)
    outs = [tiny(X) for _ in range(3)]  # a tiny call on the worker, in order
    np.testing.assert_array_equal(np.asarray(outs[-1]), X + 1)
    with pytest.raises(ValueError, match="async_dispatch.*'sometimes'"):
        mode("sometimes")


def test_auto_chooses_inline_or_enqueued_from_the_module_never_a_timing(monkeypatch):
    # "auto" runs a local-sync module inline when its work in all (elements in and out + multiply-adds / 8) is
    # under ASYNC_WORK, else enqueues it: decided when the module is loaded, from the module alone. A clock that
    # jumps a second each read (every call looks slow) changes nothing.
    if stagec.config.async_dispatch != "auto" or stagec.default_backend() != "cpu":
        pytest.skip("auto on the CPU only (a GPU backend enqueues every call)")
    from stagec import backend as backend_mod
    clock = iter(range(10 ** 9))
    monkeypatch.setattr(time, "perf_counter", lambda: float(next(clock)))
    tiny = stagec.jit(lambda v: v * 3)
    for _ in range(6):
        y = tiny(X)
        assert y.is_ready()
    np.testing.assert_array_equal(np.asarray(y), X * 3)
    monkeypatch.undo()
    n = backend_mod.ASYNC_WORK // 2  # (elements in and out: ASYNC_WORK in all)
    big = stagec.jit(lambda v: snp.exp(v))
    x = np.linspace(0, 1, n, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(big(x)), np.exp(x.astype(np.float64)), rtol=1e-6)
    (t,), (b,) = ([c.exe for c in f._cache.values()] for f in (tiny, big))
    assert (t.total, t.driver, b.total, b.driver) == (6, "local-sync", backend_mod.ASYNC_WORK, "local-sync")
    assert "call" not in vars(t) and "call" in vars(b)  # (inline: the class's `run`; enqueued: `submit`)


def test_eager_ops_when_every_call_is_asynchronous():
    old = stagec.config.async_dispatch
    stagec.config.update("async_dispatch", "always")
    stagec.clear_caches()  # executables choose their mode when loaded: load them again
    try:
        x = snp.asarray(np.array([1.0, 5.0, -2.0], np.float32))
        np.testing.assert_array_equal(np.asarray(x > 3), [False, True, False])
        np.testing.assert_allclose(np.asarray(snp.exp(x) + 1), np.exp([1.0, 5.0, -2.0]) + 1, rtol=1e-6)
        np.testing.assert_array_equal(np.asarray((x * 2).reshape(3, 1)), [[2.0], [10.0], [-4.0]])
    finally:
        stagec.config.update("async_dispatch", old)
        stagec.clear_caches()


def test_a_call_waited_for_at_once_runs_on_the_waiting_thread_and_one_waited_for_later_on_the_worker():
    # Waiting at once for each result, the caller runs the call itself (no hand-off to the worker and back);
    # doing other work first, it leaves the call to the worker, which starts at once. Whether a wait came at once
    # is set by hand (`Job.due`): the rule is tested, not how soon this thread runs on a loaded machine. The
    # callbacks that see the thread are pure ones: calls of debug and io callbacks always run on the worker.
    threads = []

    def host(v):
        threads.append(threading.get_ident())
        return v
    f = stagec.jit(lambda v: stagec.pure_callback(host, F32, v) + 1)
    for k in range(20):
        y = f(X + k)
        y._job[0].due = time.perf_counter() + 3600  # (waited for at once)
        np.testing.assert_array_equal(np.asarray(y), X + k + 1)
    assert threading.get_ident() in threads[1:]
    y = f(X)
    t_end = time.monotonic() + 30
    while not y._job[0].done and time.monotonic() < t_end:  # (other work: the worker takes the call meanwhile)
        time.sleep(0.001)
    np.testing.assert_array_equal(np.asarray(y), X + 1)
    assert threads[-1] != threading.get_ident()


def test_threads_waiting_on_each_others_pending_results():
    # The main thread runs a call it waited for at once while the worker runs another thread's call that
    # depends on it: the worker must wait for the main thread, not for more work in its queue.
    ran_on, gates = [], [Gate()]

    def host(v):
        ran_on.append(threading.get_ident())
        return gates[-1](v)
    f = stagec.jit(lambda v: stagec.pure_callback(host, F32, v) * 2 + 1)
    g = stagec.jit(lambda v: v * 3)
    gates[-1].open()
    np.asarray(g(f(X)))  # (compiled first)
    ran_on.clear()
    gate = Gate()
    gates.append(gate)
    warm = stagec.jit(lambda v: stagec.pure_callback(lambda a: a, F32, v) - 1)
    for _ in range(2):
        w = warm(X)
        w._job[0].due = time.perf_counter() + 3600  # (waited for at once, set by hand: the next call is left to its caller)
        np.asarray(w)
    out = {}
    other = threading.Thread(target=lambda: out.setdefault("z", np.asarray(g(y))))
    threading.Timer(0.05, other.start).start()  # g(y) is enqueued while the main thread runs y
    threading.Timer(0.3, gate.open).start()
    y = f(X)
    np.testing.assert_array_equal(np.asarray(y), X * 2 + 1)
    assert ran_on == [threading.get_ident()]
    time.sleep(0.1)
    other.join(60)
    assert not other.is_alive()
    np.testing.assert_array_equal(out["z"], (X * 2 + 1) * 3)


def test_a_barrier_waits_for_a_call_another_thread_is_running_for_itself():
    gate = Gate()
    ran_on = []

    def host(v):
        ran_on.append(threading.get_ident())
        return gate(v)
    f = stagec.jit(lambda v: stagec.pure_callback(host, F32, v) + 1)
    warm = stagec.jit(lambda v: stagec.pure_callback(lambda a: a, F32, v) - 1)
    gate.open()
    np.asarray(f(X))  # (compiled first)
    gate.event.clear()
    ran_on.clear()
    for _ in range(2):
        w = warm(X)
        w._job[0].due = time.perf_counter() + 3600  # (waited for at once, set by hand: the next call is left to its caller)
        np.asarray(w)
    main = threading.get_ident()
    opened_before_the_barrier_returned = []

    def other():
        stagec.effects_barrier()
        opened_before_the_barrier_returned.append(gate.event.is_set())
    t = threading.Thread(target=other)
    threading.Timer(0.05, t.start).start()  # while the main thread runs f's call, held at the gate
    threading.Timer(0.3, gate.open).start()
    y = f(X)
    np.testing.assert_array_equal(np.asarray(y), X + 1)
    time.sleep(0.1)
    t.join(60)
    assert ran_on == [main]
    assert opened_before_the_barrier_returned == [True]


def test_one_late_wait_leaves_the_caller_running_its_calls():
    # A wait that comes late once (a preemption, a garbage collection) does not hand the next call to the worker.
    if stagec.config.async_dispatch != "auto":
        pytest.skip("calls are dispatched one way only")
    x = stagec.device_put(np.random.default_rng(1).standard_normal((1024, 1024)).astype(np.float32))
    f = stagec.jit(lambda v: snp.tanh(v) * 3 - 1)  # (a costly call, dispatched asynchronously)
    np.asarray(f(x))
    stagec.wait_for_compiles()
    backend = get_backend()
    # When a first wait comes is set by hand (`Job.due`): the rule is tested, not how soon this thread runs.
    for _ in range(LATE_WAITS):
        y = f(x)
        y._job[0].due = time.perf_counter() + 3600  # (at once)
        np.asarray(y)
    assert backend.waits_at_once and backend.late_waits == 0
    y = f(x)
    y._job[0].due = time.perf_counter() - 1  # (late)
    np.asarray(y)
    assert backend.late_waits == 1 and backend.waits_at_once
    y = f(x)
    assert y._job[0].done  # (run by the caller before f returned)
    np.testing.assert_allclose(np.asarray(y), np.tanh(np.asarray(x)) * 3 - 1, rtol=1e-5, atol=1e-5)


def test_a_call_without_callbacks_runs_at_once_for_a_caller_that_waits_at_once():
    # Waiting for each result at once, the caller runs the next call before it returns (no worker woken); once it
    # does other work before waiting, the next calls are left to the worker, returned pending.
    if stagec.config.async_dispatch != "auto":
        pytest.skip("calls are dispatched one way only")
    x = np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)
    want = np.tanh(x.astype(np.float64)) * 2 + 1
    f = stagec.jit(lambda v: snp.tanh(v) * 2 + 1)  # (a costly call, dispatched asynchronously)
    np.asarray(f(x))
    stagec.wait_for_compiles()
    backend = get_backend()
    for _ in range(LATE_WAITS):  # (when each first wait comes is set by hand, `Job.due`: the rule is tested)
        y = f(x)
        y._job[0].due = time.perf_counter() + 3600
        np.asarray(y)
    for _ in range(5):
        y = f(x)
        assert y._job[0].done  # (run before f returned)
        y._job[0].due = time.perf_counter() + 3600  # (waited for at once)
        np.testing.assert_allclose(np.asarray(y), want, rtol=1e-5, atol=1e-6)
    for _ in range(LATE_WAITS):  # other work before each wait
        assert backend.waits_at_once
        y = f(x)
        y._job[0].due = time.perf_counter() - 1
        np.testing.assert_allclose(np.asarray(y), want, rtol=1e-5, atol=1e-6)
    assert not backend.waits_at_once  # (so the next call is enqueued for the worker)
    y = f(x)
    np.testing.assert_allclose(np.asarray(y), want, rtol=1e-5, atol=1e-6)


def test_a_first_wait_before_its_due_time_counts_as_at_once(mode):
    # A call the caller ran itself is due (`Job.due`) a twentieth of its own time after it returned
    # (AT_ONCE_SHARE): a first wait before then is at once, one after it late. Tested on the rule, not on how
    # long a sleep takes (a loaded machine preempts a 1 ms sleep for longer than a twentieth of the call).
    from stagec.dispatch import AT_ONCE_SHARE, WAIT_AT_ONCE_SECONDS
    mode("always")  # (every call a Job, whatever its cost: what a timing heuristic would choose is not tested)
    stagec.clear_caches()  # (executables choose their mode when loaded)
    x = stagec.device_put(np.random.default_rng(2).standard_normal((1024, 1024)).astype(np.float32) / 32)
    f = stagec.jit(lambda v: v @ v @ v @ v)  # (three BLAS calls: tens of ms, dispatched as a Job)
    want = np.asarray(f(x))
    backend = get_backend()
    t0 = time.perf_counter()
    y = f(x)
    t1 = time.perf_counter()
    job = y._job[0]
    if job.done:  # (run by the caller before f returned: due a twentieth of its time after, at least)
        assert t1 - t0 >= 0 and job.due <= t1 + max(WAIT_AT_ONCE_SECONDS, AT_ONCE_SHARE * (t1 - t0)) + 1e-6
    job.due = time.perf_counter() + 3600  # (a first wait long before its due time)
    np.testing.assert_array_equal(np.asarray(y), want)
    assert backend.late_waits == 0 and backend.waits_at_once
    y = f(x)
    y._job[0].due = time.perf_counter() - 1  # (a first wait past its due time)
    np.testing.assert_array_equal(np.asarray(y), want)
    assert backend.late_waits == 1
    y = f(x)
    y._job[0].due = time.perf_counter() + 3600  # (at once again: the count of late waits in a row restarts)
    np.asarray(y)
    assert backend.late_waits == 0
