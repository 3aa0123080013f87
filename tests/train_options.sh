#!/usr/bin/env bash
# The training options beyond the defaults, on the CPU target against torch
# 1.13 (tests/train/torch_train.py, as tests/train_cpu.sh), tiny GPT-2 (2
# layers, hidden 32, vocab 64), 3 steps over 3 batches of 2 x 8:
#   --ignore-index 7: labels holding 7s (and no -100): the losses within
#     1e-4 relative and the weights within 1e-4 of torch's cross_entropy
#     with ignore_index=7 (AdamW);
#   --loss mse --labels target: float targets of the logits' shape in
#     DIR/target.npy: torch's mse_loss (SGD, lr 0.1, momentum 0.9);
#   --recompute=0 (a layer by index): weights bit-identical to
#     --recompute=none; on a 6-layer GPT-2 at 8 x 128 the arena falls from
#     none to h.0 to h.0,h.2 (= 0,2) to all;
#   --recompute=h.9 (no such layer): one error line, exit 1.
set -euo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
TORCH_PY=/usr/bin/python3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/require.sh"
require_torch "$TORCH_PY"
fail=0
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
m=$T/gpt2.onnx
python3 "$SRC/examples/make_model.py" gpt2 -o "$m" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null
python3 "$SRC/tests/train/onnx_dump.py" "$m" "$T/dump"
python3 -c "
import numpy as np, os
r = np.random.RandomState(3)
os.makedirs('$T/ce'); os.makedirs('$T/mse')
ids = r.randint(0, 64, (3, 2, 8)).astype(np.int64)
l = r.randint(0, 64, (3, 2, 8)).astype(np.int64)
l[:, 0, :3] = 7  # the ignored label; -100 is an ordinary (out-of-range) value now, so none
np.save('$T/ce/input_ids.npy', ids); np.save('$T/ce/labels.npy', l)
np.save('$T/mse/input_ids.npy', ids)
np.save('$T/mse/target.npy', r.standard_normal((3, 2, 8, 64)).astype(np.float32) * 0.1)"
same_dirs() { # a b: every .npy of a equals b's byte for byte
  for f in "$1"/*.npy; do cmp -s "$f" "$2/$(basename "$f")" || return 1; done
}
# train NAME BATCHES GALVC_OPTIONS...: build, 3 steps -> $T/NAME.log, $T/NAME.w
train() {
  local n=$1 b=$2; shift 2
  "$BUILD/galvc" "$m" --input-shape input_ids=2x8 --train "$@" --target cpu -q -o "$T/$n/" 2>"$T/$n.err" ||
    { bad "$n: galvc $*: $(head -3 "$T/$n.err")"; return 1; }
  "$T/$n/program" --batches "$b" --steps 3 -o "$T/$n.w" >"$T/$n.log" 2>"$T/$n.err" ||
    { bad "$n: program: $(head -3 "$T/$n.err")"; return 1; }
}

# --ignore-index 7
if train ce7 "$T/ce" --ignore-index 7; then
  GALV_TORCH_IGNORE=7 "$TORCH_PY" "$SRC/tests/train/torch_train.py" "$T/dump" "$T/ce/input_ids.npy" "$T/ce/labels.npy" 3 \
    "$T/ce7.torch" >"$T/ce7.torch.log"
  echo "== --ignore-index 7"
  "$TORCH_PY" "$SRC/tests/train/compare.py" "$T/ce7.log" "$T/ce7.torch.log" "$T/ce7.w" "$T/ce7.torch" 1e-4 1e-4 ||
    bad "--ignore-index 7 vs torch"
fi

# --loss mse --labels target (SGD with momentum: the update is the gradient itself)
if train mse "$T/mse" --loss mse --labels target --optimizer sgd --lr 0.1 --momentum 0.9 --weight-decay 0; then
  GALV_TORCH_LOSS=mse "$TORCH_PY" "$SRC/tests/train/torch_train.py" "$T/dump" "$T/mse/input_ids.npy" "$T/mse/target.npy" 3 \
    "$T/mse.torch" sgd 0.1 0 0.9 0.999 1e-8 0.9 >"$T/mse.torch.log"
  echo "== --loss mse --labels target"
  "$TORCH_PY" "$SRC/tests/train/compare.py" "$T/mse.log" "$T/mse.torch.log" "$T/mse.w" "$T/mse.torch" 1e-4 1e-4 ||
    bad "--loss mse --labels target vs torch"
  grep -q "target tensor<2x8x64xf32>" "$T/mse/README" || bad "--labels target: the README does not list the target input"
fi

# --recompute=0 (a layer by its index): the backward recomputes layer 0
if [ -d "$T/ce7.w" ] && train rc_0 "$T/ce" --ignore-index 7 --recompute=0; then
  if same_dirs "$T/ce7.w" "$T/rc_0.w" && [ "$(grep '^step' "$T/ce7.log")" = "$(grep '^step' "$T/rc_0.log")" ]; then
    echo "ok   --recompute=0: losses and weights bit-identical to --recompute=none"
  else
    bad "--recompute=0 changed the losses or weights"
  fi
fi
# the arena of a 6-layer GPT-2 at 8 x 128 falls with each layer in the list
# (the last layer's recomputation alone would save nothing: its backward
# comes first), and names and indices select alike
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/g6.onnx" --layers 6 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null
arena() {
  "$BUILD/galvc" "$T/g6.onnx" --input-shape input_ids=8x128 --train "$@" --emit=ir -o /dev/null 2>&1 |
    sed -n 's/.*memory:.* arena \([0-9][0-9]*\)$/\1/p'
}
a0=$(arena --recompute=none) a1=$(arena --recompute=h.0) a2=$(arena --recompute=h.0,h.2) a2i=$(arena --recompute=0,2) a3=$(arena --recompute=all)
if [ -n "$a0" ] && [ -n "$a1" ] && [ -n "$a2" ] && [ -n "$a3" ] && [ "$a0" -gt "$a1" ] && [ "$a1" -gt "$a2" ] &&
   [ "$a2" -gt "$a3" ] && [ "$a2" = "$a2i" ]; then
  echo "ok   6 layers, 8x128 arena: none $a0 > h.0 $a1 > h.0,h.2 $a2 (= 0,2) > all $a3 bytes"
else
  bad "6 layers, 8x128 arena: none '$a0', h.0 '$a1', h.0,h.2 '$a2', 0,2 '$a2i', all '$a3' (want none > h.0 > h.0,h.2 = 0,2 > all)"
fi
# a layer list that names no layer: one line, exit 1
rc=0
"$BUILD/galvc" "$m" --input-shape input_ids=2x8 --train --recompute=h.9 --emit=ir -q -o /dev/null 2>"$T/e" || rc=$?
if [ "$rc" = 1 ] && [ "$(wc -l <"$T/e")" = 1 ] && grep -q "recompute: --recompute=h.9 selects no layer" "$T/e"; then
  echo "ok   --recompute=h.9: $(cat "$T/e")"
else
  bad "--recompute=h.9: exit $rc: $(cat "$T/e")"
fi
echo "train_options: $fail failed"
[ "$fail" -eq 0 ]
