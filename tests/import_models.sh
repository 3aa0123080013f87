#!/usr/bin/env bash
# import_models.sh BUILD_DIR — every example model through the full galvc
# pipeline: the five onnx-helper-built families (examples/make_model.py) at
# opsets 13, 17, 18 and 21, and every committed torch export
# (examples/models/torch/*.onnx). Each must exit 0 and write IR; when the
# MLIR checker was built the IR must also parse with MLIR's own parser.
# That each op type of examples/models/torch/ops.txt is in the frontend's
# table is checked by tests/unit/test_frontend.c.
set -u
BUILD=${1:?usage: import_models.sh BUILD_DIR}
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
PY=${PYTHON:-python3}
GALVC=$BUILD/galvc
CHECK=$BUILD/galv-mlir-check
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail=0 n=0

run() { # MODEL [galvc options...]
  local model=$1; shift
  n=$((n + 1))
  if ! "$GALVC" "$model" --emit=ir -o "$TMP/out.mlir" -q "$@" 2>"$TMP/err"; then
    echo "FAIL: $(basename "$model") $*: $(cat "$TMP/err")"; fail=1; return
  fi
  if [ ! -s "$TMP/out.mlir" ]; then
    echo "FAIL: $(basename "$model") $*: no IR written"; fail=1; return
  fi
  if [ -x "$CHECK" ] && ! "$CHECK" "$TMP/out.mlir" >"$TMP/chk" 2>&1; then
    echo "FAIL: $(basename "$model") $*: IR does not parse with MLIR: $(head -3 "$TMP/chk")"; fail=1; return
  fi
  echo "ok: $(basename "$model") $*"
}

for fam in gpt2 bert llama vit t5; do
  for opset in 13 17 18 21; do
    m=$TMP/${fam}_op$opset.onnx
    if ! "$PY" "$SRC/examples/make_model.py" "$fam" -o "$m" --opset "$opset" --no-verify >/dev/null 2>"$TMP/err"; then
      echo "FAIL: make_model.py $fam --opset $opset: $(tail -1 "$TMP/err")"; fail=1; continue
    fi
    run "$m"                      # symbolic batch / seq bound to the defaults (1, 128)
    run "$m" --batch 2 --seq 16
  done
done
# explicit shapes and shape-only import
run "$TMP/gpt2_op17.onnx" --input-shape input_ids=4x32
run "$TMP/vit_op17.onnx" --input-shape pixel_values=2x3x32x32 --no-weights
run "$TMP/t5_op18.onnx" --no-weights

# torch exports: position tables have 64 entries, so sequences stay shorter
found=0
for m in "$SRC"/examples/models/torch/*.onnx; do
  [ -e "$m" ] || continue
  found=1
  run "$m" --batch 2 --seq 16
done
[ $found -eq 1 ] || { echo "FAIL: no committed torch exports found"; fail=1; }

[ $fail -eq 0 ] && echo "PASS: $n imports" || echo "FAILED"
exit $fail
