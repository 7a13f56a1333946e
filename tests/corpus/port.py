"""Run a corpus program (JAX code) on stagec by rewriting its imports and nothing else:
`import jax` -> `import stagec as jax`; `import jax.numpy as jnp` -> `import stagec.numpy as jnp`;
`from jax.scipy.special import erf` -> `from stagec.scipy.special import erf`."""
from __future__ import annotations

import pathlib
import re
import sys
import types

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
PROGRAMS = sorted(p.stem for p in HERE.glob("*.py") if p.stem not in ("__init__", "port", "make_results"))
_IMPORT = re.compile(r"^(\s*)(import|from)\s+jax\b(.*)$")


def port(source: str, package: str = "stagec") -> str:
    """`source` with its jax imports pointing at `package` (only import lines change)."""
    out = []
    for line in source.splitlines():
        m = _IMPORT.match(line)
        if m:
            indent, kw, rest = m.groups()
            line = f"{indent}import {package} as jax" if kw == "import" and rest == "" else \
                f"{indent}{kw} {package}{rest}"
        out.append(line)
    return "\n".join(out) + "\n"


def run(name: str, package: str = "stagec") -> dict[str, np.ndarray]:
    """main() of program `name` on `package` ("jax" runs it unchanged), its results as NumPy arrays."""
    path = HERE / f"{name}.py"
    src = path.read_text()
    if package != "jax":
        src = port(src, package)
    mod = types.ModuleType(f"corpus_{name}")
    mod.__file__ = str(path)
    sys.modules[mod.__name__] = mod  # (as an imported module is: dataclasses look their module up there)
    try:
        exec(compile(src, str(path), "exec"), mod.__dict__)
        return {k: np.asarray(v) for k, v in mod.main().items()}
    finally:
        sys.modules.pop(mod.__name__, None)
