"""Working with pytrees: jax.tree and jax.tree_util, key paths, custom nodes, and transformations over them."""
from typing import NamedTuple

import numpy as np

import jax
import jax.numpy as jnp
from jax.tree_util import register_pytree_node_class, tree_flatten_with_path, keystr


class Params(NamedTuple):
    weight: jax.Array
    bias: jax.Array


@register_pytree_node_class
class Scaled:
    def __init__(self, value, scale):
        self.value, self.scale = value, scale

    def tree_flatten(self):
        return (self.value,), self.scale

    @classmethod
    def tree_unflatten(cls, scale, children):
        return cls(children[0], scale)


def main():
    rng = np.random.default_rng(4)
    tree = {"a": [jnp.asarray(rng.standard_normal(3), jnp.float32), jnp.arange(2.0)],
            "b": Params(jnp.ones((2, 2)), jnp.zeros(2)), "c": Scaled(jnp.full(3, 2.0), 3.0)}
    leaves = jax.tree.leaves(tree)
    doubled = jax.tree.map(lambda x: x * 2, tree)
    total = jax.tree.reduce(lambda a, b: a + jnp.sum(b), tree, 0.0)
    norms = jax.tree_util.tree_map(jnp.linalg.norm, tree)
    flat, treedef = jax.tree.flatten(tree)
    rebuilt = jax.tree.unflatten(treedef, [x + 1 for x in flat])
    paths = [keystr(p) for p, _ in tree_flatten_with_path(tree)[0]]
    assert paths == ["['a'][0]", "['a'][1]", "['b'].weight", "['b'].bias", "['c'][<flat index 0>]"], paths
    assert jax.tree.structure(tree).num_leaves == 5 and len(leaves) == 5
    assert jax.tree.all(jax.tree.map(lambda x: bool(jnp.all(jnp.isfinite(x))), tree))
    grads = jax.grad(lambda t: jax.tree.reduce(lambda a, b: a + jnp.sum(jnp.sin(b) * t["c"].scale), t, 0.0))(tree)
    return {"total": total, "norm_a0": norms["a"][0], "norm_bw": norms["b"].weight, "doubled_c": doubled["c"].value,
            "rebuilt_bias": rebuilt["b"].bias, "grad_a0": grads["a"][0], "grad_c": grads["c"].value}
