#!/usr/bin/env bash
# Training against torch: for tiny GPT-2- and Llama-style example models,
# 3 AdamW steps (and 3 SGD-momentum steps for GPT-2) of cross-entropy with
# galv-eval --train --steps 3 (loss, autodiff, optimizer as IR, run by the
# reference evaluator) and with Debian's torch (/usr/bin/python3, a small
# ONNX interpreter in torch over the same graph and initial weights, see
# tests/train/) give losses within 1e-4 relative and final weights within
# 1e-4. Also: an op with no gradient rule is an error naming the node, and
# galvc --train writes a step function that re-parses and MLIR reads.
set -euo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
TORCH_PY=/usr/bin/python3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/require.sh"
require_torch "$TORCH_PY"
python3 -c "
import numpy as np
r = np.random.RandomState(7)
np.save('$T/ids.npy', r.randint(0, 64, (2, 8)).astype(np.int64))
l = r.randint(0, 64, (2, 8)).astype(np.int64)
l[0, :2] = -100  # ignored positions
np.save('$T/labels.npy', l)"
fail=0
run() { # name family optimizer-args...
  local name=$1 fam=$2
  shift 2
  python3 "$SRC/examples/make_model.py" "$fam" -o "$T/$name.onnx" --layers 2 --hidden 32 --heads 4 --vocab 64 \
    --no-verify >/dev/null
  python3 "$SRC/tests/train/onnx_dump.py" "$T/$name.onnx" "$T/$name.dump"
  local opt=$1 lr=$2 wd=$3 b1=$4 b2=$5 eps=$6 mom=$7
  "$BUILD/galv-eval" "$T/$name.onnx" --input-shape input_ids=2x8 --input input_ids="$T/ids.npy" \
    --input labels="$T/labels.npy" --train --optimizer "$opt" --lr "$lr" --weight-decay "$wd" --beta1 "$b1" \
    --beta2 "$b2" --eps "$eps" --momentum "$mom" --steps 3 -o "$T/$name.galv" >"$T/$name.galv.log"
  "$TORCH_PY" "$SRC/tests/train/torch_train.py" "$T/$name.dump" "$T/ids.npy" "$T/labels.npy" 3 "$T/$name.torch" \
    "$opt" "$lr" "$wd" "$b1" "$b2" "$eps" "$mom" >"$T/$name.torch.log"
  echo "== $name ($fam, $opt)"
  if ! "$TORCH_PY" "$SRC/tests/train/compare.py" "$T/$name.galv.log" "$T/$name.torch.log" "$T/$name.galv" \
    "$T/$name.torch" 1e-4 1e-4; then
    fail=$((fail + 1))
  fi
}
run gpt2 gpt2 adamw 1e-3 0.01 0.9 0.999 1e-8 0
run llama llama adamw 1e-3 0.01 0.9 0.999 1e-8 0
run gpt2_sgd gpt2 sgd 0.1 0.01 0.9 0.999 1e-8 0.9

# galvc --train: the step function prints, re-parses byte-identically, MLIR reads it
"$BUILD/galvc" "$T/gpt2.onnx" --input-shape input_ids=2x8 --train -q -o "$T/step.mlir"
grep -q 'galv.updates' "$T/step.mlir" || { echo "galvc --train: no galv.updates in the output"; fail=$((fail + 1)); }
"$BUILD/galv-opt" "$T/step.mlir" >"$T/step2.mlir"
cmp -s "$T/step.mlir" "$T/step2.mlir" || { echo "galvc --train: print/parse/print differs"; fail=$((fail + 1)); }
"$BUILD/galv-mlir-check" "$T/step.mlir" || fail=$((fail + 1))

# an op with no gradient rule (If on a run-time condition, kept by running
# only shape-infer and dce) is an error naming the node
python3 "$SRC/tests/train/no_grad_model.py" "$T/nog.onnx"
python3 -c "
import numpy as np
np.save('$T/x.npy', np.ones((2, 3), np.float32)); np.save('$T/l.npy', np.zeros(2, np.int64))"
if "$BUILD/galv-eval" "$T/nog.onnx" --passes=shape-infer,dce --train --input x="$T/x.npy" --input labels="$T/l.npy" \
  2>"$T/nog.err"; then
  echo "no-gradient model: expected an error"
  fail=$((fail + 1))
elif ! grep -q "node '/cond/If' (If): no gradient rule for galv.if" "$T/nog.err" || [ "$(wc -l <"$T/nog.err")" -ne 1 ]; then
  echo "no-gradient model: unexpected error text:"
  cat "$T/nog.err"
  fail=$((fail + 1))
fi
echo "train_torch: $fail failed"
[ "$fail" -eq 0 ]
