"""`stagec.tree`: the short names of `stagec.tree_util` (as `jax.tree`)."""
from __future__ import annotations

from .tree_util import register_static as static  # noqa: F401
from .tree_util import (tree_all as all, tree_broadcast as broadcast, tree_flatten as flatten,  # noqa: F401
                        tree_flatten_with_path as flatten_with_path, tree_leaves as leaves,
                        tree_leaves_with_path as leaves_with_path, tree_map as map,
                        tree_map_with_path as map_with_path, tree_reduce as reduce, tree_reduce_associative as reduce_associative,
                        tree_structure as structure,
                        tree_transpose as transpose, tree_unflatten as unflatten)

__all__ = ["static", "all", "broadcast", "flatten", "flatten_with_path", "leaves", "leaves_with_path", "map", "map_with_path",
           "reduce", "reduce_associative", "structure", "transpose", "unflatten"]
