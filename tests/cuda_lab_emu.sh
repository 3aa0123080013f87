#!/usr/bin/env bash
# The kernel lab (tests/cuda/test_*.cu: each runtime kernel against a plain
# CPU reference over a sweep of sizes, fp32 and bf16 storage) run under the
# CPU execution layer (runtime/cuda/emu/): the lab's sources and
# runtime/cuda/{kernels,kernels_grad,context}.cu compiled by g++ against the
# layer, as `make emu` builds a program. The sweeps hold the edge shapes:
# head dims 1, 16, 64 and 128; sequences of 1, 31, 33, 100 and 257 (not
# multiples of 32); rows longer than a block (softmax over 50257, norms over
# 5000); empty tensors (0 rows, a batch of 0). Each lab program exits 1 on
# any mismatch, and the layer on any launch-limit, race or memory error.
# --time is refused under the layer (timing needs a GPU: bench/gpu_check.sh).
# Registers per thread are not checked here (the lab links no ptxas counts);
# tests/cuda_emu.sh, cuda_emu_ops.sh and cuda_emu_dist.sh check them for
# every launch of the programs (a named skipped part without nvcc).
# Usage: cuda_lab_emu.sh BUILD_DIR (unused: the lab builds from source)
set -uo pipefail
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$SRC/tests/lib/require.sh"
require_cmd "g++ (build-essential)" g++
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export OPENBLAS_NUM_THREADS=1
pass=0 fail=0
E=$SRC/runtime/cuda/emu
RT=$SRC/runtime
for c in io npy file; do gcc -O1 -std=gnu11 -c -o "$T/$c.o" "$RT/$c.c" || { echo "FAIL $c.c"; exit 1; }; done
build() { # NAME: the lab program NAME under the layer
  g++ -std=c++17 -O1 -Wall -Wno-unused-parameter -Wno-unused-variable -Wno-sign-compare -Wno-unused-function -I"$E" \
    -o "$T/$1" -x c++ "$SRC/tests/cuda/$1.cu" "$RT/cuda/kernels.cu" "$RT/cuda/kernels_grad.cu" "$RT/cuda/context.cu" \
    -x none "$E/emu.cc" "$E/emu_blas.cc" "$T/io.o" "$T/npy.o" "$T/file.o" -lopenblas -lm >"$T/$1.build" 2>&1
}
names=()
for t in "$SRC"/tests/cuda/test_*.cu; do names+=("$(basename "$t" .cu)"); done
for ((i = 0; i < ${#names[@]}; i += 2)); do # two builds at a time
  build "${names[$i]}" &
  [ $((i + 1)) -lt ${#names[@]} ] && build "${names[$((i + 1))]}" &
  wait
done
for n in "${names[@]}"; do
  if [ ! -x "$T/$n" ]; then
    echo "FAIL $n: does not build under the layer:"; head -20 "$T/$n.build"; fail=$((fail + 1)); continue
  fi
  rc=0
  timeout 300 "$T/$n" >"$T/$n.out" 2>&1 || rc=$?
  checks=$(grep -cE ' ok$' "$T/$n.out")
  if [ $rc = 0 ] && [ "$checks" -gt 0 ] && ! grep -qE 'MISMATCH|✗' "$T/$n.out"; then
    echo "ok   $n: $checks kernel checks vs the CPU reference under the execution layer"; pass=$((pass + 1))
  else
    echo "FAIL $n (exit $rc):"; grep -vE ' ok$' "$T/$n.out" | head -20; fail=$((fail + 1))
  fi
done
if "$T/${names[0]}" --time >/dev/null 2>"$T/time.err"; then
  echo "FAIL --time under the layer was accepted"; fail=$((fail + 1))
elif grep -q "needs a GPU" "$T/time.err"; then echo "ok   --time refused under the layer: $(cat "$T/time.err")"; pass=$((pass + 1))
else echo "FAIL --time: $(cat "$T/time.err")"; fail=$((fail + 1)); fi
echo "cuda_lab_emu: $pass passed, $fail failed"
galv_exit $fail
