"""JAX's tutorial "Training a simple neural network, with PyTorch data loading"
(docs/notebooks/Neural_Network_and_Data_Loading.md): its code cells in order, MNIST and the PyTorch DataLoader
replaced by generated 28x28 images: 10 to train on and 10 to test, the shape of the tutorial's batch of random
images, so that `accuracy` and `batched_predict` on that batch share their eager kernels (the data set's size is not
the tutorial's point; each eager shape costs kernel compiles). With batches of 128, an epoch is one step."""
import jax.numpy as jnp
from jax import grad, jit, vmap
from jax import random
from jax.scipy.special import logsumexp
import numpy as np


# A helper function to randomly initialize weights and biases
# for a dense neural network layer
def random_layer_params(m, n, key, scale=1e-2):
    w_key, b_key = random.split(key)
    return scale * random.normal(w_key, (n, m)), scale * random.normal(b_key, (n,))


# Initialize all layers for a fully-connected neural network with sizes "sizes"
def init_network_params(sizes, key):
    keys = random.split(key, len(sizes))
    return [random_layer_params(m, n, k) for m, n, k in zip(sizes[:-1], sizes[1:], keys)]


layer_sizes = [784, 512, 512, 10]
step_size = 0.01
num_epochs = 8
batch_size = 128
n_targets = 10


def relu(x):
    return jnp.maximum(0, x)


def predict(params, image):
    # per-example predictions
    activations = image
    for w, b in params[:-1]:
        outputs = jnp.dot(w, activations) + b
        activations = relu(outputs)

    final_w, final_b = params[-1]
    logits = jnp.dot(final_w, activations) + final_b
    return logits - logsumexp(logits)


# Make a batched version of the `predict` function
batched_predict = vmap(predict, in_axes=(None, 0))


def one_hot(x, k, dtype=jnp.float32):
    """Create a one-hot encoding of x of size k."""
    return jnp.array(x[:, None] == jnp.arange(k), dtype)


def accuracy(params, images, targets):
    target_class = jnp.argmax(targets, axis=1)
    predicted_class = jnp.argmax(batched_predict(params, images), axis=1)
    return jnp.mean(predicted_class == target_class)


def loss(params, images, targets):
    preds = batched_predict(params, images)
    return -jnp.mean(preds * targets)


@jit
def update(params, x, y):
    grads = grad(loss)(params, x, y)
    return [(w - step_size * dw, b - step_size * db)
            for (w, b), (dw, db) in zip(params, grads)]


def main():
    params = init_network_params(layer_sizes, random.key(0))

    # This works on single examples
    random_flattened_image = random.normal(random.key(1), (28 * 28,))
    preds = predict(params, random_flattened_image)

    # Doesn't work with a batch
    random_flattened_images = random.normal(random.key(1), (10, 28 * 28))
    invalid = 0
    try:
        preds = predict(params, random_flattened_images)
    except TypeError:
        invalid = 1

    batched_preds = batched_predict(params, random_flattened_images)

    # The data: generated images whose class is the brightest of ten pixel bands
    rng = np.random.default_rng(0)
    n = len(random_flattened_images)
    labels = rng.integers(0, 10, 2 * n)
    images = rng.integers(0, 128, (2 * n, 28 * 28)).astype(np.float32)
    for i, c in enumerate(labels):
        images[i, c * 78:(c + 1) * 78] += 127
    train_images, test_images = images[:n], jnp.array(images[n:], dtype=jnp.float32)
    train_labels, test_labels = one_hot(labels[:n], n_targets), one_hot(labels[n:], n_targets)
    training_generator = [(train_images[i:i + batch_size], labels[:n][i:i + batch_size])
                          for i in range(0, n, batch_size)]

    accs = []
    for epoch in range(num_epochs):
        for x, y in training_generator:
            y = one_hot(y, n_targets)
            params = update(params, x, y)
        train_acc = accuracy(params, train_images, train_labels)
        test_acc = accuracy(params, test_images, test_labels)
        accs.append((train_acc, test_acc))

    return {"preds": preds, "invalid": np.array(invalid), "batched_preds": batched_preds,
            "accs": jnp.array(accs), "w0": params[0][0][:4, :100], "b2": params[-1][1],
            "test_logits": batched_predict(params, test_images)}
