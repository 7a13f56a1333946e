"""JAX's tutorial "Generalized convolutions in JAX" (docs/notebooks/convolutions.md), its code cells in order with
the plots and prints dropped and SciPy's sample photo replaced by a generated grayscale image (64x48)."""
from jax import random
import jax.numpy as jnp
import numpy as np
import jax.scipy as jsp
from jax import lax


def main():
    key = random.key(1701)

    x = jnp.linspace(0, 10, 500)
    y = jnp.sin(x) + 0.2 * random.normal(key, shape=(500,))

    window = jnp.ones(10) / 10
    y_smooth = jnp.convolve(y, window, mode='same')

    # Load a sample image; compute mean() to convert from RGB to grayscale.
    image = jnp.array(np.add.outer(np.linspace(0, 255, 64), np.linspace(0, 128, 48)) % 256)
    # Create a noisy version by adding random Gaussian noise
    key = random.key(1701)
    noisy_image = image + 50 * random.normal(key, image.shape)
    # Smooth the noisy image with a 2D Gaussian smoothing kernel.
    x = jnp.linspace(-3, 3, 7)
    window = jsp.stats.norm.pdf(x) * jsp.stats.norm.pdf(x[:, None])
    smooth_image = jsp.signal.convolve(noisy_image, window, mode='same')

    # 2D kernel - HWIO layout
    kernel = jnp.zeros((3, 3, 3, 3), dtype=jnp.float32)
    kernel += jnp.array([[1, 1, 0],
                         [1, 0, -1],
                         [0, -1, -1]])[:, :, jnp.newaxis, jnp.newaxis]

    # NHWC layout
    img = jnp.zeros((1, 200, 198, 3), dtype=jnp.float32)
    for k in range(3):
        x = 30 + 60 * k
        y = 20 + 60 * k
        img = img.at[0, x:x + 10, y:y + 10, k].set(1.0)

    out_conv = lax.conv(jnp.transpose(img, [0, 3, 1, 2]),    # lhs = NCHW image tensor
                        jnp.transpose(kernel, [3, 2, 0, 1]),  # rhs = OIHW conv kernel tensor
                        (1, 1),  # window strides
                        'SAME')  # padding mode

    out_general_padding = lax.conv_with_general_padding(
        jnp.transpose(img, [0, 3, 1, 2]),    # lhs = NCHW image tensor
        jnp.transpose(kernel, [3, 2, 0, 1]),  # rhs = OIHW conv kernel tensor
        (1, 1),  # window strides
        ((2, 2), (2, 2)),  # general padding 2x2
        (1, 1),  # lhs/image dilation
        (1, 1))  # rhs/kernel dilation

    dn = lax.conv_dimension_numbers(img.shape,     # only ndim matters, not shape
                                    kernel.shape,  # only ndim matters, not shape
                                    ('NHWC', 'HWIO', 'NHWC'))  # the important bit

    out_same = lax.conv_general_dilated(img, kernel, (1, 1), 'SAME', (1, 1), (1, 1), dn)
    out_valid = lax.conv_general_dilated(img, kernel, (1, 1), 'VALID', (1, 1), (1, 1), dn)
    out_strided = lax.conv_general_dilated(img, kernel, (2, 2), 'SAME', (1, 1), (1, 1), dn)
    out_rhs_dilated = lax.conv_general_dilated(img, kernel, (1, 1), 'VALID', (1, 1), (12, 12), dn)
    out_lhs_dilated = lax.conv_general_dilated(img, kernel, (1, 1), ((0, 0), (0, 0)), (2, 2), (1, 1), dn)

    # transposed conv = 180deg kernel rotation plus LHS dilation
    # rotate kernel 180deg:
    kernel_rot = jnp.rot90(jnp.rot90(kernel, axes=(0, 1)), axes=(0, 1))
    # need a custom output padding:
    padding = ((2, 1), (2, 1))
    out_transposed = lax.conv_general_dilated(img, kernel_rot, (1, 1), padding, (2, 2), (1, 1), dn)

    # 1D kernel - WIO layout
    kernel = jnp.array([[[1, 0, -1], [-1, 0, 1]],
                        [[1, 1, 1], [-1, -1, -1]]],
                       dtype=jnp.float32).transpose([2, 1, 0])
    # 1D data - NWC layout
    data = np.zeros((1, 200, 2), dtype=jnp.float32)
    for i in range(2):
        for k in range(2):
            x = 35 * i + 30 + 60 * k
            data[0, x:x + 30, k] = 1.0
    dn1 = lax.conv_dimension_numbers(data.shape, kernel.shape, ('NWC', 'WIO', 'NWC'))
    out_1d = lax.conv_general_dilated(data, kernel, (1,), 'SAME', (1,), (1,), dn1)

    # Random 3D kernel - HWDIO layout
    kernel = jnp.array([
        [[0, 0, 0], [0, 1, 0], [0, 0, 0]],
        [[0, -1, 0], [-1, 0, -1], [0, -1, 0]],
        [[0, 0, 0], [0, 1, 0], [0, 0, 0]]],
        dtype=jnp.float32)[:, :, :, jnp.newaxis, jnp.newaxis]
    # 3D data - NHWDC layout
    data = jnp.zeros((1, 30, 30, 30, 1), dtype=jnp.float32)
    x, y, z = np.mgrid[0:1:30j, 0:1:30j, 0:1:30j]
    data += (jnp.sin(2 * x * jnp.pi) * jnp.cos(2 * y * jnp.pi) * jnp.cos(2 * z * jnp.pi))[None, :, :, :, None]
    dn3 = lax.conv_dimension_numbers(data.shape, kernel.shape, ('NHWDC', 'HWDIO', 'NHWDC'))
    out_3d = lax.conv_general_dilated(data, kernel, (1, 1, 1), 'SAME', (1, 1, 1), (1, 1, 1), dn3)

    return {"y_smooth": y_smooth, "smooth_image": smooth_image, "out_conv": out_conv,
            "out_general_padding": out_general_padding, "dn": np.array(dn), "out_same": out_same,
            "out_valid": out_valid, "out_strided": out_strided, "out_rhs_dilated": out_rhs_dilated,
            "out_lhs_dilated": out_lhs_dilated, "out_transposed": out_transposed, "dn1": np.array(dn1),
            "out_1d": out_1d, "out_3d": out_3d}
