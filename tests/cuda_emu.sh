#!/usr/bin/env bash
# The CUDA target run without a GPU: every program kind below is compiled
# with galvc --target cuda, built with `make emu` (the same program.cu and
# runtime/cuda/ sources compiled by g++ against the CPU execution layer
# runtime/cuda/emu/; with nvcc on PATH, make emu also links ptxas's
# registers per thread of every kernel, so launches are checked against the
# register file) and run:
#   - inference fp32, every example family (gpt2 bert llama vit t5, batch 2
#     x seq 16): program-emu's outputs vs onnxruntime, rtol 1e-4 + atol 1e-5
#     (tests/cuda_emu_compare.py); gpt2 and llama under --precision bf16
#     within docs/cuda-target.md's bound (atol 5e-2 + rtol 5e-2);
#   - gpt2 inference again under ASan + UBSan (EMU_FLAGS; the contexts'
#     fiber annotations) and as the race-check build (make emu-race: no
#     shared- or global-memory race between threads, fused attention
#     included); its --profile-out kernel profile through
#     bench/layer_profile.py (a forward-only galvc --profile file);
#   - training fp32, tiny GPT-2 and Llama, 3 AdamW steps: losses and final
#     weights vs torch (tests/train/torch_train.py, rtol 1e-4 / 1e-4 as
#     tests/train_cpu.sh); the GPT-2 step also as the race-check build
#     (cross-entropy's block reductions, gather_grad's atomics) and as bf16
#     mixed precision (losses within 1e-3 of fp32's, tests/train_bf16.sh's
#     bound; also with bf16 parameter gradients, --grad-dtype bf16) and with 2
#     accumulated microbatches (--microbatches 2) vs torch's whole batch
#     (fp32 and bf16, the same bounds);
#   - MPI (mpirun, NCCL over MPI): 2-rank tp inference == onnxruntime and ==
#     the single-device program-emu, and with the host-staged backend
#     (COMM=staged) == the NCCL backend; 2-rank dp training vs torch; a 2-stage
#     GPipe training pipeline (GALV_PROGRAM=program-emu out/launch) vs the
#     single-device CPU program (tests/lib/same_training.py), every launch of
#     every rank with its ptxas register count (the stages' own kernels too);
#   - the layer catches real bugs (tests/cuda/emu/bugs.cu, big_shared.cu):
#     a missing barrier (race-check build; also a race in the launch's first
#     block before the kernel reads any index), barrier divergence, a warp mask
#     mismatch, an out-of-bounds device write, a 2048-thread block, a grid
#     over its limit, a 64 KiB static shared array, a missing event between
#     two streams, host code touching device memory, a kernel on freed
#     memory, a kernel's writes read on another stream without an event
#     (race-check build), dynamic shared memory (GALV_DYNAMIC_SHARED: right
#     results; with the kernel's static shared memory over 48 KiB; a race
#     on it and a read past the launch's bytes in the race-check build), a
#     kernel of 127 registers per thread (ptxas) in a block of 1024 threads
#     (needs nvcc), global memory shared by threads of one launch (race-check
#     build: a read of another thread's write with no barrier between them,
#     two blocks writing one element, a plain read of atomically updated
#     bytes; barrier-ordered and atomic-only forms pass): each one line
#     "error: emulation: ..." and exit 1, each
#     correct form exit 0; the real programs' launches all find their
#     ptxas count (GALV_EMU_REGS=1), inference and training.
# Usage: cuda_emu.sh BUILD_DIR
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$SRC/tests/lib/require.sh"
. "$SRC/tests/lib/emu_regs.sh"
require_cmd "g++ (build-essential)" g++
TORCH_PY=/usr/bin/python3
require_torch "$TORCH_PY"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export OPENBLAS_NUM_THREADS=1
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
E=$SRC/runtime/cuda/emu
t0=$(date +%s)

# ---- the layer catches real bugs (one line, exit 1), and passes the correct forms
CXX="g++ -std=c++17 -O1 -g -I$E"
REGS=() # ptxas's register counts of bugs.cu's kernels (nvcc compiles it too)
if emu_regs_on; then
  sh "$E/ptxas_regs.sh" nvcc "sm_90 sm_80" -- "$SRC/tests/cuda/emu/bugs.cu" >"$T/bugs_regs.cc" && REGS=("$T/bugs_regs.cc") ||
    bad "ptxas_regs.sh on bugs.cu (nvcc)"
fi
$CXX -o "$T/bugs" -x c++ "$SRC/tests/cuda/emu/bugs.cu" -x none "$E/emu.cc" "$E/emu_blas.cc" "${REGS[@]}" -lopenblas &
( $CXX -DGALV_EMU_SHADOW -fsanitize=thread --param tsan-instrument-func-entry-exit=0 -c -x c++ -o "$T/bugs_race.o" \
    "$SRC/tests/cuda/emu/bugs.cu" &&
  $CXX -DGALV_EMU_SHADOW -o "$T/bugs_race" "$T/bugs_race.o" "$E/emu.cc" "$E/emu_blas.cc" "${REGS[@]}" -lopenblas ) &
wait
$CXX -o "$T/big_shared" -x c++ "$SRC/tests/cuda/emu/big_shared.cu" -x none "$E/emu.cc" "$E/emu_blas.cc" -lopenblas &
$CXX -DSMALL -o "$T/small_shared" -x c++ "$SRC/tests/cuda/emu/big_shared.cu" -x none "$E/emu.cc" "$E/emu_blas.cc" -lopenblas &
wait
expect_bug() { # NAME PATTERN CMD...: exit 1 with one stderr line matching PATTERN
  local name=$1 pat=$2 err rc=0
  shift 2
  err=$("$@" 2>&1 >/dev/null) || rc=$?
  if [ "$rc" -eq 1 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] && grep -q -- "error: emulation: .*$pat" <<<"$err"; then
    ok "bug '$name': $err"
  else
    bad "bug '$name' not reported as expected (rc $rc): $err"
  fi
}
expect_ok() { # NAME CMD...
  local name=$1 out rc=0
  shift
  out=$("$@" 2>&1) || rc=$?
  if [ "$rc" -eq 0 ]; then ok "correct form '$name' runs"; else bad "correct form '$name' (rc $rc): $out"; fi
}
expect_bug "missing barrier" "shared-memory race in kernel reverse_k.*reverse_k<float>(float\*, float const\*, int)::s, which thread" "$T/bugs_race" race
expect_ok "with the barrier (race check)" "$T/bugs_race" race-ok
expect_ok "with the barrier" "$T/bugs" race-ok
expect_bug "shared-memory race before the kernel's first index read (first launch, first block)" "shared-memory race in kernel early_k .*block (0,0,0): thread .* byte 0 of early_k<float>(float\*, float const\*, int)::first, which thread" "$T/bugs_race" early-race
expect_ok "shared memory before the first index read, barrier-ordered (race check)" "$T/bugs_race" early-ok
expect_bug "barrier divergence" "kernel half_barrier_k: barrier divergence: 32 threads wait at __syncthreads .*bugs.cu:[0-9]* .* has exited without reaching it" "$T/bugs" divergence
expect_ok "uniform barrier" "$T/bugs" divergence-ok
expect_bug "warp mask mismatch" "__shfl_xor_sync" "$T/bugs" mask
expect_ok "full mask" "$T/bugs" mask-ok
expect_bug "out-of-bounds write" "out-of-bounds device memory access at byte 4096 of a 4096-byte allocation in kernel fill_k" "$T/bugs" oob
expect_ok "in bounds" "$T/bugs" oob-ok
expect_bug "2048-thread block" "launch of kernel fill_k at .*: a block of 2048 threads (at most 1024)" "$T/bugs" block2048
expect_ok "1024-thread block" "$T/bugs" block1024
expect_bug "grid y 65536" "grid dims 1x65536x1" "$T/bugs" grid
expect_bug "shared array over 48 KiB" "kernel big_k(float\*) declares 65536 bytes of static __shared__ memory; the limit is 49152" "$T/big_shared"
expect_ok "32 KiB shared array" "$T/small_shared"
expect_bug "a legacy-stream cudaMemcpy to the device, then a kernel on a non-blocking stream reading it (race check)" "stream race: kernel reverse_k on stream 1 reads bytes \[0, 4096) of a device allocation that cudaMemcpy on stream 0 writes" "$T/bugs_race" h2d-race
expect_bug "missing event between streams" "stream race: cudaMemcpyAsync on stream 2 reads bytes \[0, 4096) of a device allocation that cudaMemsetAsync on stream 1 writes" "$T/bugs" stream-race
expect_ok "event between streams" "$T/bugs" stream-ok
expect_bug "kernel then copy on another stream, no event (race-check build: the kernel's bytes)" "stream race: cudaMemcpyAsync on stream 2 reads bytes \[1024, 2048) of a device allocation that kernel fill_k on stream 1 writes" "$T/bugs_race" kernel-race
expect_ok "kernel, event, copy (race check)" "$T/bugs_race" kernel-ok
expect_ok "kernel and a copy of bytes it never touches (race check)" "$T/bugs_race" kernel-apart
expect_bug "host touches device memory" "host code touched device memory (byte 12 of a 4096-byte allocation)" "$T/bugs" host-touch
expect_bug "kernel on freed memory" "access to device memory after cudaFree .* in kernel fill_k" "$T/bugs" free-touch
expect_ok "dynamic shared memory (GALV_DYNAMIC_SHARED), 1 KiB + 32 KiB static" "$T/bugs" dyn
expect_ok "dynamic shared memory (race check)" "$T/bugs_race" dyn
expect_bug "dynamic + static shared memory over 48 KiB" "launch of kernel void dyn_reverse_k<float>(float\*, float const\*, int, int) at .*bugs.cu:[0-9]*: 20480 bytes of dynamic shared memory + 32768 bytes of static __shared__ = 53248 bytes per block (at most 49152" "$T/bugs" dyn-over
expect_bug "race on dynamic shared memory" "shared-memory race in kernel dyn_reverse_k .* of the dynamic shared memory (GALV_DYNAMIC_SHARED), which thread" "$T/bugs_race" dyn-race
expect_bug "read past the launch's dynamic shared bytes" "dynamic shared memory out of bounds in kernel dyn_reverse_k .* reads bytes \[[0-9]*, [0-9]*) of the 1024 the launch gives a block" "$T/bugs_race" dyn-oob
expect_ok "global memory written, barrier, read by another thread (race check)" "$T/bugs_race" global-ok
expect_bug "global memory read by another thread without a barrier" "global-memory race in kernel global_k (.*bugs.cu:[0-9]*): thread (1,0,0) of block (\([01]\),0,0) reads byte [0-9]* of a 4096-byte device allocation, which thread (0,0,0) of block (\1,0,0) wrote in the same launch (no __syncthreads between them)" "$T/bugs_race" global-block
expect_bug "two blocks write one element" "global-memory race in kernel global_k (.*): thread (0,0,0) of block ([01],0,0) writes byte 0 of a 4096-byte device allocation, which thread (0,0,0) of block ([01],0,0) wrote in the same launch (blocks of one launch are not ordered)" "$T/bugs_race" global-grid
expect_ok "atomics of every thread on one element (race check)" "$T/bugs_race" global-atomic
expect_bug "a plain read of atomically updated bytes" "global-memory race in kernel global_k (.*): thread (5,0,0) of block ([01],0,0) reads byte 0 of a 4096-byte device allocation, which .* updated atomically in the same launch" "$T/bugs_race" global-mixed
if [ ${#REGS[@]} = 1 ]; then
  expect_bug "1024 threads x 127 registers" "launch of kernel regs_k(float\*, float const\*, int) at .*bugs.cu:[0-9]*: a block of 1024 threads x 127 registers per thread (ptxas, sm_[89]0) needs 131072 registers .* a block has at most 65536" "$T/bugs" regs
  expect_ok "512 threads x 127 registers" "$T/bugs" regs-ok
  expect_bug "1024 threads x 127 registers (race check)" "a block of 1024 threads x 127 registers per thread" "$T/bugs_race" regs
fi
echo "     bugs: $(($(date +%s) - t0)) s"

# ---- inference vs onnxruntime: every family fp32, gpt2 / llama bf16, gpt2 under ASan + UBSan
cmp_model() { # LOG ARGS...
  local log=$1
  shift
  python3 "$SRC/tests/cuda_emu_compare.py" "$BUILD" "$@" >"$log" 2>&1
}
for fam in gpt2 bert llama vit t5; do
  python3 "$SRC/examples/make_model.py" "$fam" -o "$T/$fam.onnx" --no-verify >/dev/null
done
jobs_=(
  "gpt2:$T/gpt2.onnx --keep $T/gpt2_inf" "bert:$T/bert.onnx" "llama:$T/llama.onnx" "vit:$T/vit.onnx" "t5:$T/t5.onnx"
  "gpt2 bf16:$T/gpt2.onnx --precision bf16" "llama bf16:$T/llama.onnx --precision bf16"
)
run_pair() { # two jobs at a time
  local i=0 pids=() names=() logs=()
  for j in "$@"; do
    IFS=: read -r n args <<<"$j"
    # shellcheck disable=SC2086
    cmp_model "$T/cmp$i.log" $args &
    pids+=($!) names+=("$n") logs+=("$T/cmp$i.log")
    i=$((i + 1))
    if [ ${#pids[@]} = 2 ] || [ $i = $# ]; then
      for k in "${!pids[@]}"; do
        if wait "${pids[$k]}"; then ok "inference ${names[$k]}: $(grep -h '^ok' "${logs[$k]}" | sed 's/^ok *//')"
        else bad "inference ${names[$k]}:"; cat "${logs[$k]}"; fi
      done
      pids=() names=() logs=()
    fi
  done
}
run_pair "${jobs_[@]}"
if EMU_FLAGS="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined" \
   ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 LSAN_OPTIONS=suppressions=$SRC/scripts/lsan.supp:print_suppressions=0 \
   cmp_model "$T/asan.log" "$T/gpt2.onnx"; then
  ok "inference gpt2 under ASan + UBSan: $(grep -h '^ok' "$T/asan.log" | sed 's/^ok *//')"
else bad "inference gpt2 under ASan + UBSan:"; cat "$T/asan.log"; fi
python3 - "$T" <<'PY'
import sys, numpy as np
np.save(sys.argv[1] + "/ids.npy", np.random.RandomState(0).randint(0, 256, (2, 16)).astype(np.int64))
PY
GALV_EMU_REGS=1 "$T/gpt2_inf/program-emu" --input input_ids="$T/ids.npy" -o "$T/plain_out" >"$T/plain.log" 2>&1 || cat "$T/plain.log"
emu_regs_all "inference gpt2 registers per launch" "$T/plain.log"
# --profile-out: the kernel profile of the CUDA program (CUDA events, here the emulator's), as a galvc --profile file
if "$T/gpt2_inf/program-emu" --input input_ids="$T/ids.npy" --profile-out "$T/kprof.json" >"$T/kprof.log" 2>&1 &&
   python3 "$SRC/bench/layer_profile.py" -o "$T/gprof.json" --point "$T/kprof.json,2" 2>>"$T/kprof.log" &&
   python3 - "$T" <<'PY' >>"$T/kprof.log" 2>&1
import json, sys
t = sys.argv[1]
k, g = json.load(open(t + "/kprof.json")), json.load(open(t + "/gprof.json"))
assert k["format"] == "galvc-kernel-profile" and k["run"] == "inference" and len(k["kernels"]) > 10
assert all(e["ms"] >= 0 and e["kind"] for e in k["kernels"])
pt = g["layer"]["points"][0]
assert g["format"] == "galvc-profile" and pt["microbatch"] == 2 and pt["forward_ms"] > 0 and "backward_ms" not in pt, g
PY
then ok "inference gpt2 --profile-out: $(grep -c '"node"' "$T/kprof.json") call sites, a forward-only galvc profile"
else bad "inference gpt2 --profile-out:"; cat "$T/kprof.log"; fi
if make -s -C "$T/gpt2_inf" emu-race >"$T/race.log" 2>&1 &&
   "$T/gpt2_inf/program-emu-race" --input input_ids="$T/ids.npy" -o "$T/race_out" >>"$T/race.log" 2>&1 &&
   cmp -s "$T/race_out/logits.npy" "$T/plain_out/logits.npy"; then
  ok "inference gpt2 race-check build: no shared- or global-memory race (fused attention), same logits"
else bad "inference gpt2 race-check build:"; cat "$T/race.log"; fi
echo "     inference: $(($(date +%s) - t0)) s"

# ---- training fp32: 3 AdamW steps vs torch
python3 -c "
import numpy as np, os
r = np.random.RandomState(11)
os.makedirs('$T/batches')
np.save('$T/batches/input_ids.npy', r.randint(0, 64, (3, 2, 8)).astype(np.int64))
l = r.randint(0, 64, (3, 2, 8)).astype(np.int64)
l[:, 0, :2] = -100
np.save('$T/batches/labels.npy', l)"
TORCH=1
train_one() { # FAM [PRECISION [g16]]: galvc, make emu, 3 steps (g16: --grad-dtype bf16)
  local fam=$1 p=${2:-fp32} o=$T/train_$1${2:+_$2}${3:+_$3} g=()
  [ "${3:-}" = g16 ] && g=(--grad-dtype bf16)
  [ -f "$T/${fam}_t.onnx" ] || python3 "$SRC/examples/make_model.py" "$fam" -o "$T/${fam}_t.onnx" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null &&
    "$BUILD/galvc" "$T/${fam}_t.onnx" --input-shape input_ids=2x8 --train --precision $p "${g[@]}" --target cuda --no-build -q -o "$o/" &&
    make -s -C "$o" emu && GALV_EMU_REGS=1 "$o/program-emu" --batches "$T/batches" --steps 3 -o "$o.w" >"$o.log"
}
if [ $TORCH = 1 ]; then
  python3 "$SRC/examples/make_model.py" gpt2 -o "$T/gpt2_t.onnx" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null
  for fam in gpt2 llama; do (train_one $fam >"$T/train_$fam.build.log" 2>&1) & done
  wait
  (train_one gpt2 bf16 >"$T/train_gpt2_bf16.build.log" 2>&1) &
  (train_one gpt2 bf16 g16 >"$T/train_gpt2_bf16_g16.build.log" 2>&1) &
  for p in fp32 bf16; do # gradient accumulation: 2 microbatches of 1 sample (passes/accumulate.c)
    (o=$T/train_gpt2_mb2_$p
     "$BUILD/galvc" "$T/gpt2_t.onnx" --input-shape input_ids=2x8 --train --microbatches 2 --precision $p --target cuda --no-build -q -o "$o/" &&
       make -s -C "$o" emu && "$o/program-emu" --batches "$T/batches" --steps 3 -o "$o.w" >"$o.log") >"$T/train_gpt2_mb2_$p.build.log" 2>&1 &
  done
  for fam in gpt2 llama; do
    o=$T/train_$fam
    if [ ! -f "$o.log" ] || ! grep -q "^step 2 loss" "$o.log"; then bad "training $fam:"; cat "$o.build.log" "$o.log" 2>/dev/null; continue; fi
    python3 "$SRC/tests/train/onnx_dump.py" "$T/${fam}_t.onnx" "$T/$fam.dump"
    "$TORCH_PY" "$SRC/tests/train/torch_train.py" "$T/$fam.dump" "$T/batches/input_ids.npy" "$T/batches/labels.npy" 3 \
      "$T/$fam.torch" >"$T/$fam.torch.log"
    if r=$("$TORCH_PY" "$SRC/tests/train/compare.py" "$o.log" "$T/$fam.torch.log" "$o.w" "$T/$fam.torch" 1e-4 1e-4); then
      ok "training $fam fp32, 3 AdamW steps vs torch: $(echo "$r" | grep -E '^step 2|^params' | tr '\n' ' ')"
    else bad "training $fam vs torch:"; echo "$r"; fi
    emu_regs_all "training $fam registers per launch" "$o.build.log"
  done
  wait
  # bf16 mixed precision: the fp32 losses within 1e-3 (the bound tests/train_bf16.sh holds the evaluator's plan to)
  if [ -f "$T/train_gpt2_bf16.log" ] && r=$(python3 - "$T/train_gpt2_bf16.log" "$T/gpt2.torch.log" <<'PY'
import re, sys
got, ref = ([float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(p).read(), re.M)] for p in sys.argv[1:3])
d = [abs(a - b) for a, b in zip(got, ref)]
assert len(got) == 3 and len(ref) == 3 and max(d) <= 1e-3, f"bf16 {got} vs fp32 {ref}"
print("|bf16 - fp32 torch| per step " + " ".join(f"{x:.2g}" for x in d) + " (<= 1e-3)")
PY
  ); then ok "training gpt2 bf16 (fp32 master weights, bf16 activations), 3 AdamW steps: $r"
  else bad "training gpt2 bf16:"; cat "$T/train_gpt2_bf16.build.log" "$T/train_gpt2_bf16.log" 2>/dev/null; echo "$r"; fi
  # bf16 parameter gradients (--grad-dtype bf16: dW GEMMs write bf16, the optimizer reads them): the same 1e-3 bound
  if [ -f "$T/train_gpt2_bf16_g16.log" ] && r=$(python3 - "$T/train_gpt2_bf16_g16.log" "$T/gpt2.torch.log" "$T/train_gpt2_bf16.log" <<'PY'
import re, sys
got, ref, b32 = ([float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(p).read(), re.M)] for p in sys.argv[1:4])
d = [abs(a - b) for a, b in zip(got, ref)]
assert len(got) == 3 and len(ref) == 3 and max(d) <= 1e-3, f"bf16 gradients {got} vs fp32 {ref}"
e = max(abs(a - b) for a, b in zip(got, b32))
print("|bf16 grads - fp32 torch| per step " + " ".join(f"{x:.2g}" for x in d) + f" (<= 1e-3); vs fp32 gradients {e:.2g}")
PY
  ); then ok "training gpt2 bf16 with bf16 parameter gradients (--grad-dtype bf16), 3 AdamW steps: $r"
  else bad "training gpt2 bf16 --grad-dtype bf16:"; cat "$T/train_gpt2_bf16_g16.build.log" "$T/train_gpt2_bf16_g16.log" 2>/dev/null; echo "$r"; fi
  # 2 accumulated microbatches (microbatch 0 holds the ignored labels) = torch's whole batch; bf16 within 1e-3
  # (each microbatch's loss weight, d loss of its cross-entropy gradient, stays fp32)
  wait
  if [ -f "$T/train_gpt2_mb2_fp32.log" ] && r=$("$TORCH_PY" "$SRC/tests/train/compare.py" "$T/train_gpt2_mb2_fp32.log" \
     "$T/gpt2.torch.log" "$T/train_gpt2_mb2_fp32.w" "$T/gpt2.torch" 1e-4 1e-4); then
    ok "training gpt2, 2 accumulated microbatches, 3 AdamW steps vs torch (whole batch): $(echo "$r" | grep -E '^step 2|^params' | tr '\n' ' ')"
  else bad "training gpt2 with 2 microbatches:"; cat "$T/train_gpt2_mb2_fp32.build.log" "$T/train_gpt2_mb2_fp32.log" 2>/dev/null; echo "$r"; fi
  if [ -f "$T/train_gpt2_mb2_bf16.log" ] && r=$(python3 - "$T/train_gpt2_mb2_bf16.log" "$T/gpt2.torch.log" <<'PY'
import re, sys
got, ref = ([float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(p).read(), re.M)] for p in sys.argv[1:3])
d = [abs(a - b) for a, b in zip(got, ref)]
assert len(got) == 3 and len(ref) == 3 and max(d) <= 1e-3, f"bf16 {got} vs fp32 {ref}"
print("|bf16 - fp32 torch| per step " + " ".join(f"{x:.2g}" for x in d) + " (<= 1e-3)")
PY
  ); then ok "training gpt2 bf16, 2 accumulated microbatches: $r"
  else bad "training gpt2 bf16 with 2 microbatches:"; cat "$T/train_gpt2_mb2_bf16.build.log" "$T/train_gpt2_mb2_bf16.log" 2>/dev/null; echo "$r"; fi
  o=$T/train_gpt2
  if make -s -C "$o" emu-race >"$T/race_t.log" 2>&1 &&
     "$o/program-emu-race" --batches "$T/batches" --steps 3 -o "$o.race.w" >"$o.race.log" 2>>"$T/race_t.log" &&
     [ "$(grep '^step' "$o.race.log")" = "$(grep '^step' "$o.log")" ]; then
    ok "training gpt2 race-check build: no shared- or global-memory race (cross-entropy block reductions, gather_grad atomics), same losses"
  else bad "training gpt2 race-check build:"; cat "$T/race_t.log"; fi
fi
echo "     training: $(($(date +%s) - t0)) s"

# ---- N ranks and pipeline stages (NCCL over MPI)
if have_cmd mpicc mpirun; then
  pass0=$pass fail0=$fail
  . "$SRC/tests/lib/mpi_env.sh" # GALV_COMM_SYNC, timeouts, MPIRUN (as root if need be); resets the counts
  ok() { echo "ok   $*"; pass=$((pass + 1)); }
  bad() { echo "FAIL $*"; fail=$((fail + 1)); }
  pass=$pass0 fail=$fail0
  m=$T/gpt2_inf
  ( "$BUILD/galvc" "$T/gpt2.onnx" --batch 2 --seq 16 --gpus 2 --strategy tp --target cuda --no-build -q -o "$T/tp2/" &&
    make -s -C "$T/tp2" emu ) >"$T/tp2.build.log" 2>&1 &
  if [ $TORCH = 1 ]; then
    ( "$BUILD/galvc" "$T/gpt2_t.onnx" --input-shape input_ids=2x8 --train --gpus 2 --strategy dp --target cuda --no-build -q \
        -o "$T/dp2/" && make -s -C "$T/dp2" emu ) >"$T/dp2.build.log" 2>&1 &
  fi
  wait
  if GALV_PROGRAM=program-emu timeout 120 "$T/tp2/launch" --input input_ids="$T/ids.npy" -o "$T/tp2_out" >"$T/tp2.log" 2>&1 &&
     r=$(python3 - "$T" <<'PY'
import sys, numpy as np, onnxruntime as ort
t = sys.argv[1]
a, b = np.load(t + "/tp2_out/logits.npy"), np.load(t + "/plain_out/logits.npy")
s = ort.InferenceSession(t + "/gpt2.onnx", providers=["CPUExecutionProvider"])
ref = s.run(None, {"input_ids": np.load(t + "/ids.npy")})[0]
assert np.allclose(a, ref, rtol=1e-4, atol=1e-5), f"vs onnxruntime: max abs err {np.abs(a - ref).max()}"
assert np.allclose(a, b, rtol=1e-4, atol=1e-5), f"vs 1 device: max abs err {np.abs(a - b).max()}"
print(f"max abs err {np.abs(a - ref).max():.3g} vs onnxruntime, {np.abs(a - b).max():.3g} vs the single-device program-emu")
PY
     ); then
    ok "2-rank tp inference (NCCL over MPI): $r"
  else bad "2-rank tp inference:"; cat "$T/tp2.build.log" "$T/tp2.log"; echo "$r"; fi
  # the same program with the host-staged backend (runtime/cuda/comm_staged.cu over runtime/comm_mpi.c)
  if make -s -C "$T/tp2" emu COMM=staged >"$T/tp2s.log" 2>&1 &&
     GALV_PROGRAM=program-emu timeout 120 "$T/tp2/launch" --input input_ids="$T/ids.npy" -o "$T/tp2s_out" >>"$T/tp2s.log" 2>&1 &&
     cmp -s "$T/tp2s_out/logits.npy" "$T/tp2_out/logits.npy"; then
    ok "2-rank tp inference, host-staged backend (COMM=staged): the NCCL backend's logits bit for bit"
  else bad "2-rank tp inference, host-staged backend:"; cat "$T/tp2s.log"; fi
  if [ $TORCH = 1 ]; then
    if GALV_PROGRAM=program-emu timeout 120 "$T/dp2/launch" --batches "$T/batches" --steps 3 -o "$T/dp2.w" >"$T/dp2.log" 2>&1 &&
       r=$("$TORCH_PY" "$SRC/tests/train/compare.py" "$T/dp2.log" "$T/gpt2.torch.log" "$T/dp2.w" "$T/gpt2.torch" 1e-4 1e-4); then
      ok "2-rank dp training (gradient all-reduce over MPI) vs torch: $(echo "$r" | grep -E '^step 2|^params' | tr '\n' ' ')"
    else bad "2-rank dp training:"; cat "$T/dp2.build.log" "$T/dp2.log"; echo "$r"; fi
  fi
  # 2-stage training pipelines vs the single-device CPU program: GPipe; 1F1B with stages of 2 (tp) and 1 devices
  python3 -c "
import numpy as np, os
r = np.random.RandomState(0)
os.makedirs('$T/ppb')
np.save('$T/ppb/input_ids.npy', r.randint(0, 64, (2, 8, 8)).astype(np.int64))
np.save('$T/ppb/labels.npy', r.randint(0, 64, (2, 8, 8)).astype(np.int64))"
  "$BUILD/galvc" "$T/gpt2_t.onnx" --input-shape input_ids=8x8 --train --target cpu -q -o "$T/pp_one/" >"$T/pp_one.log" 2>&1 &&
    "$T/pp_one/program" --batches "$T/ppb" --steps 2 -o "$T/pp_one.w" >"$T/pp_one.txt" 2>&1 || cat "$T/pp_one.log" "$T/pp_one.txt"
  for cfg in "gpipe:GPipe, 2 ranks:--schedule gpipe" "tp21:1F1B, stages of 2 (tp) and 1 devices:--stage-devices 2,1 --strategy tp"; do
    IFS=: read -r n what extra <<<"$cfg"
    d=$T/pp2_$n
    # shellcheck disable=SC2086
    if "$BUILD/galvc" "$T/gpt2_t.onnx" --batch 8 --seq 8 --pipeline-stages 2 --microbatches 2 --train $extra \
         --target cuda --no-build -q -o "$d/" >"$d.log" 2>&1 &&
       { make -s -C "$d/stage0" emu >"$d.0.log" 2>&1 & make -s -C "$d/stage1" emu >"$d.1.log" 2>&1; r1=$?; wait $!; r0=$?; [ $r0 = 0 ] && [ $r1 = 0 ]; } &&
       GALV_EMU_REGS=1 GALV_PROGRAM=program-emu timeout 300 "$d/launch" --batches "$T/ppb" --steps 2 -o "$d.w" >"$d.txt" 2>&1 &&
       r=$(python3 -c "
import sys; sys.path.insert(0, '$SRC/tests/lib')
from same_training import check
print(check('$T/pp_one.txt', '$d.txt', '$T/pp_one.w', '$d.w'))"); then
      ok "2-stage training pipeline ($what; 2 microbatches, NCCL over MPI) vs the single-device program: $r"
    else bad "2-stage training pipeline ($what):"; cat "$d.log" "$d".[01].log "$d.txt" 2>/dev/null | tail -30; fi
    emu_regs_all "2-stage training pipeline ($what), registers per launch (every rank)" "$d.txt"
  done
fi
echo "cuda_emu: $pass passed, $fail failed ($(($(date +%s) - t0)) s)"
galv_exit $fail
