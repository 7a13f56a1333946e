"""Run a function on several threads at once, for tests of thread safety."""
from __future__ import annotations

import threading
from typing import Callable


def run_at_once(work: Callable[[int], object], n: int = 8, timeout: float = 120) -> list[BaseException]:
    """Call `work(i)` for i in range(n), each on its own thread, all released together by a barrier; returns
    the exceptions they raised. A thread still running after `timeout` seconds fails the test (a deadlock)."""
    barrier, errors = threading.Barrier(n), []

    def run(i: int) -> None:
        try:
            barrier.wait()
            work(i)
        except BaseException as e:  # noqa: BLE001 - returned to the test
            errors.append(e)
    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "deadlock: threads still running"
    return errors
