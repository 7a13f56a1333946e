"""Upstream MLIR passes offered by name: `cse` and `canonicalize`."""
from __future__ import annotations

from .base import UpstreamPass, register

CSE = register(UpstreamPass("cse", "cse", "upstream common subexpression elimination (identical pure ops merged)"))
CANONICALIZE = register(UpstreamPass(
    "canonicalize", "canonicalize", "upstream canonicalizer: registered folds and canonical patterns, dead ops erased"))
