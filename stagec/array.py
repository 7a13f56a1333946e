"""`stagec.Array`: an IREE device buffer with an abstract value, usable like a NumPy array; and how Python
values become device buffers (`to_buffers`)."""
from __future__ import annotations

import gc
import os
import struct
from typing import Any, Sequence

import numpy as np

from . import dtypes as _dt
from . import tree_util
from .backend import Backend, at_exit_release, backends, get_backend
from .dispatch import PendingArguments
from .core import ArrayOps, ShapedArray, aval_of, to_numpy_constant


_new = object.__new__


class SingleDeviceSharding:
    """The placement of an array on one device (JAX's `jax.sharding.SingleDeviceSharding`)."""

    __slots__ = ("_device",)

    def __init__(self, device):
        self._device = device

    device_set = property(lambda self: {self._device})
    num_devices = property(lambda self: 1)
    is_fully_replicated = property(lambda self: True)
    is_fully_addressable = property(lambda self: True)
    memory_kind = property(lambda self: None)

    def shard_shape(self, global_shape: Sequence[int]) -> tuple:
        return tuple(global_shape)

    def devices_indices_map(self, global_shape: Sequence[int]) -> dict:
        return {self._device: tuple(slice(None) for _ in global_shape)}

    def __eq__(self, other):
        return isinstance(other, SingleDeviceSharding) and other._device == self._device

    def __hash__(self):
        return hash(("SingleDeviceSharding", self._device))

    def __repr__(self):
        return f"SingleDeviceSharding(device={self._device!r})"


class Array(ArrayOps):
    """A concrete array on a device. Results of jitted functions and eager `stagec.numpy` calls.

    The result of an asynchronously dispatched call is pending (`_bv` None, `_job` = (Job, index)) until it is
    needed: `block_until_ready`, conversion to NumPy, printing and the like wait for it and raise the error
    the call ended with, naming its function. A small result computed on the host (`Array.on_host`: an eager
    operation's NumPy rule) has its host copy only (`_bv` and `_job` None) until a device call reads it: a chain
    of such operations uploads nothing."""

    __slots__ = ("aval", "_bv", "_backend", "_npy", "_deleted", "_job")

    def __init__(self, bv, aval: ShapedArray, backend):
        self.aval, self._bv, self._backend = aval, bv, backend
        self._npy = None
        self._deleted = False

    @classmethod
    def pending(cls, job, i: int, aval: ShapedArray, backend) -> Array:
        """The i-th result of an enqueued call (`backend.Job`)."""
        a = cls(None, aval, backend)
        a._job = (job, i)
        return a

    @classmethod
    def on_host(cls, value: np.ndarray, aval: ShapedArray, backend) -> Array:
        """An array of the read-only host array `value`, uploaded when a device call first reads it."""
        a = _new(cls)  # (no `__init__` call: this is on every small eager operation's path)
        a.aval, a._bv, a._backend, a._npy, a._deleted, a._job = aval, None, backend, value, False, None
        return a

    def _wait(self):
        """The buffer view, once the call computing it has run (raising its error)."""
        if self._deleted:
            raise RuntimeError("Array has been deleted (it was donated to a jitted function or deleted).")
        bv = self._bv
        if bv is None:
            job = self._job
            if job is None:  # a host value (`on_host`), or a result another thread has just waited for
                bv = self._bv
                if bv is None:
                    bv = self._bv = self._backend.put(self._npy)
            else:
                job, i = job
                bv = self._bv = job.result(i)
                self._job = None
        if self._backend.failed:  # an earlier call failed and nothing has raised its error yet
            self._backend.raise_failed()
        return bv

    def _value(self) -> np.ndarray:
        """The host value (made once, read-only: on the CPU a view of the buffer, elsewhere a copy)."""
        if self._npy is None:
            v = self._backend.get(self._wait(), self.aval, view=True)
            v.flags.writeable = False
            self._npy = v
        return self._npy

    def __array__(self, dtype=None, copy=None):
        v = self._value()
        if dtype is not None:
            return v.astype(dtype)
        return v.copy() if copy else v

    def __repr__(self):
        if self._deleted:
            return "Array(<deleted>)"
        v = self._value()
        weak = ", weak_type=True" if self.aval.weak_type else ""
        body = np.array2string(v, separator=", ", prefix="Array(")
        return f"Array({body}, dtype={self.aval.dtype.name}{weak})"

    def __str__(self):
        return str(self._value())

    def __format__(self, spec):
        return format(self._value().item() if self.aval.shape == () else self._value(), spec)

    def __bool__(self): return bool(self._value())
    def __int__(self): return int(self._value())
    def __float__(self): return float(self._value())
    def __complex__(self): return complex(self._value())

    def __index__(self):
        if _dt.kind(self.aval.dtype) not in "iu" or self.aval.shape:
            raise TypeError(f"only integer scalar arrays can be converted to a scalar index, not {self.aval}")
        return int(self._value())

    def __iter__(self):
        """Rows as Arrays, cut on the host (slicing on the device would compile one module per row)."""
        if not self.aval.shape:
            raise TypeError("iteration over a 0-d array")
        row = self.aval.update(shape=self.aval.shape[1:])
        return (Array(bv, row, self._backend) for bv in to_buffers(self._value(), [row] * len(self), self._backend))

    def item(self, *args): return self._value().item(*args)
    def tolist(self): return self._value().tolist()

    def block_until_ready(self) -> Array:
        """Wait until the call computing this array has run; raise the error it (or an earlier call) ended with."""
        if self._bv is None and self._npy is not None and not self._deleted:  # a host value: nothing to wait for
            if self._backend.failed:
                self._backend.raise_failed()
            return self
        self._wait()
        return self

    def is_ready(self) -> bool:
        """Whether the value is computed (block_until_ready would not wait)."""
        return self._bv is not None or self._deleted or self._job is None or self._job[0].done

    def devices(self) -> set:
        return {self._backend.devices[0]}

    @property
    def device(self):
        return self._backend.devices[0]

    @property
    def sharding(self) -> SingleDeviceSharding:
        """Where the array lives: always one device (stagec does not shard across devices)."""
        return SingleDeviceSharding(self._backend.devices[0])

    def is_deleted(self) -> bool:
        return self._deleted

    def delete(self) -> None:
        self._deleted = True
        self._bv = self._npy = self._job = None

    def copy(self) -> Array:
        return device_put(self._value())

    def _share(self) -> Array:
        """A new Array on this one's buffer (pending or not), no transfer: buffers are never written in place
        (`x[idx] = v` rebinds), so sharing one is a copy. For `snp.array(x, copy=True)`."""
        if self._deleted:
            raise RuntimeError("Array has been deleted (it was donated to a jitted function or deleted).")
        job = getattr(self, "_job", None)  # (before _bv: a wait on another thread sets _bv, then drops _job)
        bv = self._bv
        new = Array(bv, self.aval, self._backend)
        new._job = job if bv is None else None
        new._npy = self._npy  # (read-only; a host value's only copy)
        return new

    def _rebind(self, other: Array) -> None:
        """Take `other`'s buffer (same shape and dtype): eager `x[idx] = v` (`stagec.numpy`'s __setitem__)."""
        if self._deleted:
            raise RuntimeError("Array has been deleted (it was donated to a jitted function or deleted).")
        if (other.aval.shape, other.aval.dtype) != (self.aval.shape, self.aval.dtype) or other._backend is not \
                self._backend:
            raise ValueError(f"cannot rebind an array of {self.aval.str_short()} to {other.aval.str_short()}")
        bv, npy = other._bv, other._npy
        self._job = getattr(other, "_job", None) if bv is None else None  # other may be pending, or a host value
        self._bv, self._npy = bv, npy

    def __reduce__(self):
        return (device_put, (self._value(),))

    def __deepcopy__(self, memo):
        return self.copy()


# A Python or NumPy scalar's value as a hashable key: a float's bits, which tell -0.0 from 0.0 (equal, and hashed
# alike, as floats) and one NaN from another (`float.hex` gave 'nan' for -nan too: its buffer was the first NaN's)
_SCALAR_KEYS = {bool: lambda x: x, int: lambda x: x, float: struct.Struct("<d").pack,
                complex: lambda x: struct.pack("<dd", x.real, x.imag)}
_scalars: dict = {}  # (backend, type, value key, aval) -> its device buffer (immutable: shared by every call)
MAX_SCALARS = 512
os.register_at_fork(after_in_child=_scalars.clear)  # (a forked child's devices are not its parent's)


def _scalar_buffer(x, aval: ShapedArray, backend: Backend):
    """The device buffer of the scalar `x` as `aval`, uploaded once per value: an eager sampler's bounds and branch
    index, a training step's learning rate (~1.5 us an upload; the buffers are never written)."""
    t = type(x)
    key = (backend, t, x.tobytes() if t not in _SCALAR_KEYS else _SCALAR_KEYS[t](x), aval)
    bv = _scalars.get(key)
    if bv is None:
        bv = backend.put(to_numpy_constant(x, aval))  # (a Python int out of the dtype's range raises here)
        if len(_scalars) >= MAX_SCALARS:
            _scalars.clear()
        _scalars[key] = bv
    return bv


def to_buffers(values: Sequence, avals: Sequence[ShapedArray], backend: Backend) -> list:
    """Device buffers of `backend` holding `values` (Arrays, NumPy values, Python scalars) as `avals`; an
    Array already on `backend` is used as it is. A pending one gives (Job, index): then the list is raised in a
    `PendingArguments`, for `Executable.submit`. The one way a Python value reaches a device."""
    out = []
    for x in values:  # the common case first: Arrays computed on `backend` (~0.2 us of a ~4 us jit call)
        if type(x) is not Array or x._backend is not backend or x._bv is None:
            break
        out.append(x._bv)
    else:
        return out
    out = []
    pending = False
    for x, aval in zip(values, avals):
        if type(x) is Array and x._backend is backend:
            bv = x._bv
            if bv is None:
                if x._deleted:
                    raise RuntimeError("Array has been deleted (it was donated to a jitted function or deleted) "
                                       "and cannot be used.")
                if x._job is None:  # a host value (`Array.on_host`): uploaded now, once
                    out.append(x._wait())
                    continue
                job, i = x._job
                if job.done and job.error is None:
                    bv = x._bv = job.outs[i]
                    x._job = None
                else:
                    bv, pending = x._job, True
            out.append(bv)
        elif type(x) is np.ndarray and x.dtype is aval.dtype:  # (a batch as a NumPy array: ~0.4 us less a leaf)
            out.append(backend.put(x))
        elif type(x) in _SCALAR_KEYS or isinstance(x, np.generic):
            out.append(_scalar_buffer(x, aval, backend))
        else:
            out.append(backend.put(to_numpy_constant(x, aval)))
    if pending:
        raise PendingArguments(out)
    return out


def pending(x) -> bool:
    """Whether `x` is an Array still being computed by an asynchronous call."""
    return type(x) is Array and x._bv is None and getattr(x, "_job", None) is not None


def device_put(x: Any, device=None) -> Any:
    """Copy arrays (or a pytree of them) to `device` (default: the default backend's device)."""
    backend = get_backend(device.platform if device is not None else None)

    def put(v):
        if type(v) is Array:
            if v._deleted:
                raise RuntimeError("device_put: Array has been deleted (it was donated to a jitted function or "
                                   "deleted)")
            if v._backend is backend:
                return v
        aval = aval_of(v)
        return Array(to_buffers([v], [aval], backend)[0], aval, backend)

    return tree_util.tree_map(put, x)


def block_until_ready(x: Any) -> Any:
    """Wait for every array in the pytree `x`; returns `x`."""
    for leaf in tree_util.tree_leaves(x):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
    return x


@at_exit_release
def _let_go(backend: Backend) -> None:
    """At exit, the arrays on `backend` and its kept scalars give up their buffers (`backend.NVIDIA_VULKAN_EXIT`)."""
    for o in gc.get_objects():
        if isinstance(o, Array) and o._backend is backend:
            o.delete()
    for k in [k for k in _scalars if k[0] is backend]:
        del _scalars[k]


def effects_barrier() -> None:
    """Wait until every call dispatched so far, with its host callbacks (`debug.print`, ...), has run; raise the
    first error of asynchronously dispatched work that no synchronizing point has raised yet."""
    for b in backends():
        b.barrier()
