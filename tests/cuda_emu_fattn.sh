#!/usr/bin/env bash
# Fused attention in training on the CUDA target (docs/fused-attention.md;
# runtime/cuda/fused_attention.cuh): the tiny GPT-2 and Llama
# (tests/lib/tiny_lms.sh) compiled with galvc --train --target cuda
# --fused-attention on call galv_cu_fattn / galv_cu_fattn_grad once per
# layer each (and the inference kernel galv_attention never); built with
# `make emu` (runtime/cuda over the CPU execution layer), 2 AdamW steps give
# losses and every weight equal to the unfused single-device CPU program's
# (rtol 1e-4, atol 1e-5: the emulated kernels sum in another order). With
# nvcc on PATH, program.cu also compiles warning-free (-Werror all-warnings).
# Usage: cuda_emu_fattn.sh BUILD_DIR
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$SRC/tests/lib/require.sh"
. "$SRC/tests/lib/tiny_lms.sh"
require_cmd "g++ (build-essential)" g++
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export OPENBLAS_NUM_THREADS=1 CFLAGS=-O0
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
G=$BUILD/galvc
B=4 S=16 L=2
tiny_lms "$T"
python3 - "$T" $B $S <<'PY' || { echo "FAIL batches"; exit 1; }
import numpy as np, os, sys
t, B, S = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
r = np.random.RandomState(11)
os.makedirs(t + "/b")
np.save(t + "/b/input_ids.npy", r.randint(0, 64, (2, B, S)).astype(np.int64))
np.save(t + "/b/labels.npy", r.randint(0, 64, (2, B, S)).astype(np.int64))
PY
same() { # LOG WDIR REF_LOG REF_WDIR
  python3 - "$3" "$1" "$4" "$2" "$SRC/tests/lib" <<'PY'
import sys
sys.path.insert(0, sys.argv[5])
from same_training import check
print(check(*sys.argv[1:5], loss_rtol=1e-4))
PY
}
for fam in gpt2 llama; do
  if ! "$G" "$T/$fam.onnx" --batch $B --seq $S --train --target cpu --fused-attention off -q -o "$T/$fam-cpu/" </dev/null >"$T/$fam-cpu.log" 2>&1 ||
     ! "$T/$fam-cpu/program" --batches "$T/b" --steps 2 -o "$T/$fam-cpu.w" >"$T/$fam-cpu.txt" 2>&1; then
    bad "$fam: the unfused CPU reference: $(grep -m2 -i error "$T/$fam-cpu.log" "$T/$fam-cpu.txt")"
    continue
  fi
  d="$T/$fam-cu"
  if ! "$G" "$T/$fam.onnx" --batch $B --seq $S --train --target cuda --fused-attention on --no-build -q -o "$d/" </dev/null >"$d.gen.log" 2>&1; then
    bad "$fam: galvc --target cuda --fused-attention on: $(grep -m3 -i error "$d.gen.log")"
    continue
  fi
  nf=$(grep -c 'galv_cu_fattn(' "$d/program.cu") ng=$(grep -c 'galv_cu_fattn_grad(' "$d/program.cu") ni=$(grep -c 'galv_attention<' "$d/program.cu")
  if [ "$nf" = $L ] && [ "$ng" = $L ] && [ "$ni" = 0 ]; then
    ok "$fam: program.cu calls galv_cu_fattn / _grad $nf / $ng times, the inference kernel never"
  else
    bad "$fam: program.cu calls galv_cu_fattn $nf, _grad $ng, galv_attention $ni (expected $L, $L, 0)"
  fi
  if command -v nvcc >/dev/null; then
    if nvcc -std=c++17 -gencode arch=compute_90,code=sm_90 -Xcompiler -Wall,-Wextra,-Wno-unused-parameter,-Wno-unused-variable \
      -Werror all-warnings -I"$d" -c "$d/program.cu" -o "$T/$fam.o" >"$T/$fam.nvcc" 2>&1; then
      ok "$fam: program.cu compiles with nvcc -Werror all-warnings"
    else
      bad "$fam: nvcc: $(head -3 "$T/$fam.nvcc")"
    fi
  fi
  if ! make -s -C "$d" emu >>"$d.gen.log" 2>&1 || ! "$d/program-emu" --batches "$T/b" --steps 2 -o "$d.w" >"$d.txt" 2>&1; then
    bad "$fam: make emu / program-emu: $(grep -m3 -i error "$d.gen.log" "$d.txt")"
    continue
  fi
  if r=$(same "$d.txt" "$d.w" "$T/$fam-cpu.txt" "$T/$fam-cpu.w"); then
    ok "$fam: cuda (emu) fused == cpu unfused: $r"
  else
    bad "$fam: cuda (emu) fused vs cpu unfused: $r"
  fi
done
echo "cuda_emu_fattn: $pass passed, $fail failed"
[ $fail = 0 ]
