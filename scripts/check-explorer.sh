#!/usr/bin/env bash
# The explorer page in a real browser (not part of the default suite): renders the pages for the SELU
# example and an MLP, opens each view in headless Chromium (installed from Debian's packages if
# missing), saves screenshots and fails on any console message or on a page that did not draw.
#   bash scripts/check-explorer.sh [OUTDIR]
# docs/explorer.png is refreshed from the SELU page, showing the diff of the first pass of the default pipeline
# that changed the module, and the README's caption of it is rewritten to name that pass.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${PY:-}" ]; then source scripts/env.sh; fi
OUT="${1:-$(mktemp -d -t stagec-explorer-XXXX)}"
mkdir -p "$OUT"

if ! command -v chromium >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "Installing chromium from Debian's packages ..." >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "error: chromium is not installed (apt-get install chromium, as root)" >&2
    exit 1
  fi
fi

cat >"$OUT/pages.py" <<'EOF'
"""Write selu.html and mlp.html: every stage, the pass statistics, IREE's dispatch sources, the times."""
import glob, os, sys, time

import numpy as np

import stagec
import stagec.numpy as snp
from stagec.explorer import write
from stagec.lowering import lower_graph

sys.path.insert(0, os.path.join(os.getcwd(), "examples"))
from selu_demo import selu  # noqa: E402


def mlp(x, w1, w2):
    return snp.tanh(snp.maximum(x @ w1, 0) @ w2)


def page(fun, args, path):
    t0 = time.perf_counter()
    lowered = stagec.jit(fun).lower(*args)
    t1 = time.perf_counter()
    stages = lowered.stages()
    t2 = time.perf_counter()
    names = list(stages)
    changed = [n for n, before in zip(names[1:], names) if n not in ("stablehlo", "final") and stages[n] != stages[before]]
    with open(path[:-5] + ".changed", "w") as f:  # the passes that changed the module, in order
        f.write("\n".join(changed) + "\n")
    # The traced module again, printed with the user's file:line on each op.
    stages["traced"] = lower_graph(lowered.graph, lowered.name).operation.get_asm(enable_debug_info=True)
    compiled = lowered.compile()
    t3 = time.perf_counter()
    compiled(*args)
    t4 = time.perf_counter()
    dump = sorted(glob.glob(os.path.join(os.environ["STAGEC_DUMP_DIR"], lowered.name + "-*")))[-1]
    dispatches = [(os.path.basename(f)[:-5], open(f).read()) for f in sorted(glob.glob(dump + "/dispatches/*.mlir"))]
    passes = sum(s.seconds for s in lowered.pass_stats)
    sig = ", ".join(f"{a.dtype}{list(a.shape)}" for a in args)
    write(path, f"{lowered.name}({sig})", list(stages.items()), pass_stats=lowered.pass_stats,
          dispatches=dispatches, info={"backend": "cpu", "target": compiled.artifact.target, "disk cache": "off"},
          timings={"trace": t1 - t0, "lower": t2 - t1 - passes, "passes": passes, "compile": t3 - t2,
                   "first call": t4 - t3})
    print(path)


out = sys.argv[1]
x = np.linspace(-3, 3, 1024, dtype=np.float32)
page(selu, (x,), os.path.join(out, "selu.html"))
rng = np.random.default_rng(0)
page(mlp, tuple(rng.standard_normal(s).astype(np.float32) for s in ((8, 64), (64, 32), (32, 4))),
     os.path.join(out, "mlp.html"))
EOF
STAGEC_DUMP_DIR="$OUT/dump" STAGEC_CACHE=0 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" "$PY" "$OUT/pages.py" "$OUT"

first_dispatch() {  # the first dispatch's stage name in a page, for its #view
  grep -o '<h2>IREE dispatches</h2><ol class="stages"><li data-s="[0-9]*"><div class="nm">[^<]*' "$1" | sed 's/.*class="nm">//'
}
fail=0
check() {  # page.html, #view, screenshot name
  local url="file://$OUT/$1${2:+#$2}" shot="$OUT/$3.png" log="$OUT/$3.log" flags=(
    --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
    --disable-component-update --disable-sync --window-size=1400,900 --enable-logging=stderr --v=0)
  timeout 120 chromium "${flags[@]}" --user-data-dir="$(mktemp -d)" --screenshot="$shot" "$url" 2>"$log" >/dev/null
  timeout 120 chromium "${flags[@]}" --user-data-dir="$(mktemp -d)" --dump-dom "$url" 2>>"$log" >"$OUT/$3.dom.html"
  if grep -a "CONSOLE" "$log"; then
    echo "FAIL $1${2:+#$2}: console messages (above; log $log)"; fail=1
  elif ! grep -q 'class="r k' "$OUT/$3.dom.html" || ! grep -q 'id="gview"><svg class="graph"' "$OUT/$3.dom.html"; then
    echo "FAIL $1${2:+#$2}: the listing or the graph was not drawn (DOM in $OUT/$3.dom.html)"; fail=1
  else
    echo "ok   $1${2:+#$2} -> $shot ($(du -k "$shot" | cut -f1) KB)"
  fi
}
check selu.html "" selu
pass_shown=$(head -n 1 "$OUT/selu.changed")
[ -n "$pass_shown" ] || { echo "FAIL no pass changed the SELU module"; exit 1; }
check selu.html "$pass_shown:diff" selu-pass-diff
check mlp.html "" mlp
check mlp.html "$(first_dispatch "$OUT/mlp.html")" mlp-dispatch
[ "$fail" = 0 ] || exit 1
cp "$OUT/selu-pass-diff.png" docs/explorer.png
size=$(du -k docs/explorer.png | cut -f1)
[ "$size" -lt 300 ] || { echo "FAIL docs/explorer.png is ${size} KB (over 300 KB)"; exit 1; }
# The README's caption says what the picture shows (tests/test_explorer.py checks that it still does).
caption="The explorer page for the SELU example: the diff the $pass_shown pass made (the first pass of the default pipeline that changed it)"
"$PY" - "$caption" <<'PYEOF'
import re, sys
text = open("README.md").read()
new = re.sub(r"!\[[^\]]*\]\(docs/explorer\.png\)", lambda m: f"![{sys.argv[1]}](docs/explorer.png)", text, count=1)
open("README.md", "w").write(new)
PYEOF
echo "docs/explorer.png updated (${size} KB), README's caption names $pass_shown; pages and screenshots in $OUT"
