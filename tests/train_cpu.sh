#!/usr/bin/env bash
# Training on the CPU target: galvc --train --target cpu writes and builds a
# training-step program; for tiny GPT-2- and Llama-style models, 3 AdamW
# steps over a batch file of 3 batches give losses within 1e-4 relative and
# weights within 1e-4 of torch 1.13 (tests/train/torch_train.py, the torch
# ONNX interpreter of tests/train_torch.sh); with --recompute=all the weights
# are bit-identical; checkpoint save after 2 steps -> load -> 1 more step
# equals 3 straight steps (bit-identical); a checkpoint of another model or a
# damaged one is one clear error; on the galvc --target cpu path a model
# whose If has a run-time condition (the one op galvc meets with no gradient
# rule) stops at shape-infer with one error naming the node (the "no
# gradient rule" error itself is tests/train_torch.sh's, through galv-eval
# without fold-constants, and tests/lit/grad-no-rule.mlir's); recomputation
# lowers the arena (galvc's memory report).
set -euo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
TORCH_PY=/usr/bin/python3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/require.sh"
require_torch "$TORCH_PY"
python3 -c "
import numpy as np, os
r = np.random.RandomState(11)
os.makedirs('$T/batches')
np.save('$T/batches/input_ids.npy', r.randint(0, 64, (3, 2, 8)).astype(np.int64))
l = r.randint(0, 64, (3, 2, 8)).astype(np.int64)
l[:, 0, :2] = -100
np.save('$T/batches/labels.npy', l)"
fail=0
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
same_dirs() { # a b: every .npy of a equals b's byte for byte
  for f in "$1"/*.npy; do cmp -s "$f" "$2/$(basename "$f")" || return 1; done
}
for fam in gpt2 llama; do
  python3 "$SRC/examples/make_model.py" $fam -o "$T/$fam.onnx" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null
  python3 "$SRC/tests/train/onnx_dump.py" "$T/$fam.onnx" "$T/$fam.dump"
  "$TORCH_PY" "$SRC/tests/train/torch_train.py" "$T/$fam.dump" "$T/batches/input_ids.npy" "$T/batches/labels.npy" 3 \
    "$T/$fam.torch" >"$T/$fam.torch.log"
  for rc in none all; do
    o="$T/$fam.$rc"
    "$BUILD/galvc" "$T/$fam.onnx" --input-shape input_ids=2x8 --train --recompute=$rc --target cpu -o "$o/" 2>"$o.galvc.log" ||
      { cat "$o.galvc.log"; bad "$fam: galvc --recompute=$rc"; continue; }
    "$o/program" --batches "$T/batches" --steps 3 -o "$o.w" >"$o.log" || { bad "$fam: program"; continue; }
    echo "== $fam --recompute=$rc"
    "$TORCH_PY" "$SRC/tests/train/compare.py" "$o.log" "$T/$fam.torch.log" "$o.w" "$T/$fam.torch" 1e-4 1e-4 || bad "$fam $rc vs torch"
    grep "galvc: memory:" "$o.galvc.log"
  done
  if [ -d "$T/$fam.all.w" ] && ! same_dirs "$T/$fam.none.w" "$T/$fam.all.w"; then bad "$fam: recompute changed the weights"; fi
  # the memory plan shows the saving at a size where activations dominate
  a0=$("$BUILD/galvc" "$T/$fam.onnx" --input-shape input_ids=8x128 --train --emit=ir -o /dev/null 2>&1 | sed -n 's/.*memory:.* arena \([0-9]*\)$/\1/p')
  a1=$("$BUILD/galvc" "$T/$fam.onnx" --input-shape input_ids=8x128 --train --recompute=all --emit=ir -o /dev/null 2>&1 | sed -n 's/.*memory:.* arena \([0-9]*\)$/\1/p')
  echo "$fam 8x128: arena $a0 bytes, with --recompute=all $a1"
  [ -n "$a0" ] && [ -n "$a1" ] && [ "$a1" -lt "$a0" ] || bad "$fam: recomputation does not lower the arena ($a0 -> $a1)"
  # checkpoint: 2 steps + save, load + 1 step == 3 steps
  p="$T/$fam.none/program"
  "$p" --batches "$T/batches" --steps 2 --save-checkpoint "$T/$fam.ckpt" >"$T/$fam.saved.log"
  "$p" --batches "$T/batches" --steps 1 --load-checkpoint "$T/$fam.ckpt" -o "$T/$fam.resumed" >"$T/$fam.resumed.log"
  # the last lines say what was written where
  grep -qF "program: wrote checkpoint $T/$fam.ckpt (2 steps done)" "$T/$fam.saved.log" || bad "$fam: no checkpoint line"
  grep -qE "^program: wrote [0-9]+ parameters to $T/$fam.resumed/NAME.npy" "$T/$fam.resumed.log" || bad "$fam: no parameters line"
  grep -q "^step 2 loss" "$T/$fam.resumed.log" || bad "$fam: resumed run does not continue at step 2"
  [ "$(grep '^step 2' "$T/$fam.resumed.log")" = "$(grep '^step 2' "$T/$fam.none.log")" ] || bad "$fam: resumed loss differs"
  same_dirs "$T/$fam.none.w" "$T/$fam.resumed" || bad "$fam: checkpoint resume differs from running straight through"
done
# a checkpoint of another model, and a truncated one: one clear error line each
if "$T/llama.none/program" --batches "$T/batches" --load-checkpoint "$T/gpt2.ckpt" 2>"$T/e1"; then bad "foreign checkpoint accepted"
elif ! grep -q "checkpoint of another model" "$T/e1" || [ "$(wc -l <"$T/e1")" -ne 1 ]; then cat "$T/e1"; bad "foreign checkpoint error"; fi
head -c 1000 "$T/gpt2.ckpt" >"$T/short.ckpt"
if "$T/gpt2.none/program" --batches "$T/batches" --load-checkpoint "$T/short.ckpt" 2>"$T/e2"; then bad "truncated checkpoint accepted"
elif ! grep -q "truncated checkpoint" "$T/e2" || [ "$(wc -l <"$T/e2")" -ne 1 ]; then cat "$T/e2"; bad "truncated checkpoint error"; fi
# the op with no gradient rule (If on a run-time condition): galvc's pipeline
# stops at shape-infer (the condition must be constant) with one error
# naming the node; the rule itself is checked in tests/train_torch.sh
python3 "$SRC/tests/train/no_grad_model.py" "$T/nog.onnx"
if "$BUILD/galvc" "$T/nog.onnx" --train --target cpu -o "$T/nog/" 2>"$T/nog.err"; then bad "no-gradient model compiled"
elif ! grep -q "error: .*node '/cond/If' (If): " "$T/nog.err" || [ "$(grep -c error "$T/nog.err")" -ne 1 ]; then
  cat "$T/nog.err"; bad "no-gradient error text"; fi
echo "train_cpu: $fail failed"
[ "$fail" -eq 0 ]
