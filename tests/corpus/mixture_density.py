"""A Gaussian mixture's log-likelihood with logsumexp and scipy.stats, its gradient, and posterior
responsibilities; also jax.scipy.special's erf/ndtr family."""
import numpy as np

import jax
import jax.numpy as jnp
from jax.scipy import stats
from jax.scipy.special import logsumexp, erf, gammaln, ndtr, expit, xlogy


def log_likelihood(params, x):
    logits, means, log_scales = params
    log_w = jax.nn.log_softmax(logits)
    comp = stats.norm.logpdf(x[:, None], means[None, :], jnp.exp(log_scales)[None, :])
    return jnp.sum(logsumexp(comp + log_w, axis=1))


def responsibilities(params, x):
    logits, means, log_scales = params
    comp = stats.norm.logpdf(x[:, None], means, jnp.exp(log_scales)) + jax.nn.log_softmax(logits)
    return jnp.exp(comp - logsumexp(comp, axis=1, keepdims=True))


def main():
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.normal(-2, 0.5, 20), rng.normal(1.5, 1.0, 30)]).astype(np.float32)
    params = (jnp.zeros(2), jnp.array([-1.0, 1.0]), jnp.zeros(2))
    ll, g = jax.value_and_grad(log_likelihood)(params, x)
    t = jnp.linspace(-3.0, 3.0, 7)
    return {"ll": ll, "g_logits": g[0], "g_means": g[1], "g_scales": g[2], "resp": responsibilities(params, x[:6]),
            "erf": erf(t), "ndtr": ndtr(t), "gammaln": gammaln(t + 4.0), "expit": expit(t), "xlogy": xlogy(t, 2.0),
            "cdf": stats.norm.cdf(t, 0.5, 2.0), "ppf": stats.norm.ppf(jnp.array([0.1, 0.5, 0.9])),
            "laplace": stats.laplace.logpdf(t), "t": stats.t.logpdf(t, 3.0)}
