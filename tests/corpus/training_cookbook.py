"""JAX's "The Training Cookbook" (docs/the-training-cookbook.py, github.com/jax-ml/jax): a decoder-only transformer
(token and position embeddings, causal jax.nn.dot_product_attention over an einsum'd "3dkh" projection, rsqrt
normalisation, gelu MLP), its one-hot cross-entropy under value_and_grad, and its Adam update, trained on the ode
it ships. Changed, because stagec runs on one device and has no mutable references (docs/jax-differences.md):
the sharding (the mesh, `jax.P` fields, `out_sharding=` and the initializers' sharding argument) is dropped and
the Adam update returns new state instead of writing `jax.Ref`s in place (the same arithmetic); sizes are small
(2 layers, width 32, 2 heads of 8, sequence 24, batch 2), 3 float32 steps, and the logits of the trained parameters
rounded to bfloat16 (a bfloat16 training step is left out: its update, ~1e-4, flips roundings of the parameters)."""
import functools as ft
import itertools as it
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

ode = """
We are the music makers
    And we are the dreamers of dreams
Wandering by lone sea-breakers
    And sitting by desolate streams;
World-losers and world-forsakers
    On whom the pale moon gleams
Yet we are the movers and shaker
    Of the world for ever, it seems
"""


# tag: config
@jax.tree_util.register_static
@dataclass(kw_only=True, frozen=True)
class Config:
  seq_length: int = 24

  num_train_steps: int = 3
  host_batch_size: int = 2
  learning_rate: float = 1e-4
  beta_1: float = 0.9
  beta_2: float = 0.999
  eps: float = 1e-8
  eps_root: float = 0.0

  param_seed: int = 12738
  num_layers: int = 2
  embed_dim: int = 32
  mlp_dim: int = 32 * 4
  vocab_size: int = 2**8  # uint8 ascii encoding
  num_heads: int = 2
  head_dim: int = 8
  dtype: str = "float32"
  # tag: config


@jax.tree_util.register_pytree_with_keys_class
class dot_dict(dict):
  __setattr__ = dict.__setitem__
  __getattr__ = dict.__getitem__

  def tree_flatten_with_keys(self):
    keys = tuple(sorted(self))
    return tuple((jax.tree_util.DictKey(k), self[k]) for k in keys), keys

  @classmethod
  def tree_unflatten(cls, keys, values):
    return cls(zip(keys, values))


# tag: get-param-state
def init_param_state(config: Config) -> dot_dict:
  root_key = jax.random.key(config.param_seed)
  key = map(ft.partial(jax.random.fold_in, root_key), it.count())
  zero_init = jax.nn.initializers.constant(0.0)
  he_init = jax.nn.initializers.he_normal(1, 1)
  dtype = config.dtype

  params = dot_dict(
    pos_embed=zero_init(next(key), (config.seq_length, config.embed_dim), dtype),
    layers=dot_dict(),
  )
  params.embedding = he_init(next(key), (config.vocab_size, config.embed_dim), dtype)
  params.linear_in = dot_dict(
    kernel=he_init(next(key), (1, config.embed_dim), dtype),
    bias=zero_init(next(key), (config.embed_dim,), dtype),
  )
  params.linear_out = dot_dict(
    kernel=he_init(next(key), (config.embed_dim, config.vocab_size), dtype),
  )
  for layer in range(config.num_layers):
    qkv_shape = (3, config.embed_dim, config.num_heads, config.head_dim)
    out_shape = (config.num_heads, config.head_dim, config.embed_dim)
    params.layers[layer] = dot_dict(
      attention=dot_dict(
        qkv=he_init(next(key), qkv_shape, dtype),
        out=he_init(next(key), out_shape, dtype),
      ),
      mlp=dot_dict(
        in_kernel=he_init(next(key), (config.embed_dim, config.mlp_dim), dtype),
        out_kernel=he_init(next(key), (config.mlp_dim, config.embed_dim), dtype),
      ),
    )
  return params  # tag: get-param-state


# tag: model-apply
def model_apply(config: Config, params: dot_dict, tokens: jax.Array) -> jax.Array:
  out = params.embedding.at[tokens].get()
  out += params.pos_embed
  del tokens

  for layer in range(config.num_layers):
    block = params.layers[layer]
    att_skip = out  # 1 billion dollars in venture capital funding please
    qkv = jnp.einsum("bsd,3dkh->bs3kh", out, block.attention.qkv)
    out = jax.nn.dot_product_attention(qkv[:, :, 0, :], qkv[:, :, 1, :], qkv[:, :, 2, :], is_causal=True)
    out = jnp.einsum("bskh,khd->bsd", out, block.attention.out)
    out += att_skip
    out *= jax.lax.rsqrt(jnp.linalg.norm(out, axis=-1, keepdims=True) + 1e-6)

    mlp_skip = out  # machine learning circa 1986
    out = jnp.einsum("bsd,dh->bsh", out, block.mlp.in_kernel)
    out = jax.nn.gelu(out)
    out = jnp.einsum("bsh,hd->bsd", out, block.mlp.out_kernel)
    out += mlp_skip
    out *= jax.lax.rsqrt(jnp.linalg.norm(out, axis=-1, keepdims=True) + 1e-6)

  logits = jnp.einsum("bsd,dl->bsl", out, params.linear_out.kernel)
  return logits  # tag: model-apply


# tag: get-adam-state
def init_adam_state(param: jax.Array) -> dot_dict:
  adam_state = dot_dict(mu=jnp.zeros_like(param), nu=jnp.zeros_like(param), count=jnp.array(0))
  return adam_state  # tag: get-adam-state


# tag: adam-apply (the cookbook writes param and adam_state in place through jax.Ref; here they are returned)
def adam_update(config: Config, param: jax.Array, grad: jax.Array, adam_state: dot_dict):
  adam_state = dot_dict(adam_state)
  adam_state.mu = (1 - config.beta_1) * adam_state.mu + config.beta_1 * grad
  adam_state.nu = (1 - config.beta_2) * adam_state.nu + config.beta_2 * grad**2
  adam_state.count = adam_state.count + 1

  mu_hat = adam_state.mu / (1 - config.beta_1 ** adam_state.count)
  nu_hat = adam_state.nu / (1 - config.beta_2 ** adam_state.count)
  param = param - config.learning_rate * mu_hat / (jnp.sqrt(nu_hat + config.eps_root) + config.eps)
  return param, adam_state
  # tag: adam-apply


# tag: get-train-state
@jax.jit
def init_train_state(config: Config) -> dot_dict:
  train_state = dot_dict()
  train_state.params = init_param_state(config)
  train_state.opt = jax.tree.map(init_adam_state, train_state.params)
  return train_state  # tag: get-train-state


# tag: train-step
@jax.jit
def train_step(config: Config, train_state: dot_dict, batch: dict):
  def loss_fn(params):
    logits = model_apply(config, params, batch["observed_ids"])
    labels = jax.nn.one_hot(batch["target_ids"], config.vocab_size)
    return -(labels * jax.nn.log_softmax(logits)).mean()

  params = train_state.params
  loss, grad = jax.value_and_grad(loss_fn)(params)
  is_state = lambda x: isinstance(x, dot_dict) and set(x) == {"mu", "nu", "count"}
  updated = jax.tree.map(ft.partial(adam_update, config), params, grad, train_state.opt,
                         is_leaf=lambda x: is_state(x))
  leaves, treedef = jax.tree.flatten(params)
  pairs = treedef.flatten_up_to(updated)
  train_state = dot_dict(params=treedef.unflatten([p for p, _ in pairs]),
                         opt=treedef.unflatten([s for _, s in pairs]))
  metrics = {"train_loss": loss}
  return train_state, metrics  # tag: train-step


# tag: get-dataset
def get_dataset(config: Config, single_batch=ode):
  while True:
    observed_array = np.frombuffer(single_batch.encode("ascii"), dtype=np.uint8)
    target_array = np.roll(observed_array, -1)
    yield {  # repeat the sequence across the batch size to simulate multiple data points
      "observed_ids": np.tile(observed_array[: config.seq_length], (config.host_batch_size, 1)),
      "target_ids": np.tile(target_array[: config.seq_length], (config.host_batch_size, 1)),
    }
    # tag: get-dataset


# tag: train-loop
def train_loop(config: Config):
  losses = []
  train_state = init_train_state(config)
  batch = iter(get_dataset(config))
  for step in range(config.num_train_steps):
    train_state, metrics = train_step(config, train_state, next(batch))
    losses.append(metrics["train_loss"])
  return train_state, jnp.stack(losses)
  # tag: train-loop


def main():
  out = {}
  config = Config()
  train_state, out["losses"] = train_loop(config)
  out["embedding"] = train_state.params.embedding[ord("a")]
  out["qkv0"] = train_state.params.layers[0].attention.qkv[1, :4]
  out["mu_out"] = train_state.opt.linear_out.kernel.mu[:4, ord("e")]
  out["count"] = train_state.opt.linear_out.kernel.count
  batch = next(get_dataset(config))
  out["logits"] = jax.jit(model_apply, static_argnums=0)(config, train_state.params, batch["observed_ids"])[0, :, ::16]
  bf16 = Config(dtype="bfloat16")
  params16 = jax.tree.map(lambda p: p.astype(jnp.bfloat16), train_state.params)
  out["logits_bf16"] = jax.jit(model_apply, static_argnums=0)(bf16, params16, batch["observed_ids"])[0, :, ::16].astype(
      jnp.float32)
  return out
