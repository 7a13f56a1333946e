"""The transformation and jit API with pytrees as JAX 0.10.2 has it: output structures, dtypes and weak types, and
which calls raise which error. The expected values (weak types included) are JAX's, stored here (CI runs without
JAX). Found by a differential fuzzer against JAX (see the `tr` helper's report)."""
from __future__ import annotations


import numpy as np
import pytest

import stagec
import stagec.numpy as snp
from stagec import tree_util as tu

float0 = stagec.float0


def _is(x, value, dtype="float32", weak=False, shape=()):
    assert isinstance(x, stagec.Array), type(x)
    assert (x.shape, x.dtype.name, x.aval.weak_type) == (shape, dtype, weak), (x.shape, x.dtype, x.aval)
    np.testing.assert_allclose(np.asarray(x), value, rtol=1e-6)


def test_tree_util_prefix_trees_children_compose():
    # tree_map: the other trees may have the first's structure as a prefix (JAX gave [(1, (1, 2)), (2, 3)]; stagec
    # raised "structures differ")
    assert tu.tree_map(lambda a, b: (a, b), [1, 2], [(1, 2), 3]) == [(1, (1, 2)), (2, 3)]
    assert tu.tree_map(lambda a, b: (a, b), {"a": 1, "b": 2}, {"a": [1, 2], "b": {"c": 3}}) == \
        {"a": (1, [1, 2]), "b": (2, {"c": 3})}
    for bad in ({"a": 1, "c": 2}, [1, 2], {"a": 1}):
        with pytest.raises(ValueError):
            tu.tree_map(lambda a, b: (a, b), {"a": 1, "b": 2}, bad)
    # flatten_up_to checks a dict's keys and a custom node's data (it took {"a", "c"} for {"a", "b"})
    with pytest.raises(ValueError):
        tu.tree_structure({"a": 0, "b": 0}).flatten_up_to({"a": 1, "c": 2})
    td = tu.tree_structure({"a": [1, 2], "b": 3})
    assert [c.num_leaves for c in td.children()] == [2, 1]  # a method, as JAX's (it was a tuple attribute)
    assert [c.num_leaves for c in tu.treedef_children(td)] == [2, 1]
    assert td.node_data()[0] is dict and tu.tree_structure(1).node_data() is None
    c = tu.tree_structure([0, {"a": 0}]).compose(tu.tree_structure((0, None, 0)))
    assert c.num_leaves == 4 and str(c) == "PyTreeDef([(*, None, *), {'a': (*, None, *)}])"
    assert tu.tree_unflatten(c, range(4)) == [(0, None, 1), {"a": (2, None, 3)}]
