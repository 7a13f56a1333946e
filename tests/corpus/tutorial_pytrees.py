"""JAX's tutorial "Pytrees" (docs/pytrees.md): its code cells in order; printed values are returned as arrays
(leaf counts, shapes, key-path strings), NumPy's unseeded initialization is seeded, and the MLP's `update` is
called once on generated data."""
import collections

import jax
import jax.numpy as jnp
import numpy as np
from jax.tree_util import tree_structure


def main():
    out = {}
    example_trees = [
        [1, 'a', object()],
        (1, (2, 3), ()),
        [1, {'k1': 2, 'k2': (3, 4)}, 5],
        {'a': 2, 'b': (2, 3)},
        jnp.array([1, 2, 3]),
    ]
    # Print how many leaves the pytrees have.
    out["n_leaves"] = np.array([len(jax.tree.leaves(pytree)) for pytree in example_trees])

    list_of_lists = [
        [1, 2, 3],
        [1, 2],
        [1, 2, 3, 4]
    ]
    out["doubled"] = np.concatenate(jax.tree.map(lambda x: x*2, list_of_lists))
    another_list_of_lists = list_of_lists
    out["summed"] = np.concatenate(jax.tree.map(lambda x, y: x+y, list_of_lists, another_list_of_lists))

    np.random.seed(0)

    def init_mlp_params(layer_widths):
        params = []
        for n_in, n_out in zip(layer_widths[:-1], layer_widths[1:]):
            params.append(
                dict(weights=np.random.normal(size=(n_in, n_out)) * np.sqrt(2/n_in),
                     biases=np.ones(shape=(n_out,))
                     )
            )
        return params

    params = init_mlp_params([1, 128, 128, 1])
    out["shapes"] = np.array(repr(jax.tree.map(lambda x: x.shape, params)))

    # Define the forward pass.
    def forward(params, x):
        *hidden, last = params
        for layer in hidden:
            x = jax.nn.relu(x @ layer['weights'] + layer['biases'])
        return x @ last['weights'] + last['biases']

    # Define the loss function.
    def loss_fn(params, x, y):
        return jnp.mean((forward(params, x) - y) ** 2)

    # Set the learning rate.
    LEARNING_RATE = 0.0001

    @jax.jit
    def update(params, x, y):
        grads = jax.grad(loss_fn)(params, x, y)
        return jax.tree.map(
            lambda p, g: p - LEARNING_RATE * g, params, grads
        )

    xs = np.random.normal(size=(128, 1))
    ys = xs ** 2 + 0.1 * np.random.normal(size=(128, 1))
    params = update(params, xs, ys)
    out["updated_w2"], out["updated_b1"] = params[2]['weights'], params[1]['biases']

    out["structure_object"] = np.array(str(tree_structure(object)))

    ATuple = collections.namedtuple("ATuple", ('name'))
    tree = [1, {'k1': 2, 'k2': (3, 4)}, ATuple('foo')]
    flattened, _ = jax.tree_util.tree_flatten_with_path(tree)
    out["keystrs"] = np.array([f'tree{jax.tree_util.keystr(key_path)}: {value}' for key_path, value in flattened])

    a_tree = [jnp.zeros((2, 3)), jnp.zeros((3, 4))]
    # Try to make another pytree with ones instead of zeros.
    shapes = jax.tree.map(lambda x: x.shape, a_tree)
    try:
        jax.tree.map(jnp.ones, shapes)
        out["ones_of_shapes"] = np.array(0)
    except Exception:
        out["ones_of_shapes"] = np.array(1)

    out["none_leaves"] = np.array(len(jax.tree.leaves([None, None, None])))
    out["none_is_leaf"] = np.array(len(jax.tree.leaves([None, None, None], is_leaf=lambda x: x is None)))

    try:  # (the tutorial shows this cell failing)
        jax.tree.map(lambda x: x + 1, {1: 7, "y": 42})
        out["mixed_keys_error"] = np.array([0, 0])
    except (TypeError, ValueError) as e:
        out["mixed_keys_error"] = np.array([isinstance(e, TypeError), isinstance(e, ValueError)])

    def tree_transpose(list_of_trees):
        """
        Converts a list of trees of identical structure into a single tree of lists.
        """
        return jax.tree.map(lambda *xs: list(xs), *list_of_trees)

    # Convert a dataset from row-major to column-major.
    episode_steps = [dict(t=1, obs=3), dict(t=2, obs=4)]
    out["transposed"] = np.array(repr(tree_transpose(episode_steps)))
    out["tree_transpose"] = np.array(repr(jax.tree.transpose(
        outer_treedef=jax.tree.structure([0 for e in episode_steps]),
        inner_treedef=jax.tree.structure(episode_steps[0]),
        pytree_to_transpose=episode_steps
    )))
    return out
