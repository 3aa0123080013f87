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
# --no-weights never opens the external-data file: a weight-free model whose
# data file is absent plans (shapes only); without --no-weights the missing
# file is one error line naming it
n=$((n + 1))
if "$PY" "$SRC/examples/make_model.py" gpt2 -o "$TMP/nw/g.onnx" --layers 2 --hidden 64 --heads 4 --vocab 128 --no-weights --no-verify >/dev/null 2>"$TMP/err"; then
  rm -f "$TMP"/nw/*.data "$TMP"/nw/*.bin
  if [ "$(ls "$TMP/nw")" != g.onnx ]; then echo "FAIL: --no-weights without its data file: files left: $(ls "$TMP/nw")"; fail=1
  elif ! "$GALVC" "$TMP/nw/g.onnx" --no-weights --emit=ir -o "$TMP/nw.mlir" -q 2>"$TMP/err"; then
    echo "FAIL: --no-weights without its data file: $(cat "$TMP/err")"; fail=1
  elif "$GALVC" "$TMP/nw/g.onnx" --emit=ir -o "$TMP/nw.mlir" -q 2>"$TMP/err" || [ "$(grep -c 'error:' "$TMP/err")" != 1 ] ||
       ! grep -q "external data file '.*' cannot be read" "$TMP/err"; then
    echo "FAIL: a missing data file without --no-weights: $(cat "$TMP/err")"; fail=1
  else echo "ok: --no-weights plans without the data file; without it: $(cat "$TMP/err")"; fi
else echo "FAIL: make_model.py --no-weights: $(tail -1 "$TMP/err")"; fail=1; fi

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
