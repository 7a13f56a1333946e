"""stagec's own MLIR passes (installed as `stagec.passes`). The pipeline is empty for now."""
from __future__ import annotations

from typing import Iterator

DEFAULT_PIPELINE: tuple[str, ...] = ()


def run_pipeline(module, passes=None) -> Iterator[tuple[str, str]]:
    """Run the named passes over `module` in place, yielding (pass name, IR text after it)."""
    names = DEFAULT_PIPELINE if passes is None or passes == "default" else tuple(passes or ())
    for name in names:
        raise NotImplementedError(f"stagec pass {name!r} is not implemented yet")
    return iter(())
