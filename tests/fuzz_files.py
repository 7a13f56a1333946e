"""Fuzz driver for tests/test_safety.py (run as a subprocess, so a crash or hang is seen, not suffered):
mutates a saved artifact or a cache entry (truncation, bit flips, bit flips with the checksum recomputed
without the key, lying metadata signed with the key) and loads and calls each. Prints one line per case,
`CASE <n> <kind> <outcome>`, then `DONE`. Outcomes: `error:<Type>` (a clear error), `recompute` (a cache
entry rejected), `same` (the true numbers), `wrong` (other numbers: a failure)."""
from __future__ import annotations

import hashlib
import json
import os
import random
import sys
import warnings

import numpy as np

import stagec
import stagec.numpy as snp
from stagec import aot, cache

X = np.arange(4, dtype=np.float32)


def fun(x):
    return snp.sin(x) * 3 + x[::-1]


def resign(data: bytes, meta_change=None, with_key=True) -> bytes:
    """`data` (an artifact) with metadata changed and checksum recomputed; signed only `with_key`."""
    size = len(data)
    vmfb_len, meta_len, _, mac, magic = aot._TRAILER.unpack(data[size - aot._TRAILER.size:])
    body_at = vmfb_len + (-vmfb_len % 64)
    vmfb, meta = data[:vmfb_len], json.loads(data[body_at:body_at + meta_len])
    if meta_change:
        meta.update(meta_change)
    packed = aot.pack(vmfb, meta)
    if with_key:
        return packed
    h = hashlib.sha256(vmfb)
    h.update(json.dumps(meta, sort_keys=True).encode())
    return packed[:-aot._TRAILER.size] + aot._TRAILER.pack(vmfb_len, len(packed) - aot._TRAILER.size - body_at,
                                                           h.digest(), mac, magic)


def lie(rng: random.Random, meta: dict) -> dict:
    pick = rng.randrange(5)
    outs, ins = meta["out_avals"], meta["in_avals"]
    if pick == 0:
        return {"out_avals": [{"shape": [rng.choice([1, 5, 100000])], "dtype": "float32"}]}
    if pick == 1:
        return {"out_avals": [{"shape": outs[0]["shape"], "dtype": rng.choice(["float64", "int8", "complex64"])}]}
    if pick == 2:
        return {"out_avals": outs * 2, "out_tree": {"t": "tuple", "c": [{"t": "*"}, {"t": "*"}]}}
    if pick == 3:
        return {"in_avals": [{"shape": [rng.choice([1, 3, 64])], "dtype": "float32"}], "out_avals": outs}
    return {"in_avals": [{"shape": ins[0]["shape"], "dtype": "int32"}]}


def mutations(rng: random.Random, data: bytes, n: int):
    size = len(data)
    vmfb_len = aot._TRAILER.unpack(data[size - aot._TRAILER.size:])[0]
    body_at = vmfb_len + (-vmfb_len % 64)
    meta = json.loads(data[body_at:size - aot._TRAILER.size])
    for i in range(n):
        kind = ("truncate", "flip", "flip+checksum", "lie")[i % 4]
        if kind == "truncate":
            yield kind, data[:rng.randrange(size)]
        elif kind == "flip":
            b = bytearray(data)
            for _ in range(rng.randint(1, 4)):
                b[rng.randrange(size)] ^= 1 << rng.randrange(8)
            yield kind, bytes(b)
        elif kind == "flip+checksum":
            b = bytearray(data)
            for _ in range(rng.randint(1, 4)):
                b[rng.randrange(vmfb_len)] ^= 1 << rng.randrange(8)
            yield kind, resign(bytes(b), with_key=False)
        else:
            yield kind, resign(data, lie(rng, meta))


def main(mode: str, seed: int, n: int, d: str) -> None:
    warnings.simplefilter("ignore")
    rng = random.Random(seed)
    want = np.sin(X) * 3 + X[::-1]
    if mode == "artifact":
        path = os.path.join(d, "f.stagec")
        stagec.jit(fun).lower(X).compile().save(path)
        data = open(path, "rb").read()
        target = os.path.join(d, "case.stagec")
    else:
        os.environ["STAGEC_CACHE_DIR"] = d
        stagec.jit(fun)(X)
        [(target, _)] = cache.entries()
        data = open(target, "rb").read()
        key = os.path.basename(target)[:-len(cache.SUFFIX)]
    for i, (kind, mutated) in enumerate(mutations(rng, data, n)):
        with open(target, "wb") as f:
            f.write(mutated)
        print(f"CASE {i} {kind} ...", end=" ", flush=True)
        try:
            if mode == "artifact":
                out = np.asarray(stagec.load(target)(X))
            else:
                found = cache.lookup(key)
                if found is None:
                    print("recompute", flush=True)
                    continue
                vmfb, meta = found  # as stages.compile_cached uses a hit: the trace's own avals
                meta = dict(meta, in_avals=[{"shape": [4], "dtype": "float32"}],
                            out_avals=[{"shape": [4], "dtype": "float32"}])
                leaf = stagec.tree_util.tree_structure(0)
                out = np.asarray(aot.Artifact(vmfb, meta, leaf, leaf).runner()([X]))
        except Exception as e:  # noqa: BLE001 (every error is an outcome here; crashes and hangs are not)
            print(f"error:{type(e).__name__}", flush=True)
            continue
        print("same" if out.shape == want.shape and np.allclose(out, want) else "wrong", flush=True)
    print("DONE", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
