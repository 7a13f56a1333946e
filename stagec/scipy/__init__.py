"""`stagec.scipy`: the parts of `jax.scipy` programs reach for: `special`, `stats`, `linalg`."""
from __future__ import annotations

from . import linalg, special, stats  # noqa: F401
