#!/usr/bin/env bash
# Sequences past the fold limit: a GPT's causal mask at seq 1100 is
# 1100 x 1100 = 1.21M elements, over fold-constants' 2^20, so its
# ConstantOfShape is not materialised; it becomes a static expand of its
# value (docs/ops.md, fold-constants), which every target runs. Tiny GPT-2
# (1 layer, hidden 32, vocab 64, 2048 positions):
#   inference, batch 1 x seq 1100: the CPU program's logits = onnxruntime's
#   (atol 1e-4), and the mask's ops are not folded (the IR keeps the expand);
#   the CUDA target emits the same program (--no-build);
#   training, batch 4 x seq 1100, 2 AdamW steps: pp=2 x dp=2 (4 ranks, the mask
#   made in stage 0 and sent whole) and dp=2 (2 ranks) = the single device
#   (losses and every weight, rtol 1e-4 / atol 1e-5).
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
. "$SRC/tests/lib/rank_compare.sh"
S=1100
m="$T/gpt2.onnx"
python3 "$SRC/examples/make_model.py" gpt2 -o "$m" --layers 1 --hidden 32 --heads 2 --vocab 64 --max-pos 2048 --no-verify >/dev/null ||
  { echo "FAIL make_model"; exit 1; }
python3 -c "
import numpy as np, os
r = np.random.RandomState(3)
np.save('$T/ids.npy', r.randint(0, 64, (1, $S)).astype(np.int64))
os.makedirs('$T/b')
np.save('$T/b/input_ids.npy', r.randint(0, 64, (4, $S)).astype(np.int64))
np.save('$T/b/labels.npy', r.randint(0, 64, (4, $S)).astype(np.int64))"
# ---- inference against onnxruntime
if "$BUILD/galvc" "$m" --batch 1 --seq $S --target cpu -q -o "$T/inf/" </dev/null 2>"$T/inf.err" &&
   "$T/inf/program" --input input_ids="$T/ids.npy" -o "$T/inf/res" >/dev/null 2>>"$T/inf.err"; then
  out=$(python3 - "$m" "$T/ids.npy" "$T/inf/res/logits.npy" <<'PY'
import sys, numpy as np, onnxruntime as ort
s = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
want = s.run(None, {"input_ids": np.load(sys.argv[2])})[0]
got = np.load(sys.argv[3])
d = float(np.abs(want - got).max()) if want.shape == got.shape else float("inf")
print(f"logits {got.shape} max abs diff {d:.2g} from onnxruntime")
sys.exit(0 if d <= 1e-4 else 1)
PY
  ) && ok "seq $S inference: $out" || bad "seq $S inference: $out"
else bad "seq $S inference: $(grep -m1 error "$T/inf.err")"; fi
"$BUILD/galvc" "$m" --batch 1 --seq $S --target cpu --emit=ir -o "$T/inf.mlir" </dev/null >/dev/null 2>&1
if grep -q '"galv.expand"(%[0-9]*) .*: (tensor<1xf32>) -> tensor<1100x1100xf32>' "$T/inf.mlir" && ! grep -q constant_of_shape "$T/inf.mlir"; then
  ok "the mask's ConstantOfShape is a static expand of its value (not folded: 1.21M elements)"
else bad "the mask's ConstantOfShape: $(grep -m1 -o 'galv.constant_of_shape[^:]*:[^>]*>' "$T/inf.mlir")"; fi
if "$BUILD/galvc" "$m" --batch 1 --seq $S --target cuda --no-build -q -o "$T/cu/" </dev/null 2>"$T/cu.err" && [ -s "$T/cu/program.cu" ]; then
  ok "seq $S: the CUDA target emits the program"
else bad "seq $S CUDA: $(grep -m1 error "$T/cu.err")"; fi
# ---- training: ranks = the single device
TR=(--batch 4 --seq $S --train)
single_program "$T/one" "$m" "--batches $T/b --steps 2" "${TR[@]}" --microbatches 2
for c in "pp2dp2:--gpus 4 --pipeline-stages 2 --microbatches 2 --strategy dp" "dp2:--gpus 2 --strategy dp --microbatches 2"; do
  n=${c%%:*} a=${c#*:}
  # shellcheck disable=SC2086
  if timeout 300 "$BUILD/galvc" "$m" "${TR[@]}" $a --target cpu -q -o "$T/$n/" </dev/null 2>"$T/$n.err" &&
     timeout 300 "$T/$n/launch" --batches "$T/b" --steps 2 -o "$T/$n.w" >"$T/$n.log" 2>>"$T/$n.err" </dev/null; then
    out=$(same_training "$T/one.log" "$T/$n.log" "$T/one.w" "$T/$n.w") && ok "seq $S training $n = one device: $out" ||
      bad "seq $S training $n: $out"
  else bad "seq $S training $n: $(grep -m1 -i error "$T/$n.err")"; fi
done
echo "long_seq: $pass passed, $fail failed"
[ "$fail" = 0 ]
