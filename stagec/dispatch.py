"""Async dispatch: one worker thread per backend runs enqueued calls in order (`Dispatcher`, which `Backend`
is), a call's `Job`, and `PendingArguments` (an argument that is an enqueued call's pending result)."""
from __future__ import annotations

import atexit
import collections
import queue
import threading
import time
from typing import TYPE_CHECKING

from .compiler.processes import block_sigint

if TYPE_CHECKING:
    from .backend import Executable

# A caller that waits for a call's result within this time of making it ran nothing meanwhile worth overlapping;
# nor within this share of the call's own time, for a call run on its thread (the caller's own way from the call's
# return to its wait: wrapping results, a pytree, `block_until_ready`; docs/log.md).
WAIT_AT_ONCE_SECONDS, AT_ONCE_SHARE = 5e-5, 0.05
# ... and it is taken to overlap its calls with other work once this many waits in a row came later: one late wait
# is as often a preemption or a garbage collection.
LATE_WAITS = 2


class Dispatcher:
    """The worker thread of a backend and the order of its calls (mixed into `backend.Backend`).

    Calls are claimed in the order they were enqueued, by the worker or by a caller waiting for one that no one has
    started while nothing else runs, unless it has effects (`Job.wait`: no hand-off to the worker and back then).
    While the caller waits for its calls at once (`waits_at_once`), the next call runs on its thread when nothing
    else is queued (`submit`), else it is left for it to run when it waits."""

    def _init_dispatch(self) -> None:
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._worker: threading.Thread | None = None
        self._worker_id = -1
        self._idle = True  # the worker waits for work (heuristic: read without a lock)
        self._claim_lock = threading.Lock()
        self._enqueued = self._claimed = self._running = 0
        self.late_waits = LATE_WAITS  # the caller's waits in a row that came later than `WAIT_AT_ONCE_SECONDS`
        self._stolen: tuple | None = None  # (job, thread) a waiting caller is running (`run_stolen`)
        self.failed: collections.deque = collections.deque(maxlen=64)  # failed Jobs no one has raised yet

    @property
    def waits_at_once(self) -> bool:
        """Whether the caller waited for its recent calls at once: fewer than `LATE_WAITS` late waits in a row."""
        return self.late_waits < LATE_WAITS

    def submit(self, exe: Executable, args: list) -> Job:
        """Enqueue a call of `exe` on `args` (buffer views, or (Job, index) of earlier calls' results)."""
        job = Job(exe, args)
        if threading.get_ident() == self._worker_id:  # compiled code called from a host callback: run it now
            job.run()
            return job
        if self._worker is None:
            with self._lock:
                if self._worker is None:
                    self._start_worker()
                    atexit.register(self._drain)
        at_once = self.waits_at_once
        if at_once and exe is not None and not exe.host_calls and self._claim_now(job):
            # The caller waited for its last call at once, and nothing is queued or running: run this one on its
            # thread now. Even enqueued for the caller to take back (`Job.wait`), it woke the worker, whose grab
            # for the GIL then delayed the caller (docs/design.md has the measurements).
            # Not a call of host callbacks: one may wait for what the caller does once the call has returned.
            t0 = time.perf_counter()
            self.run_stolen(job)
            t1 = time.perf_counter()
            job.due = t1 + max(WAIT_AT_ONCE_SECONDS, AT_ONCE_SHARE * (t1 - t0))
            return job
        idle = self._idle
        self._enqueue(job)
        # Let the worker take the GIL now (a caller busy in Python would otherwise keep it for up to the switch
        # interval, 5 ms), unless the caller is expected to wait for this
        # call at once and run it itself, with no earlier call still waiting to start.
        if idle and (not at_once or job.seq > self._claimed):
            time.sleep(0)
        job.due = time.perf_counter() + WAIT_AT_ONCE_SECONDS
        return job

    def _start_worker(self) -> None:
        t = threading.Thread(target=self._work, name=f"stagec-{self.name}", daemon=True)
        t.start()  # (returns once the thread runs: its first allocations are made; `_work` sets `_worker_id`)
        self._worker = t

    def renew_worker(self) -> None:
        """Have the worker hand the calls queued after this one to a fresh thread. glibc gives a thread its heap
        (arena) at its first allocation; `backend._keep_heap` limits new threads to the main one, the only one
        that serves a large block from memory kept after a call (another maps it afresh, and every call faults it
        in again)."""
        if self._worker is not None:
            self._queue.put(_RENEW)

    def _enqueue(self, job: Job | None) -> None:
        with self._claim_lock:
            if job is not None:
                job.seq, self._enqueued = self._enqueued, self._enqueued + 1
            self._queue.put(job)

    def _claim_now(self, job: Job) -> bool:
        """Whether `job`, not enqueued, is now this thread's to run: no enqueued call waits or runs."""
        with self._claim_lock:
            if self._claimed != self._enqueued or self._running:
                return False
            job.seq = self._enqueued
            self._enqueued += 1
            self._claimed += 1
            self._running += 1
            return True

    def claim(self, job: Job, alone: bool = False) -> bool:
        """Whether `job` is now this thread's to run: the next enqueued call, and (`alone`) none is running."""
        with self._claim_lock:
            if job.seq != self._claimed or (alone and self._running):
                return False
            self._claimed += 1
            self._running += 1
            return True

    def run_stolen(self, job: Job) -> None:
        """Run a claimed `job` on a waiting caller's thread (one at a time: claimed alone), seen by `barrier`."""
        self._stolen = (job, threading.get_ident())
        try:
            self.run_claimed(job)
        finally:
            self._stolen = None

    def run_claimed(self, job: Job) -> None:
        try:
            job.run()
        finally:
            with self._claim_lock:
                self._running -= 1

    def _work(self) -> None:
        self._worker_id = threading.get_ident()  # (before its first call: a host callback's calls run on it)
        block_sigint()  # (a Ctrl-C is the main thread's)
        q = self._queue
        while True:
            self._idle = q.empty()
            job = q.get()
            self._idle = False
            if job is None:
                return
            if job is _RENEW:
                try:
                    self._start_worker()  # (while this one holds its arena: the new one cannot take it)
                    return
                except RuntimeError:  # (interpreter shutdown: no new threads; this one goes on)
                    continue
            if self.claim(job):  # (else a waiting caller ran it)
                self.run_claimed(job)

    def help_until(self, job: Job) -> None:
        """On the worker thread (inside a host callback), run queued calls until `job` is done."""
        while not job.done:
            nxt = self._queue.get()
            if nxt is _RENEW:  # (busy in a callback: this thread stays the worker)
                continue
            if nxt is None:
                raise RuntimeError(f"stagec backend {self.name!r}: worker stopped before {job.exe.name} ran")
            if self.claim(nxt):
                self.run_claimed(nxt)

    def barrier(self) -> None:
        """Wait until every call enqueued so far has run; then raise the first asynchronous failure not yet
        raised (`raise_failed`)."""
        if self._worker is not None:
            self.submit(None, []).wait()
        stolen = self._stolen  # (a call enqueued before, which a waiting caller is running on its thread)
        if stolen is not None and stolen[1] != threading.get_ident():
            stolen[0].wait()
        self.raise_failed()

    def raise_failed(self) -> None:
        """Raise the error of the first failed call whose error no synchronizing point has raised yet."""
        while self.failed:
            job = self.failed.popleft()
            if not job.reported:
                job.raise_error()

    def _drain(self) -> None:  # at exit: let queued calls (and their prints) finish
        if self._worker is not None and self._worker.is_alive():
            done = Job(None, [])
            self._enqueue(done)
            self._enqueue(None)
            done._lock.acquire(timeout=60)


_RENEW = object()  # queued by `renew_worker`


class PendingArguments(Exception):
    """Raised by `array.to_buffers` when an argument is an enqueued call's pending result: `bvs` holds buffer
    views and (Job, index) pairs, for `Executable.submit` (an exception keeps the common path free of tests)."""

    def __init__(self, bvs: list):
        super().__init__("pending arguments")
        self.bvs = bvs


class Job:
    """A call enqueued on a backend's worker thread: its results (buffer views) once run, or its error.

    `wait()` blocks until it ran; `result(i)` is its i-th result or raises the error, naming the function."""

    __slots__ = ("exe", "args", "outs", "error", "done", "reported", "seq", "due", "_lock")

    def __init__(self, exe: Executable | None, args: list):
        self.exe, self.args, self.outs, self.error, self.done, self.reported = exe, args, None, None, False, False
        # its place in the queue; until when a first wait counts as at once (`submit`; 0: waited for since)
        self.seq, self.due = -1, 0.0
        self._lock = threading.Lock()
        self._lock.acquire()  # released once run

    def run(self) -> None:
        exe = self.exe
        try:
            if exe is not None:  # (None: a barrier)
                args = self.args
                for k, a in enumerate(args):
                    if type(a) is tuple:  # an earlier call's result
                        try:
                            args[k] = a[0].result(a[1])
                        except Exception as e:  # (result() marked its error reported: this one carries it)
                            raise _like(e, f"argument {k} of {exe.name} is a result of {a[0].exe.name}, which "
                                           f"failed: {e}") from e
                self.outs = exe.run(args)
        except BaseException as e:  # (kept for the caller: the worker goes on)
            self.error = e
            exe.backend.failed.append(self)
        finally:
            self.args = None
            self.done = True
            self._lock.release()

    def wait(self) -> Job:
        backend = self.exe.backend if self.exe is not None else None
        on_worker = backend is not None and threading.get_ident() == backend._worker_id
        if self.due and backend is not None and not on_worker:  # a caller's first wait for its call: how soon?
            backend.late_waits = backend.late_waits + 1 if time.perf_counter() >= self.due else 0
            self.due = 0.0
        if not self.done:
            if on_worker and self.seq >= backend._claimed:  # (not started: run the queue up to it)
                backend.help_until(self)
            elif not on_worker and backend is not None and not self.exe.effects and backend.claim(self, alone=True):
                # No one had started it: run here, no hand-off to the worker and back. Not a call of host callbacks
                # with effects (debug, io): the worker may take the next call meanwhile, and the two calls' effects
                # would run at once, out of order.
                backend.run_stolen(self)
            else:
                self._lock.acquire()
                self._lock.release()
        return self

    def result(self, i: int):
        if not self.done or self.due:
            self.wait()
        if self.error is not None:
            self.raise_error()
        return self.outs[i]

    def raise_error(self):
        self.reported = True
        e = self.error
        msg = str(e) if self.exe.name in str(e) else f"{self.exe.name}: {e}"
        raise _like(e, f"{msg} (raised by asynchronously dispatched work)") from e


def _like(e: Exception, msg: str) -> Exception:
    """An exception of `e`'s class (RuntimeError when that class takes no message) saying `msg`."""
    try:
        return type(e)(msg)
    except Exception:
        return RuntimeError(msg)
