"""`stagec.experimental`: APIs whose JAX counterparts live in `jax.experimental`."""
from __future__ import annotations

from .debug import io_callback

__all__ = ["io_callback"]
