#!/usr/bin/env bash
# fold_models.sh BUILD_DIR — fold-constants, canonicalize and dce on every
# example model: the helper-built gpt2/bert/llama/vit/t5 (opset 17 and 13)
# and each committed torch export. galvc must succeed, and the IR after the
# pipeline must hold no galv.shape / constant_of_shape / range / if, no op
# all of whose operands are constants (a fold that was missed), and no
# decomposed LayerNorm / RMSNorm / GELU (erf, tanh, pow, sqrt; reduce_mean
# except in t5, which keeps the reductions of its hand-written softmax).
# Prints a table of op counts after import and after the pipeline.
set -u
BUILD=$(cd "${1:?usage: fold_models.sh BUILD_DIR}" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
PY=${PYTHON:-python3}
GALVC=$BUILD/galvc
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail=0

# The checker: one IR file, the model family; prints what is wrong, one line each.
cat >"$TMP/check.py" <<'EOF'
import re, sys
path, family = sys.argv[1], sys.argv[2]
text = open(path).read()
bad = []
for op in ("shape", "constant_of_shape", "range", "if"):
    if '"galv.%s"' % op in text:
        bad.append("galv.%s left" % op)
decomposed = ["erf", "tanh", "pow", "sqrt", "reciprocal", "sigmoid"]
if family != "t5":
    decomposed.append("reduce_mean")
for op in decomposed:
    n = text.count('"galv.%s"(' % op)
    if n:
        bad.append("%d galv.%s left (decomposed norm/activation not recognised)" % (n, op))
# map result names to the defining op; flag ops whose operands are all constants
defs = {}
line_re = re.compile(r'^\s*(?:(%[\w.$-]+)(?::(\d+))?\s*=\s*)?"galv\.(\w+)"\((.*?)\)')
for ln in text.splitlines():
    m = line_re.match(ln)
    if not m:
        continue
    res, nres, op, opnds = m.groups()
    if res:
        defs[res] = op
    names = [o.strip().split("#")[0] for o in opnds.split(",") if o.strip()]
    if op in ("return", "yield", "constant") or not names:
        continue
    if all(defs.get(o) == "constant" for o in names):
        bad.append("all-constant operands: " + ln.strip()[:160])
for b in bad[:20]:
    print(b)
sys.exit(1 if bad else 0)
EOF

count() { # the op count from a "galvc: stats after X: N ops:" line
  sed -n "s/^galvc: stats after $1: \([0-9]*\) ops.*/\1/p" "$2" | head -1
}

models=()
for fam in gpt2 bert llama vit t5; do
  for opset in 17 13; do
    if "$PY" "$SRC/examples/make_model.py" "$fam" -o "$TMP/${fam}_helper_op$opset.onnx" --opset "$opset" \
      --no-verify >/dev/null 2>"$TMP/make.err"; then
      models+=("$TMP/${fam}_helper_op$opset.onnx")
    else
      echo "FAIL: make_model.py $fam --opset $opset: $(tail -1 "$TMP/make.err")"
      fail=1
    fi
  done
done
for f in "$SRC"/examples/models/torch/*.onnx; do models+=("$f"); done

printf '%-22s %8s %8s\n' model import pipeline
for f in "${models[@]}"; do
  base=$(basename "$f" .onnx)
  fam=${base%%_*}
  out="$TMP/$base.mlir"
  "$GALVC" "$f" --batch 2 --seq 16 --emit=ir -o "$out" -q --stats 2>"$TMP/$base.err"
  rc=$?
  if [ $rc -ne 0 ]; then
    echo "FAIL: $base: galvc exit $rc: $(grep -v 'stats after' "$TMP/$base.err" | head -3)"
    fail=1
    continue
  fi
  before=$(count import "$TMP/$base.err")
  after=$(count dce "$TMP/$base.err")
  printf '%-22s %8s %8s\n' "$base" "$before" "$after"
  if ! "$PY" "$TMP/check.py" "$out" "$fam" >"$TMP/$base.chk"; then
    sed "s/^/FAIL: $base: /" "$TMP/$base.chk"
    fail=1
  fi
done
[ $fail -eq 0 ] && echo "fold_models: all ${#models[@]} models ok"
exit $fail
