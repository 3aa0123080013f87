#!/usr/bin/env bash
# --precision fp16 on the CUDA target, run under the CPU execution layer
# (make emu: program.cu and runtime/cuda/ compiled by g++ against
# runtime/cuda/emu/, which rounds f16 as the GPU does: nearest even, inf
# beyond 65504; docs/cuda-target.md, "fp16"):
#   (1) inference, gpt2 and llama (make_model.py's sizes, batch 2 x seq 16):
#       program-emu's logits vs onnxruntime's fp32 within the bound
#       docs/cpu-target.md states for fp16 against fp32, 2^-9 max|logit|
#       (tests/cuda_emu_compare.py --precision fp16);
#   (2) fp16 training with --loss-scale dynamic (the default), tiny GPT-2 and
#       Llama as tests/train_fp16.sh (2 layers, hidden 64, vocab 64, batch 2 x
#       seq 16, AdamW), 3 steps: losses within 2e-4 of the CPU target's fp32
#       program (train_fp16.sh's bound); the CPU target's fp16 program takes the
#       same scale / skip decisions and its losses are within 4e-4 (each
#       program within 2e-4 of fp32: the two round the same plan after
#       different fp32 summation orders); every launch finds its ptxas register
#       count (with nvcc);
#   (3) a forced overflow, one device: --loss-scale-init 2^40
#       --loss-scale-interval 3, 30 steps: the f16 activation gradients
#       overflow to inf, the first 20 steps are skipped with the scale halving
#       to 2^20, later growths to 2^21 overflow again — every line's scale,
#       skipped count and overflow mark equal the CPU fp16 program's; the
#       parameters after the 20 skipped steps equal the initial ones bit for bit;
#   (4) 2 ranks (mpirun, NCCL over MPI), dp and zero, --loss-scale-init 2^24
#       --loss-scale-interval 3, 8 steps (4 skipped, a growth, an overflow):
#       the same decisions as the one-device CPU fp16 program, losses within
#       4e-4 of it, the communicator's bytes = the global program's prediction;
#       zero (each rank updates its own shard): the parameters gathered after
#       the 4 skipped steps equal the initial ones on every rank's shard;
#   (5) a 2-stage pipeline (1F1B, 2 microbatches: the pipeline runtime scales
#       the loss and skips over both stages), make emu per stage: the 2^24 run
#       of (4) takes the CPU target's pipeline's 8 decisions, losses within
#       4e-4 of it; 3 steps without overflow within 2e-4 of the cpu fp32
#       program.
# Usage: cuda_emu_fp16.sh BUILD_DIR
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$SRC/tests/lib/mpi_env.sh"
. "$SRC/tests/lib/emu_regs.sh"
require_cmd "g++ (build-essential)" g++
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
t0=$(date +%s)

# ---- (1) inference vs onnxruntime
for fam in gpt2 llama; do
  python3 "$SRC/examples/make_model.py" "$fam" -o "$T/$fam.onnx" --no-verify >/dev/null
  python3 "$SRC/tests/cuda_emu_compare.py" "$BUILD" "$T/$fam.onnx" --precision fp16 >"$T/inf_$fam.log" 2>&1 &
done
for fam in gpt2 llama; do
  wait -n
done
for fam in gpt2 llama; do
  if grep -q '^ok' "$T/inf_$fam.log" && ! grep -q FAIL "$T/inf_$fam.log"; then
    ok "inference $fam fp16 vs onnxruntime fp32 (<= 2^-9 max|logit|): $(grep -h '^ok' "$T/inf_$fam.log" | sed 's/^ok *//')"
  else
    bad "inference $fam fp16:"; cat "$T/inf_$fam.log"
  fi
done
emu_regs_on
echo "     inference: $(($(date +%s) - t0)) s"

# ---- training programs
python3 -c "
import numpy as np, os
r = np.random.RandomState(5)
os.makedirs('$T/b')
np.save('$T/b/input_ids.npy', r.randint(0, 64, (2, 16)).astype(np.int64))
np.save('$T/b/labels.npy', r.randint(0, 64, (2, 16)).astype(np.int64))"
# gen DIR TARGET MODEL ARGS...: galvc; the cuda target's directory also built with make emu
gen() {
  local d=$1 tg=$2 m=$3
  shift 3
  if [ "$tg" = cuda ]; then
    "$BUILD/galvc" "$m" --batch 2 --seq 16 --train --target cuda "$@" --no-build -q -o "$T/$d/" </dev/null >"$T/$d.gen" 2>&1 &&
      make -s -C "$T/$d" emu >>"$T/$d.gen" 2>&1
  else
    "$BUILD/galvc" "$m" --batch 2 --seq 16 --train --target cpu "$@" -q -o "$T/$d/" </dev/null >"$T/$d.gen" 2>&1
  fi || { bad "$d: $(grep -i error "$T/$d.gen" | tail -1)"; return 1; }
}
# close LOG_A LOG_B BOUND: the same number (>= 1) of step lines, losses within BOUND
close() {
  python3 - "$@" <<'PY'
import re, sys
L = lambda f: [float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(f).read(), re.M)]
a, b, bound = L(sys.argv[1]), L(sys.argv[2]), float(sys.argv[3])
d = max(abs(x - y) for x, y in zip(a, b)) if a and len(a) == len(b) else float("inf")
print(f"max |dloss| {d:.2g} (<= {bound:g}) over {len(b)} steps")
sys.exit(0 if d <= bound else 1)
PY
}
# decisions LOG: each step line without its loss (scale, skipped count, overflow mark)
decisions() { grep '^step' "$1" | awk '{$4 = ""; print}'; }
same_decisions() { [ -n "$(decisions "$1")" ] && [ "$(decisions "$1")" = "$(decisions "$2")" ]; }

# ---- (2) fp16 training, dynamic loss scale, 3 steps
for fam in gpt2 llama; do
  python3 "$SRC/examples/make_model.py" $fam -o "$T/t$fam.onnx" --layers 2 --hidden 64 --heads 4 --vocab 64 --no-verify >/dev/null
  M=$T/t$fam.onnx
  gen ${fam}_cu cuda "$M" --precision fp16 &
  { gen ${fam}_32 cpu "$M" --precision fp32 && gen ${fam}_16 cpu "$M" --precision fp16; } &
  wait
  [ -x "$T/${fam}_cu/program-emu" ] && [ -x "$T/${fam}_16/program" ] && [ -x "$T/${fam}_32/program" ] || continue
  GALV_EMU_REGS=1 "$T/${fam}_cu/program-emu" --batches "$T/b" --steps 3 >"$T/${fam}_cu.log" 2>&1 ||
    { bad "$fam fp16 training (program-emu): $(tail -1 "$T/${fam}_cu.log")"; continue; }
  "$T/${fam}_32/program" --batches "$T/b" --steps 3 >"$T/${fam}_32.log" 2>&1 && "$T/${fam}_16/program" --batches "$T/b" --steps 3 >"$T/${fam}_16.log" 2>&1 ||
    { bad "$fam: the cpu programs did not run"; continue; }
  if out=$(close "$T/${fam}_32.log" "$T/${fam}_cu.log" 2e-4) && grep -q "^step 2 loss .* scale 65536 skipped 0$" "$T/${fam}_cu.log"; then
    ok "$fam fp16 training (program-emu) vs the cpu fp32 program: $out; $(grep '^step 2' "$T/${fam}_cu.log")"
  else
    bad "$fam fp16 training vs fp32: ${out:-}; $(grep '^step' "$T/${fam}_cu.log" | tr '\n' ' ')"
  fi
  if same_decisions "$T/${fam}_16.log" "$T/${fam}_cu.log" && out=$(close "$T/${fam}_16.log" "$T/${fam}_cu.log" 4e-4); then
    ok "$fam fp16 training (program-emu) vs the cpu fp16 program: the same scale / skip decisions, $out"
  else
    bad "$fam fp16 training vs the cpu fp16 program: ${out:-decisions differ}"
  fi
  emu_regs_all "$fam fp16 training, registers per launch" "$T/${fam}_cu.log"
done
echo "     training: $(($(date +%s) - t0)) s"

# ---- (3) forced overflow on one device
M=$T/tgpt2.onnx
OV=(--precision fp16 --loss-scale-init 1099511627776 --loss-scale-interval 3)
gen ov_cu cuda "$M" "${OV[@]}" &
gen ov_16 cpu "$M" "${OV[@]}" &
wait
if [ -x "$T/ov_cu/program-emu" ] && [ -x "$T/ov_16/program" ]; then
  "$T/ov_cu/program-emu" --batches "$T/b" --steps 30 >"$T/ov_cu.log" 2>&1 || bad "overflow run (program-emu): $(tail -1 "$T/ov_cu.log")"
  "$T/ov_cu/program-emu" --batches "$T/b" --steps 0 -o "$T/w0" >"$T/ov_w0.log" 2>&1 &&
    "$T/ov_cu/program-emu" --batches "$T/b" --steps 20 -o "$T/w20" >"$T/ov_w20.log" 2>&1 || bad "overflow run: -o after 0 and 20 steps"
  "$T/ov_16/program" --batches "$T/b" --steps 30 >"$T/ov_16.log" 2>&1 || bad "overflow run (cpu): $(tail -1 "$T/ov_16.log")"
  if same_decisions "$T/ov_16.log" "$T/ov_cu.log" && out=$(python3 - "$T" <<'PY'
import glob, os, re, sys
import numpy as np
T = sys.argv[1]
lines = re.findall(r"^step (\d+) loss (\S+) scale (\S+) skipped (\d+)(.*)$", open(f"{T}/ov_cu.log").read(), re.M)
skipped = [int(k) for k, l, s, n, o in lines if "overflow" in o]
halving = len(lines) == 30 and all(float(lines[i][2]) == 2.0 ** (39 - i) for i in range(20))
same, n = True, 0
for f in glob.glob(f"{T}/w0/*.npy"):
    same, n = same and np.array_equal(np.load(f), np.load(f"{T}/w20/{os.path.basename(f)}")), n + 1
print(f"{len(skipped)} of 30 steps skipped ({skipped[:2]}...{skipped[19:]}), scale halving to 2^20, {n} parameters "
      f"after the 20 skipped steps {'identical to' if same else 'DIFFER from'} the initial ones, losses "
      f"{float(lines[20][1]):.6g} -> {float(lines[-1][1]):.6g}")
sys.exit(0 if skipped[:20] == list(range(20)) and len(skipped) > 20 and halving and same and n > 0 else 1)
PY
  ); then
    ok "forced overflow (init 2^40), program-emu: every line's scale / skipped / overflow mark = the cpu fp16 program's; $out"
  else
    bad "forced overflow: ${out:-decisions differ from the cpu program: $(diff <(decisions "$T/ov_16.log") <(decisions "$T/ov_cu.log") | head -3 | tr '\n' ' ')}"
  fi
fi
echo "     overflow: $(($(date +%s) - t0)) s"

# ---- (4) 2 ranks: the same decisions on every rank
OV2=(--precision fp16 --loss-scale-init 16777216 --loss-scale-interval 3)
gen ov2_16 cpu "$M" "${OV2[@]}" && "$T/ov2_16/program" --batches "$T/b" --steps 8 >"$T/ov2_16.log" 2>&1 || bad "2^24 run (cpu)"
for s in dp zero; do
  gen ov2_$s cuda "$M" "${OV2[@]}" --gpus 2 --strategy $s || continue
  L=(env GALV_EMU_REGS=1 GALV_PROGRAM=program-emu timeout 600 "$T/ov2_$s/launch")
  "${L[@]}" --batches "$T/b" --steps 8 --comm-stats </dev/null >"$T/ov2_$s.log" 2>&1 || { bad "2 ranks $s: $(tail -1 "$T/ov2_$s.log")"; continue; }
  grep -q "comm bytes sent by rank 0 in 8 runs: .* from the global program$" "$T/ov2_$s.log" ||
    bad "2 ranks $s: the communicator's bytes were not checked against the global program's prediction"
  if same_decisions "$T/ov2_16.log" "$T/ov2_$s.log" && out=$(close "$T/ov2_16.log" "$T/ov2_$s.log" 4e-4); then
    ok "2 ranks $s (program-emu): the one-device cpu fp16 program's 8 decisions ($(grep -c overflow "$T/ov2_$s.log") skipped: $(grep -o 'scale [0-9]*' "$T/ov2_$s.log" | awk '{print $2}' | tr '\n' ' ')); $out"
  else
    bad "2 ranks $s: $(diff <(decisions "$T/ov2_16.log") <(decisions "$T/ov2_$s.log") | head -3 | tr '\n' ' ') ${out:-}"
  fi
  emu_regs_all "2 ranks $s fp16 training, registers per launch (every rank)" "$T/ov2_$s.log"
  if [ $s = zero ]; then
    "${L[@]}" --batches "$T/b" --steps 0 -o "$T/z0" </dev/null >"$T/z0.log" 2>&1 &&
      "${L[@]}" --batches "$T/b" --steps 4 -o "$T/z4" </dev/null >"$T/z4.log" 2>&1 || { bad "zero: -o after 0 and 4 steps"; continue; }
    if out=$(python3 - "$T" <<'PY'
import glob, os, sys
import numpy as np
T = sys.argv[1]
fs = glob.glob(f"{T}/z0/*.npy")
diff = [os.path.basename(f) for f in fs if not np.array_equal(np.load(f), np.load(f"{T}/z4/{os.path.basename(f)}"))]
print(f"{len(fs)} parameters gathered from both ranks' shards after the 4 skipped steps, {len(diff)} changed {diff[:3]}")
sys.exit(0 if fs and not diff else 1)
PY
    ); then ok "2 ranks zero, 4 overflowing steps: $out"; else bad "2 ranks zero: $out"; fi
  fi
done
echo "     2 ranks: $(($(date +%s) - t0)) s"

# ---- (5) a 2-stage pipeline (1F1B, 2 microbatches; the runtime's loss scaling over both stages) with the 2^24
# run of (4): the CUDA stages under the execution layer (make emu in each stage) take the CPU target's pipeline's
# 8 decisions, losses within 4e-4 of it; a 3-step run without overflow within 2e-4 of the cpu fp32 program
PP=(--pipeline-stages 2 --microbatches 2 --schedule 1f1b)
gen_pp() { # DIR ARGS...: the cuda pipeline, make emu per stage
  local d=$1
  shift
  "$BUILD/galvc" "$M" --batch 2 --seq 16 --train --target cuda "$@" --no-build -q -o "$T/$d/" </dev/null >"$T/$d.gen" 2>&1 &&
    make -s -C "$T/$d/stage0" emu >>"$T/$d.gen" 2>&1 && make -s -C "$T/$d/stage1" emu >>"$T/$d.gen" 2>&1 ||
    { bad "$d: $(grep -i error "$T/$d.gen" | tail -1)"; return 1; }
}
PL=(env GALV_EMU_REGS=1 GALV_PROGRAM=program-emu timeout 600)
if gen_pp pp_cu "${OV2[@]}" "${PP[@]}" && gen pp_16 cpu "$M" "${OV2[@]}" "${PP[@]}"; then
  "$T/pp_16/launch" --batches "$T/b" --steps 8 </dev/null >"$T/pp_16.log" 2>&1 || bad "pp=2 (cpu): $(grep -m1 error "$T/pp_16.log")"
  if "${PL[@]}" "$T/pp_cu/launch" --batches "$T/b" --steps 8 </dev/null >"$T/pp_cu.log" 2>&1 &&
     same_decisions "$T/pp_16.log" "$T/pp_cu.log" && out=$(close "$T/pp_16.log" "$T/pp_cu.log" 4e-4); then
    ok "pp=2 fp16 (program-emu stages): the cpu pipeline's 8 decisions ($(grep -c overflow "$T/pp_cu.log") skipped: $(grep -o 'scale [0-9]*' "$T/pp_cu.log" | awk '{print $2}' | tr '\n' ' ')); $out"
  else
    bad "pp=2 fp16 (program-emu): $(grep -m1 -i error "$T/pp_cu.log") $(diff <(decisions "$T/pp_16.log") <(decisions "$T/pp_cu.log") | head -3 | tr '\n' ' ') ${out:-}"
  fi
  emu_regs_all "pp=2 fp16 training, registers per launch (every stage)" "$T/pp_cu.log"
fi
if gen_pp pp3_cu --precision fp16 "${PP[@]}" && [ -x "$T/gpt2_32/program" ] &&
   "${PL[@]}" "$T/pp3_cu/launch" --batches "$T/b" --steps 3 </dev/null >"$T/pp3_cu.log" 2>&1 &&
   out=$(close "$T/gpt2_32.log" "$T/pp3_cu.log" 2e-4) && grep -q "^step 2 loss .* scale 65536 skipped 0$" "$T/pp3_cu.log"; then
  ok "pp=2 fp16 (program-emu stages, dynamic scale, no overflow) vs the cpu fp32 program: $out"
else bad "pp=2 fp16 (program-emu) vs fp32: ${out:-} $(grep -m1 -i error "$T/pp3_cu.log" "$T/pp3_cu.gen" 2>/dev/null)"; fi
echo "     pipeline: $(($(date +%s) - t0)) s"
echo "cuda_emu_fp16: $pass passed, $fail failed"
galv_exit "$fail"
