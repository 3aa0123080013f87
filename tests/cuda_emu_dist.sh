#!/usr/bin/env bash
# The distributed CUDA program kinds that tests/cuda_emu.sh does not run,
# each compiled with galvc --target cuda, built with `make emu` (program.cu
# and runtime/cuda/ over the CPU execution layer runtime/cuda/emu/; NCCL over
# MPI) and run with GALV_PROGRAM=program-emu out/launch:
#   - 4-rank tp inference (GPT-2 tiny, 4 heads over 4 ranks) vs onnxruntime;
#   - per program (tp4 with its output written, dp x tp, ZeRO and tp,sp training
#     steps without -o): the largest rank's emulated device-memory
#     high-water mark (GALV_EMU_MEM=1: cudaMalloc'ed bytes live at once)
#     within 5% of galvc --report-cost's memory per device;
#   - training, tiny GPT-2, 3 AdamW steps, against the single-device CPU
#     program (tests/lib/same_training.py: losses and every weight rtol
#     1e-4, atol 1e-5): dp x tp on a 2x2 mesh (4 ranks), tp,sp on 2 ranks
#     (sequence parallelism: collectives over a non-leading dim), ZeRO on 2 ranks
#     (reduce-scattered gradients, sharded optimizer state, all-gathered
#     parameters; also accumulating 2 microbatches, each one's gradients
#     reduce-scattered as made), and the same ZeRO plan with the host-staged backend
#     (COMM=staged) bit for bit equal to the NCCL backend's, and as the
#     race-check build (make emu-race: every kernel's exact bytes checked
#     against the collectives on the NCCL streams, no event missing; no
#     shared- or global-memory race between threads of a launch);
#   - bf16 mixed precision on 2 ranks, tp (GPT-2 and Llama), dp with bf16 parameter
#     gradients (--grad-dtype bf16) and zero1 (the fp32 master split, a whole
#     16-bit working copy): losses within 1e-3 of the CPU
#     program's fp32 ones, the bytes on the wire = the global prediction in
#     storage bytes (bf16 activations / gradients move 2 bytes per
#     element), device memory within 5% of --report-cost's;
#   - a checkpoint written by the 4-rank dp x tp GPU training after 2 steps
#     loads into the single-device CPU program, whose 3rd step equals the
#     straight 3 CPU steps;
#   - training pipelines of 2 stages, 4 microbatches: ZB-H1 (the weight-
#     gradient entry split from the input-gradient one), 1F1B on uneven
#     stage devices 1 and 2 (dp inside the second), 1F1B with
#     recomputing stages (--pipeline-recompute) and interleaved 1F1B (2
#     device groups x 2 chunks, its Makefiles defaulting to COMM=staged),
#     each vs the single device; the interleaved stages on 4 emulated GPUs
#     (GALV_EMU_DEVICES=4): every rank on its device group's GPU, the
#     NCCL build's losses bit for bit; 1F1B on
#     stage devices 1 and 2 with --clip-grad-norm (SGD) vs the clipped
#     single-device CPU program (one norm over both stages, each
#     parameter counted once);
#   - with nvcc on PATH (make emu links ptxas's counts), every launch of
#     every rank of the tp4 inference, dp x tp and ZeRO training and the
#     ZB-H1 pipeline found its kernel's registers per thread
#     (GALV_EMU_REGS=1); without nvcc that check is a skipped part (exit 77).
# Usage: cuda_emu_dist.sh BUILD_DIR
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$SRC/tests/lib/require.sh"
. "$SRC/tests/lib/emu_regs.sh"
require_cmd "g++ (build-essential)" g++
require_cmd "OpenMPI (mpicc, mpirun)" mpicc mpirun
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export OPENBLAS_NUM_THREADS=1
. "$SRC/tests/lib/mpi_env.sh" # GALV_COMM_SYNC, timeouts, MPIRUN (as root if need be); resets the counts
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
t0=$(date +%s)
G=$BUILD/galvc
emu_regs_on

python3 "$SRC/examples/make_model.py" gpt2 -o "$T/g.onnx" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null ||
  { echo "FAIL make_model"; exit 1; }
python3 - "$T" <<'PY' || { echo "FAIL batches"; exit 1; }
import numpy as np, os, sys
t = sys.argv[1]
r = np.random.RandomState(5)
os.makedirs(t + "/b")
np.save(t + "/b/input_ids.npy", r.randint(0, 64, (3, 8, 8)).astype(np.int64))
l = r.randint(0, 64, (3, 8, 8)).astype(np.int64)
l[:, 1, :3] = -100 # ignored tokens: the mean over a split batch counts only the others
np.save(t + "/b/labels.npy", l)
np.save(t + "/ids.npy", r.randint(0, 64, (2, 16)).astype(np.int64))
PY

# The single-device CPU reference: 3 steps, and 2 steps + 1 from a checkpoint below
"$G" "$T/g.onnx" --input-shape input_ids=8x8 --train --target cpu -q -o "$T/one/" </dev/null >"$T/one.log" 2>&1 &&
  "$T/one/program" --batches "$T/b" --steps 3 -o "$T/one.w" >"$T/one.txt" 2>&1 ||
  { echo "FAIL the single-device reference:"; cat "$T/one.log" "$T/one.txt"; exit 1; }

gen() { # NAME ARGS...: galvc --target cuda, then make emu in each program directory (two at a time)
  local n=$1 d
  shift
  "$G" "${MODEL:-$T/g.onnx}" "$@" --target cuda --no-build -q --report-cost -o "$T/$n/" </dev/null >"$T/$n.gen.log" 2>&1 || return 1
  for d in "$T/$n" "$T/$n"/stage*; do
    [ -f "$d/program.cu" ] || continue
    make -s -C "$d" emu >>"$T/$n.gen.log" 2>&1 || return 1
  done
}
same() { # LOG WDIR [REF_LOG REF_WDIR exact]: vs the single-device CPU program (or REF, bit for bit)
  python3 - "${3:-$T/one.txt}" "$1" "${4:-$T/one.w}" "$2" "${5:-}" "$SRC/tests/lib" <<'PY'
import sys
sys.path.insert(0, sys.argv[6])
from same_training import check
print(check(*sys.argv[1:5], exact=bool(sys.argv[5])))
PY
}
launch() { # NAME ARGS...: the program-emu ranks of NAME (each prints its device-memory high-water mark at exit)
  local n=$1
  shift
  GALV_EMU_MEM=1 GALV_EMU_REGS=1 GALV_PROGRAM=${GALV_PROGRAM:-program-emu} timeout 300 "$T/$n/launch" "$@" </dev/null
}
memory() { # NAME LOG: the largest rank's emulated device high-water mark vs the planner's memory per device
  local r
  if r=$(python3 - "$T/$1.gen.log" "$2" <<'PY'
import re, sys
pred = [int(x) for x in re.findall(r"memory per device: .* total (\d+) of", open(sys.argv[1]).read())]
got = [int(x) for x in re.findall(r"emulation: device memory high-water (\d+) bytes", open(sys.argv[2]).read())]
assert len(pred) == 1 and got, f"no figures (predicted {pred}, measured {got})"
p, g = pred[0], max(got)
assert abs(g - p) <= 0.05 * p, f"high-water {g} vs predicted {p}: {100 * (g - p) / p:+.2f}%"
print(f"high-water {g} bytes vs predicted {p} ({100 * (g - p) / p:+.3f}%)")
PY
  ); then ok "$1: device memory (emulated allocations) = the planner's memory per device within 5%: $r"
  else bad "$1: device memory: $r"; fi
}

# ---- 4-rank tp inference vs onnxruntime
if gen tp4 --batch 2 --seq 16 --gpus 4 --strategy tp &&
   launch tp4 --input input_ids="$T/ids.npy" -o "$T/tp4_out" >"$T/tp4.log" 2>&1 &&
   r=$(python3 - "$T" <<'PY'
import sys, numpy as np, onnxruntime as ort
t = sys.argv[1]
a = np.load(t + "/tp4_out/logits.npy")
s = ort.InferenceSession(t + "/g.onnx", providers=["CPUExecutionProvider"])
ref = s.run(None, {"input_ids": np.load(t + "/ids.npy")})[0]
assert np.allclose(a, ref, rtol=1e-4, atol=1e-5), f"max abs err {np.abs(a - ref).max()}"
print(f"max abs err {np.abs(a - ref).max():.3g} vs onnxruntime")
PY
   ); then ok "4-rank tp inference (NCCL over MPI): $r"
else bad "4-rank tp inference:"; tail -n 20 "$T/tp4.gen.log" "$T/tp4.log" 2>/dev/null; fi
memory tp4 "$T/tp4.log"
emu_regs_all "tp4 inference, registers per launch (every rank)" "$T/tp4.log"
echo "     tp4: $(($(date +%s) - t0)) s"

# ---- training: dp x tp (4 ranks), ZeRO (2 ranks; NCCL and host-staged)
train() { # NAME WHAT ARGS...
  local n=$1 what=$2 r
  shift 2
  if gen "$n" --batch 8 --seq 8 --train "$@" && launch "$n" --batches "$T/b" --steps 3 -o "$T/$n.w" >"$T/$n.txt" 2>&1 &&
     r=$(same "$T/$n.txt" "$T/$n.w"); then ok "training $what, 3 AdamW steps vs the single-device CPU program: $r"
  else bad "training $what:"; tail -n 20 "$T/$n.gen.log" "$T/$n.txt" 2>/dev/null; echo "$r"; fi
}
train dptp "dp x tp (2x2 mesh, 4 ranks)" --gpus 4 --mesh dp=2,tp=2 --strategy dp,tp
train zero "ZeRO (2 ranks)" --gpus 2 --strategy zero
# ZeRO-3 accumulating 2 microbatches: each microbatch's gradient reduce-scattered into the shard right after its
# producer (--zero-reduce per-microbatch, the default)
train zero_mb "ZeRO (2 ranks), 2 microbatches, each one's gradients reduce-scattered" --gpus 2 --strategy zero --microbatches 2
emu_regs_all "dp x tp training, registers per launch (every rank)" "$T/dptp.txt"
emu_regs_all "ZeRO training, registers per launch (every rank)" "$T/zero.txt"
train tpsp "tp,sp (2 ranks, sequence parallelism: reduce_scatter / all_gather over the sequence dim)" --gpus 2 --strategy tp,sp
# the step alone (no -o: writing outputs gathers each tensor on the device, a phase after the steps)
for n in dptp zero tpsp; do
  launch $n --batches "$T/b" --steps 1 >"$T/$n.mem.txt" 2>&1 || bad "$n: the 1-step run: $(tail -n 3 "$T/$n.mem.txt")"
  memory $n "$T/$n.mem.txt"
done
# bf16 mixed precision on 2 ranks (the storage pass's plan): tp (bf16 activations, moved as bf16 by the tp
# collectives) and dp with bf16 parameter gradients (--grad-dtype bf16: the gradient all-reduces sum bf16):
# losses within 1e-3 of the single-device fp32 CPU program (tests/train_bf16.sh's bound), the wire bytes = the
# global program's prediction in storage bytes (the program checks them; --comm-stats prints both), and device
# memory within 5% of --report-cost's
bf16_train() { # NAME WHAT ARGS...
  local n=$1 what=$2 r
  shift 2
  if gen "$n" --batch 8 --seq 8 --train --gpus 2 --precision bf16 "$@" &&
     launch "$n" --batches "$T/b" --steps 3 --comm-stats >"$T/$n.txt" 2>&1 &&
     r=$(python3 - "${REF:-$T/one.txt}" "$T/$n.txt" <<'PY'
import re, sys
ref = [float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(sys.argv[1]).read(), re.M)]
txt = open(sys.argv[2]).read()
got = [float(x) for x in re.findall(r"^step \d+ loss (\S+)", txt, re.M)]
d = [abs(a - b) for a, b in zip(got, ref)]
assert len(got) == 3 and len(ref) == 3 and max(d) <= 1e-3, f"bf16 {got} vs fp32 {ref}"
m = re.search(r"in 3 runs: all_reduce (\d+), all_gather (\d+),.*\(predicted per run: (\d+), (\d+),", txt)
assert m and int(m[1]) == 3 * int(m[3]) and int(m[2]) == 3 * int(m[4]), "no comm line or counted != predicted"
print(f"|bf16 - fp32| per step {' '.join(f'{x:.2g}' for x in d)} (<= 1e-3); bytes sent per run all_reduce {m[3]}, "
      f"all_gather {m[4]} = predicted")
PY
     ); then ok "training bf16 $what (2 ranks), 3 AdamW steps vs the single-device fp32 CPU program: $r"
  else bad "training bf16 $what:"; tail -n 20 "$T/$n.gen.log" "$T/$n.txt" 2>/dev/null; echo "${r:-}"; fi
  launch "$n" --batches "$T/b" --steps 1 >"$T/$n.mem.txt" 2>&1 || bad "$n: the 1-step run: $(tail -n 3 "$T/$n.mem.txt")"
  memory "$n" "$T/$n.mem.txt"
}
bf16_train tpbf16 tp --strategy tp
bf16_train dpg16 "dp, bf16 gradients" --strategy dp --grad-dtype bf16
# ZeRO-1 under bf16 (docs/sharding.md, "ZeRO stages"): the fp32 master split, a whole 16-bit working copy
# gathered at 2 bytes per element, nothing gathered after the update
bf16_train z1bf16 "zero1 (split fp32 master, 16-bit working copy)" --strategy zero1
# a tiny Llama under tp (its vocab-parallel embedding's masked lookup, and the gradient before its first norm,
# cross the ranks as the global program's plan stores them, bf16, whatever fusion makes of their consumers:
# the device program's storage pass once stored that gradient's all_reduce fp32, 4096 bytes per run more than
# predicted, which the program's check refused), against the single-device fp32 CPU Llama
python3 "$SRC/examples/make_model.py" llama -o "$T/l.onnx" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null &&
  "$G" "$T/l.onnx" --input-shape input_ids=8x8 --train --target cpu -q -o "$T/lone/" </dev/null >"$T/lone.log" 2>&1 &&
  "$T/lone/program" --batches "$T/b" --steps 3 >"$T/lone.txt" 2>&1 || bad "the single-device Llama reference: $(tail -n 3 "$T/lone.log" "$T/lone.txt")"
MODEL=$T/l.onnx REF=$T/lone.txt bf16_train ltpbf16 "tp, Llama" --strategy tp
if make -s -C "$T/zero" emu COMM=staged >"$T/zeros.log" 2>&1 &&
   launch zero --batches "$T/b" --steps 3 -o "$T/zeros.w" >"$T/zeros.txt" 2>&1 &&
   r=$(same "$T/zeros.txt" "$T/zeros.w" "$T/zero.txt" "$T/zero.w" exact 2>&1) &&
   [ "$(grep '^step' "$T/zeros.txt")" = "$(grep '^step' "$T/zero.txt")" ]; then
  ok "training ZeRO (2 ranks), host-staged backend (COMM=staged): the NCCL backend's losses and weights bit for bit"
else bad "training ZeRO, host-staged backend:"; tail -n 20 "$T/zeros.log" "$T/zeros.txt"; echo "${r:-}"; fi
# the race-check build: every kernel's bytes against the NCCL streams' collectives (stream happens-before)
if make -s -C "$T/zero" emu-race COMM=nccl >"$T/zeror.log" 2>&1 &&
   GALV_PROGRAM=program-emu-race launch zero --batches "$T/b" --steps 3 >"$T/zeror.txt" 2>&1 &&
   [ "$(grep '^step' "$T/zeror.txt")" = "$(grep '^step' "$T/zero.txt")" ]; then
  ok "training ZeRO (2 ranks), race-check build: no stream race between kernels (their exact bytes) and collectives, no shared- or global-memory race between threads, same losses"
else bad "training ZeRO, race-check build:"; tail -n 20 "$T/zeror.log" "$T/zeror.txt"; fi
echo "     training: $(($(date +%s) - t0)) s"

# ---- a 4-rank GPU checkpoint resumed by the single-device CPU program
if [ -x "$T/dptp/program-emu" ] &&
   launch dptp --batches "$T/b" --steps 2 --save-checkpoint "$T/dptp.ck" >"$T/ck.txt" 2>&1 &&
   "$T/one/program" --batches "$T/b" --steps 1 --load-checkpoint "$T/dptp.ck" -o "$T/ck.w" >"$T/ck1.txt" 2>&1 &&
   r=$(python3 - "$T/one.txt" "$T/ck1.txt" "$T/one.w" "$T/ck.w" "$SRC/tests/lib" <<'PY'
import sys
sys.path.insert(0, sys.argv[5])
from same_training import check
print(check(*sys.argv[1:5], steps=[2]))
PY
   ); then ok "checkpoint of 2 steps from 4-rank dp x tp GPU training, 1 more step by the single-device CPU program: $r"
else bad "GPU checkpoint -> CPU program:"; tail -n 10 "$T/ck.txt" "$T/ck1.txt" 2>/dev/null; echo "${r:-}"; fi

# ---- training pipelines, 2 stages, 4 microbatches
train zbh1 "pipeline ZB-H1 (2 stages, 4 microbatches)" --pipeline-stages 2 --microbatches 4 --schedule zb-h1
emu_regs_all "ZB-H1 pipeline, registers per launch (every stage rank)" "$T/zbh1.txt"
train uneven "pipeline 1F1B on stage devices 1 and 2 (dp in stage 1; 4 microbatches)" \
  --pipeline-stages 2 --microbatches 4 --gpus 3 --stage-devices 1,2 --strategy dp
train recomp "pipeline 1F1B with recomputing stages (--pipeline-recompute; 4 microbatches)" \
  --pipeline-stages 2 --microbatches 4 --pipeline-recompute
train il "pipeline interleaved 1F1B (2 device groups x 2 chunks = 4 stages, a group's ranks taking turns; 4 microbatches)" \
  --pipeline-stages 2 --virtual-stages 2 --schedule interleaved --microbatches 4
# the same on a machine of 4 GPUs (GALV_EMU_DEVICES=4), host-staged (the stages' Makefiles default to COMM=staged
# under interleaved 1F1B: a group's ranks share a GPU, which NCCL refuses): each rank on its device group's GPU
# (runtime/cuda/pipe_cuda.cu d_begin: stage s on group s mod 2, GPUs 0 1 0 1, where one GPU per local rank would be
# 0 1 2 3), and the same stages built with COMM=nccl (one emulated GPU) give the same losses and weights bit for bit
staged_il() {
  local s
  grep -q '^COMM ?= staged$' "$T/il/stage0/Makefile" || { echo "the interleaved stage's Makefile: COMM does not default to staged"; return 1; }
  GALV_EMU_DEVICES=4 launch il --batches "$T/b" --steps 3 -o "$T/ils.w" >"$T/ils.txt" 2>&1 || return 1
  for s in 0 1 2 3; do make -s -C "$T/il/stage$s" emu COMM=nccl >>"$T/ils.log" 2>&1 || return 1; done
  launch il --batches "$T/b" --steps 3 -o "$T/iln.w" >"$T/iln.txt" 2>&1
}
if [ -d "$T/il.w" ]; then
  if r=$(staged_il 2>&1) && r=$(same "$T/ils.txt" "$T/ils.w" "$T/iln.txt" "$T/iln.w" exact 2>&1) &&
     d=$(python3 - "$T/ils.txt" <<'PY'
import re, sys
got = {int(s): int(d) for s, d in re.findall(r"\[stage (\d+), rank \d+\]: CUDA device (\d+) of 4", open(sys.argv[1]).read())}
assert sorted(got) == [0, 1, 2, 3] and all(got[s] == s % 2 for s in got), f"stage -> device {got}, expected s mod 2"
print(" ".join(f"stage {s} on GPU {got[s]}" for s in sorted(got)))
PY
     ); then ok "training pipeline interleaved, host-staged (the Makefile's default) on 4 GPUs: $d (each device group's ranks on its GPU); the NCCL build's losses and weights bit for bit"
  else bad "training pipeline interleaved, host-staged on 4 GPUs:"; tail -n 20 "$T/ils.log" "$T/ils.txt" "$T/iln.txt" 2>/dev/null; echo "${r:-} ${d:-}"; fi
fi
# ---- a clipped pipeline (--clip-grad-norm: one norm over both stages and stage 1's dp ranks; SGD, so the
# update is the clipped gradient itself) vs the clipped single-device CPU program
CLIP=(--optimizer sgd --lr 0.1 --momentum 0.9 --weight-decay 0 --clip-grad-norm 0.5)
if "$G" "$T/g.onnx" --input-shape input_ids=8x8 --train "${CLIP[@]}" --target cpu -q -o "$T/onec/" </dev/null >"$T/onec.log" 2>&1 &&
   "$T/onec/program" --batches "$T/b" --steps 3 -o "$T/onec.w" >"$T/onec.txt" 2>&1 &&
   gen clip --batch 8 --seq 8 --train "${CLIP[@]}" --pipeline-stages 2 --microbatches 4 --gpus 3 --stage-devices 1,2 \
     --strategy dp && launch clip --batches "$T/b" --steps 3 -o "$T/clip.w" >"$T/clip.txt" 2>&1 &&
   r=$(same "$T/clip.txt" "$T/clip.w" "$T/onec.txt" "$T/onec.w"); then
  ok "training pipeline 1F1B, stage devices 1 and 2, --clip-grad-norm 0.5 (SGD), 3 steps vs the clipped single-device CPU program: $r"
else bad "training pipeline with --clip-grad-norm:"; tail -n 20 "$T/onec.log" "$T/clip.gen.log" "$T/clip.txt" 2>/dev/null; echo "${r:-}"; fi
echo "cuda_emu_dist: $pass passed, $fail failed ($(($(date +%s) - t0)) s)"
galv_exit $fail
