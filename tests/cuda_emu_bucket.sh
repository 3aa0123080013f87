#!/usr/bin/env bash
# Gradient buckets on the CUDA target (passes/bucket.c; docs/planner.md
# "Gradient buckets"): the CUDA emitter realises the same buckets as the CPU
# one (the bucket pass rewrites the IR both emit: a galv.concat packing the
# gradients, one galv.all_reduce / reduce_scatter, galv.slice unpacking),
# so program.cu makes one NCCL call per bucket. Tiny GPT-2 (2 layers,
# hidden 32), galvc --target cuda, built with `make emu` (runtime/cuda over
# the CPU execution layer, NCCL over MPI), 2 ranks, dp and ZeRO-2, with
# --bucket-mb 0 and 0.01 (several buckets), and dp with auto (the CUDA
# target's cluster, h100-sxm, is latency bound: auto must bucket), 3 AdamW steps:
#   - losses and every weight = the single-device CPU program's (rtol 1e-4,
#     atol 1e-5) and = the CPU target's bucketed program of the same plan
#     (the same bound: the emulated kernels sum in another order);
#   - the reduction calls program.cu makes (galv_all_reduce /
#     galv_reduce_scatter lines) and the ones the NCCL backend counts
#     (--comm-stats "comm calls") drop with buckets; the wire bytes are
#     checked against the global prediction by the program itself.
# Usage: cuda_emu_bucket.sh BUILD_DIR
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$SRC/tests/lib/require.sh"
require_cmd "g++ (build-essential)" g++
require_cmd "OpenMPI (mpicc, mpirun)" mpicc mpirun
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export OPENBLAS_NUM_THREADS=1 CFLAGS=-O0
. "$SRC/tests/lib/mpi_env.sh"
G=$BUILD/galvc
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/g.onnx" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null ||
  { echo "FAIL make_model"; exit 1; }
python3 - "$T" <<'PY' || { echo "FAIL batches"; exit 1; }
import numpy as np, os, sys
t = sys.argv[1]
r = np.random.RandomState(11)
os.makedirs(t + "/b")
np.save(t + "/b/input_ids.npy", r.randint(0, 64, (3, 8, 8)).astype(np.int64))
np.save(t + "/b/labels.npy", r.randint(0, 64, (3, 8, 8)).astype(np.int64))
PY
"$G" "$T/g.onnx" --batch 8 --seq 8 --train --target cpu -q -o "$T/one/" </dev/null >"$T/one.log" 2>&1 &&
  "$T/one/program" --batches "$T/b" --steps 3 -o "$T/one.w" >"$T/one.txt" 2>&1 ||
  { echo "FAIL the single-device reference:"; cat "$T/one.log" "$T/one.txt"; exit 1; }
same() { # LOG WDIR REF_LOG REF_WDIR [exact]
  python3 - "$3" "$1" "$4" "$2" "${5:-}" "$SRC/tests/lib" <<'PY'
import sys
sys.path.insert(0, sys.argv[6])
from same_training import check
print(check(*sys.argv[1:5], loss_rtol=0 if sys.argv[5] else 1e-4, exact=bool(sys.argv[5])))
PY
}
calls() { # LOG: rank 0's reduction calls (all_reduce + reduce_scatter) from the comm calls line
  sed -n 's/^.*comm calls by rank 0 in [0-9]* runs: all_reduce \([0-9]*\), all_gather [0-9]*, reduce_scatter \([0-9]*\),.*$/\1 \2/p' "$1" |
    awk '{ print $1 + $2 }'
}
for s in dp zero2; do
  mbs="0 0.01"
  [ "$s" = dp ] && mbs="$mbs auto" # the CUDA target's cluster (h100-sxm, latency bound): auto buckets
  for mb in $mbs; do
    n=$s-$mb
    if ! "$G" "$T/g.onnx" --batch 8 --seq 8 --train --gpus 2 --strategy "$s" --bucket-mb "$mb" --target cuda --no-build \
         -o "$T/$n/" </dev/null >"$T/$n.gen.log" 2>&1 || ! make -s -C "$T/$n" emu >>"$T/$n.gen.log" 2>&1; then
      bad "$n: galvc --target cuda / make emu: $(grep -m3 -i error "$T/$n.gen.log")"; continue
    fi
    if ! GALV_PROGRAM=program-emu timeout 300 "$T/$n/launch" --batches "$T/b" --steps 3 --comm-stats -o "$T/$n.w" \
         </dev/null >"$T/$n.txt" 2>&1; then
      bad "$n: run: $(grep -m2 -i error "$T/$n.txt")"; continue
    fi
    if r=$(same "$T/$n.txt" "$T/$n.w" "$T/one.txt" "$T/one.w" 2>&1); then ok "$n (CUDA emulation, 2 ranks) = one CPU device: $r"
    else bad "$n: vs one CPU device: $r"; fi
    grep -q "comm bytes sent by rank 0 in 3 runs: .* from the global program$" "$T/$n.txt" ||
      bad "$n: bytes not checked against the global prediction: $(grep -m1 'comm bytes' "$T/$n.txt")"
    if [ "$mb" = auto ]; then
      if grep -q '^bucket: auto on h100-sxm: .* [1-9][0-9]* bytes [0-9]* ns (chosen)' "$T/$n.gen.log" &&
         grep -q '^bucket: [0-9]* gradient reductions in [0-9]* buckets' "$T/$n.gen.log"; then
        ok "$n: $(grep -m1 '^bucket: auto' "$T/$n.gen.log"); $(grep -m1 '^bucket: [0-9]' "$T/$n.gen.log")"
      else bad "$n: auto chose no buckets on h100-sxm: $(grep -m2 '^bucket' "$T/$n.gen.log")"; fi
    fi
  done
  n=$s-0.01
  [ -f "$T/$n/program.cu" ] && [ -f "$T/$s-0/program.cu" ] || continue
  p0=$(grep -cE 'galv_(all_reduce|reduce_scatter)\(' "$T/$s-0/program.cu") p1=$(grep -cE 'galv_(all_reduce|reduce_scatter)\(' "$T/$n/program.cu")
  c0=$(calls "$T/$s-0.txt") c1=$(calls "$T/$n.txt")
  if [ "$p1" -lt "$p0" ] && [ -n "$c1" ] && [ -n "$c0" ] && [ "$c1" -lt "$c0" ]; then
    ok "$s: reduction calls in program.cu $p0 -> $p1, counted by the NCCL backend in 3 steps $c0 -> $c1 ($(grep -m1 '^bucket:' "$T/$n.gen.log"))"
  else bad "$s: reduction calls program.cu $p0 -> $p1, counted $c0 -> $c1"; fi
  # the CPU target's program of the same plan
  if "$G" "$T/g.onnx" --batch 8 --seq 8 --train --gpus 2 --strategy "$s" --bucket-mb 0.01 --target cpu -q -o "$T/cpu-$n/" \
       </dev/null >"$T/cpu-$n.log" 2>&1 &&
     timeout 300 "$T/cpu-$n/launch" --batches "$T/b" --steps 3 -o "$T/cpu-$n.w" </dev/null >"$T/cpu-$n.txt" 2>&1; then
    if r=$(same "$T/$n.txt" "$T/$n.w" "$T/cpu-$n.txt" "$T/cpu-$n.w" 2>&1); then ok "$n: CUDA emulation = the CPU target's bucketed program: $r"
    else bad "$n: CUDA emulation vs the CPU target's bucketed program: $r"; fi
  else bad "$n: the CPU target's program: $(grep -m2 -i error "$T/cpu-$n.log" "$T/cpu-$n.txt")"; fi
done
echo "cuda_emu_bucket: $pass passed, $fail failed"
[ "$fail" = 0 ]
