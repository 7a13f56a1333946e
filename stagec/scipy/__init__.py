"""`stagec.scipy`: the parts of `jax.scipy` programs reach for: `special`, `stats`, `linalg`, `signal`."""
from __future__ import annotations

from . import linalg, signal, special, stats  # noqa: F401
