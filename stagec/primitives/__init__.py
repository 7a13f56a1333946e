"""Every primitive of stagec, each defined once with all its rules, by family:

- `elementwise`: arithmetic, comparisons, select, clamp, conversions, complex parts;
- `structural`: broadcast, reshape, transpose, slices, padding, concatenation, iota;
- `reductions`: reduce over axes, argmin/argmax, running reductions, sort;
- `indexing`: gather and scatter; `dot`: dot_general; `control_flow`: cond, while and scan;
- `callback`: calls from compiled code out to Python; `fft`: discrete Fourier transforms;
- `conv`: convolution; `windowed`: sums, maxima and minima over sliding windows;
- `bits`: population count, leading zeros and bitcasts.

A primitive is a `core.Primitive` named `<name>_p`, followed by its registrations (`def_lowering`, and
`def_jvp`/`def_transpose`/`def_batch` where the transformations define them) and its strict wrapper.
"""
from __future__ import annotations

from ..core import Primitive
from . import bits, callback, control_flow, conv, dot, elementwise, fft, indexing, reductions, structural, windowed
from .bits import bitcast_convert_type_p, clz_p, population_count_p
from .callback import callback_p
from .control_flow import cond_p, scan_p, while_p
from .conv import conv_general_dilated_p
from .dot import dot_general_p
from .fft import fft_p
from .elementwise import *  # noqa: F401,F403  (the *_p primitives)
from .indexing import gather_p, scatter_p
from .reductions import (argminmax_p, cumulative_p, reduce_and_p, reduce_max_p, reduce_min_p, reduce_or_p,
                         reduce_prod_p, reduce_sum_p, reduce_xor_p, sort_p)
from .structural import (broadcast_in_dim_p, concatenate_p, dynamic_slice_p, dynamic_update_slice_p, iota_p, pad_p,
                         reshape_p, rev_p, slice_p, transpose_p)
from .windowed import reduce_window_p

MODULES = (elementwise, structural, reductions, indexing, dot, control_flow, callback, fft, conv, windowed, bits)


def all_primitives() -> list[Primitive]:
    """Every primitive, in definition order (for tests and tools that check each one's rules)."""
    seen, out = set(), []
    for m in MODULES:
        for v in vars(m).values():
            if isinstance(v, Primitive) and id(v) not in seen:
                seen.add(id(v))
                out.append(v)
    return out
