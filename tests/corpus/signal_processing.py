"""1-D signal processing with jax.numpy: moving averages with convolve, cross-correlation to find a lag,
windows, interpolation, cumulative sums and diagonal matrices."""
import numpy as np

import jax
import jax.numpy as jnp


def main():
    rng = np.random.default_rng(8)
    t = np.linspace(0, 1, 64).astype(np.float32)
    sig = (np.sin(2 * np.pi * 5 * t) + 0.3 * rng.standard_normal(64)).astype(np.float32)
    smooth = jnp.convolve(sig, jnp.ones(5) / 5, mode="same")
    shifted = jnp.roll(sig, 3)
    xc = jnp.correlate(shifted, sig, mode="full")
    lag = jnp.argmax(xc) - (sig.shape[0] - 1)
    win = sig[:16] * jnp.hanning(16)
    up = jnp.interp(jnp.linspace(0, 1, 9), t, sig)
    D = jnp.diag(jnp.arange(1.0, 4.0)) + jnp.diag(jnp.ones(2), 1)
    tri = jnp.zeros((4, 4)).at[jnp.triu_indices(4)].set(1.0)
    grad_of_energy = jax.grad(lambda s: jnp.sum(jnp.convolve(s, jnp.array([1.0, -1.0]), mode="valid") ** 2))(sig[:8])
    assert jnp.ndim(D) == 2 and jnp.allclose(D, D.T + jnp.diag(jnp.ones(2), 1) - jnp.diag(jnp.ones(2), -1))
    return {"smooth": smooth, "lag": lag, "win": win, "up": up, "D": D, "tri": tri, "grad": grad_of_energy,
            "cumsum": jnp.cumsum(sig[:8]), "gradient": jnp.gradient(sig[:8]), "sinc": jnp.sinc(t[:5])}
