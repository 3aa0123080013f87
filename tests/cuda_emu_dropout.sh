#!/usr/bin/env bash
# galv.dropout on the CUDA target (runtime/cuda/kernels.cu dropout_k; the
# mask of runtime/galv_rng.h; docs/training.md "Dropout"), run under the CPU
# execution layer (make emu: program.cu and runtime/cuda/ compiled by g++
# against runtime/cuda/emu/, NCCL over MPI):
#   (1) ONNX Dropout(0.1, training_mode = true) of ones [64, 96] on one
#       device: program-emu's output equals the CPU program's bit for bit
#       (the same mask, the same fp32 scale), about 10 % zeros;
#   (2) the tiny GPT-2 with nn.Dropout(0.1) (tests/train/dropout_model.py),
#       batch 4 x seq 8, 2 AdamW steps: program-emu = the CPU program
#       (tests/lib/same_training.py: losses and weights rtol 1e-4), fp32;
#       bf16: losses within 1e-3 of the CPU bf16 program (which rounds as
#       the GPU does; docs/cpu-target.md "16-bit storage");
#   (3) 2 ranks, tp + sp (each rank's shard offsets read on the device) and
#       a 2-stage pipeline of 2 microbatches (the microbatch's rows): the
#       program-emu ranks = the one-device CPU program;
#   with nvcc on PATH (make emu links ptxas's counts) every launch of (2)
#   finds its registers per thread (tests/lib/emu_regs.sh).
# Usage: cuda_emu_dropout.sh BUILD_DIR
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
TORCH_PY=/usr/bin/python3
. "$SRC/tests/lib/mpi_env.sh"
. "$SRC/tests/lib/emu_regs.sh"
require_cmd "g++ (build-essential)" g++
require_torch "$TORCH_PY"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/rank_compare.sh"

"$TORCH_PY" "$SRC/tests/train/dropout_model.py" "$T/gpt.onnx" 0.1 2>"$T/err" || { echo "FAIL export: $(tail -2 "$T/err")"; exit 1; }
lm_batches "$T/b" 4 8
python3 - "$T" <<'PY' || { echo "FAIL graph"; exit 1; }
import sys, numpy as np, onnx
from onnx import helper as h, TensorProto as TP
T = sys.argv[1]
nodes = [h.make_node("Constant", [], ["r"], value=h.make_tensor("r", TP.FLOAT, [], [0.1])),
         h.make_node("Constant", [], ["t"], value=h.make_tensor("t", TP.BOOL, [], [1])),
         h.make_node("Dropout", ["x", "r", "t"], ["y"])]
g = h.make_graph(nodes, "d", [h.make_tensor_value_info("x", TP.FLOAT, [64, 96])], [h.make_tensor_value_info("y", TP.FLOAT, [64, 96])])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), f"{T}/drop.onnx")
np.save(f"{T}/ones.npy", np.ones((64, 96), np.float32))
PY
# gen NAME MODEL ARGS...: galvc --target cuda and make emu in each program directory
gen() {
  local n=$1 m=$2 d
  shift 2
  "$BUILD/galvc" "$m" "$@" --target cuda --no-build -q -o "$T/$n/" </dev/null >"$T/$n.gen" 2>&1 || return 1
  for d in "$T/$n" "$T/$n"/stage*; do
    [ -f "$d/program.cu" ] || continue
    make -s -C "$d" emu >>"$T/$n.gen" 2>&1 || return 1
  done
}
TR=(--batch 4 --seq 8 --train --eps 1e-6 --fused-attention off)
emu_regs_on

# (1) the mask, bit for bit
if gen drop "$T/drop.onnx" && "$T/drop/program-emu" --input x="$T/ones.npy" -o "$T/drop.o" >/dev/null 2>"$T/err" &&
  "$BUILD/galvc" "$T/drop.onnx" --target cpu -q -o "$T/dropc/" 2>>"$T/err" </dev/null &&
  "$T/dropc/program" --input x="$T/ones.npy" -o "$T/dropc.o" >/dev/null 2>>"$T/err"; then
  if r=$(python3 -c "
import numpy as np, sys
a, b = np.load('$T/drop.o/y.npy'), np.load('$T/dropc.o/y.npy')
z = float((a == 0).mean())
print(f'{z:.4f} zeros')
sys.exit(0 if np.array_equal(a, b) and abs(z - 0.1) < 0.02 else 1)"); then ok "(1) dropout of ones: program-emu = the CPU program bit for bit, $r"
  else bad "(1) dropout of ones: $r"; fi
else bad "(1) build / run: $(grep -i -m2 error "$T/drop.gen" "$T/err")"; fi

# (2) one device, fp32 and bf16
single_program "$T/one" "$T/gpt.onnx" "--batches $T/b --steps 2" "${TR[@]}"
single_program "$T/one16" "$T/gpt.onnx" "--batches $T/b --steps 2" "${TR[@]}" --precision bf16
for p in fp32 bf16; do
  if gen cu_$p "$T/gpt.onnx" "${TR[@]}" --precision $p &&
    GALV_EMU_REGS=1 "$T/cu_$p/program-emu" --batches "$T/b" --steps 2 -o "$T/cu_$p.w" >"$T/cu_$p.log" 2>&1; then
    emu_regs_all "(2) $p training, registers per launch (dropout_k's included)" "$T/cu_$p.log"
    if [ $p = fp32 ]; then
      if r=$(same_training "$T/one.log" "$T/cu_$p.log" "$T/one.w" "$T/cu_$p.w" 1e-5 1e-4 1e-4); then ok "(2) fp32: program-emu = CPU: $r"
      else bad "(2) fp32: $r"; fi
    elif r=$(python3 - "$T/one16.log" "$T/cu_$p.log" <<'PY'
import re, sys
L = lambda f: [float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(f).read(), re.M)]
a, b = L(sys.argv[1]), L(sys.argv[2])
d = max(abs(x - y) for x, y in zip(a, b)) if a and len(a) == len(b) else float("inf")
print(f"losses {b}, max |dloss| {d:.2g} from the CPU bf16 program (<= 1e-3)")
sys.exit(0 if d <= 1e-3 else 1)
PY
    ); then ok "(2) bf16: $r"
    else bad "(2) bf16: $r"; fi
  else bad "(2) $p: $(grep -i -m2 error "$T/cu_$p.gen" "$T/cu_$p.log" 2>/dev/null)"; fi
done

# (3) 2 ranks: tp + sp, and a 2-stage pipeline of 2 microbatches
for c in "tp_sp --gpus 2 --strategy tp,sp" "pp2 --gpus 2 --pipeline-stages 2 --microbatches 2"; do
  # shellcheck disable=SC2086
  set -- $c
  n=$1
  shift
  if gen "$n" "$T/gpt.onnx" "${TR[@]}" "$@" &&
    GALV_PROGRAM=program-emu timeout 300 "$T/$n/launch" --batches "$T/b" --steps 2 -o "$T/$n.w" >"$T/$n.log" 2>&1 </dev/null; then
    if r=$(same_training "$T/one.log" "$T/$n.log" "$T/one.w" "$T/$n.w" 1e-5 1e-4 1e-4); then ok "(3) $n program-emu ranks = one device: $r"
    else bad "(3) $n: $r"; fi
  else bad "(3) $n: $(grep -i -m2 error "$T/$n.gen" "$T/$n.log" 2>/dev/null | head -3)"; fi
done
echo "cuda_emu_dropout: $pass passed, $fail failed"
galv_exit "$fail"
