"""Hide nanobind's "leaked ..." report at interpreter exit (harmless, printed when both IREE bindings are
loaded; see shared/iree-facts.md). Set STAGEC_SHOW_LEAKS=1 to keep it."""
from __future__ import annotations

import atexit
import os
import sys


def _silence_stderr_at_exit() -> None:
    try:
        sys.stderr.flush()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)  # after atexit handlers only interpreter teardown writes here
    except OSError:
        pass


def install() -> None:
    if os.environ.get("STAGEC_SHOW_LEAKS", "0") in ("", "0"):
        atexit.register(_silence_stderr_at_exit)
