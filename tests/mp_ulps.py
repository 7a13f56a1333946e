"""Errors in ulps against mpmath references, for the accuracy tests (test_accuracy_composites, test_accuracy_gamma)."""
from __future__ import annotations

import mpmath
import numpy as np


def ulps(got, want, dt=np.float32) -> np.ndarray:
    """|got - want| in ulps of want rounded to dt (want: mpf values); 0 where both are below the smallest normal
    (flushed) or equal (infinities alike), inf where only one is infinite."""
    out = []
    tiny = float(np.finfo(dt).tiny)
    for g, r in zip(np.asarray(got).astype(np.float64), want):
        rf = float(r)
        if g == rf or (abs(rf) < tiny and abs(g) < tiny):
            out.append(0.0)
        elif not np.isfinite(rf) or not np.isfinite(g):
            out.append(np.inf)
        else:
            out.append(abs(float((mpmath.mpf(float(g)) - r) / float(np.spacing(np.abs(dt(rf)))))))
    return np.array(out)
