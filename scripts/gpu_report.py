"""pytest plugin: append each test's outcome (and a failure's text) to $REP_FILE as it happens, so a run cut short
by a lent GPU's time limit still says what it reached (pytest's own summary comes only at the end).

  REP_FILE=$OUT/cuda.rep PYTHONPATH=scripts STAGEC_BACKEND=cuda python -m pytest -p gpu_report -n 10 tests"""
import os
import time

_f = None
_t0 = time.time()


def pytest_runtest_logreport(report):
    global _f
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    if report.when != "call" and not (report.failed or report.skipped):
        return
    if report.skipped and report.when != "call" and not os.environ.get("REP_SKIPS"):
        return
    if _f is None:
        _f = open(os.environ["REP_FILE"], "a", buffering=1)
    out = "FAILED" if report.failed else "SKIPPED" if report.skipped else "passed"
    _f.write(f"{time.time() - _t0:7.1f} {out} {report.when} {report.nodeid} {report.duration:.1f}s\n")
    if report.failed:
        txt = report.longreprtext
        _f.write("    " + txt[-2500:].replace("\n", "\n    ") + "\n")
