"""JAX names stagec does not have: an attribute lookup raises `NotInStagec` naming the name and what to use
instead (a module's `__getattr__ = missing(__name__, HINTS)`). It is both a `NotImplementedError` (what the
user sees) and an `AttributeError` (so `hasattr` and `getattr(m, name, default)` still work)."""
from __future__ import annotations

from typing import Callable


class NotInStagec(NotImplementedError, AttributeError):
    """A name of JAX's API that stagec does not implement."""


def missing(module: str, hints: dict[str, str]) -> Callable[[str], object]:
    """A module `__getattr__` raising `NotInStagec` for the names in `hints` (name -> what to use instead)."""
    def __getattr__(name: str):
        hint = hints.get(name)
        if hint is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        raise NotInStagec(f"{module}.{name} is not implemented in stagec: {hint}")
    return __getattr__


def table(names: str, hint: str) -> dict[str, str]:
    """{name: hint} for the space-separated `names`."""
    return {n: hint for n in names.split()}


ONE_DEVICE = "stagec runs each computation on one device (no sharding, meshes or collectives); see docs/jax-differences.md"
PRIMITIVE = ("JAX's primitive objects are JAX internals; stagec's own primitives are in stagec.primitives "
             "(all_primitives()), with different parameters")
