#!/usr/bin/env bash
# Fused attention in training on the CUDA target (docs/fused-attention.md;
# runtime/cuda/fused_attention.cuh): the tiny GPT-2 and Llama
# (tests/lib/tiny_lms.sh) compiled with galvc --train --target cuda
# --fused-attention on call galv_cu_fattn / galv_cu_fattn_grad once per
# layer each (and the inference kernel galv_attention never); built with
# `make emu` (runtime/cuda over the CPU execution layer), 2 AdamW steps give
# losses and every weight equal to the unfused single-device CPU program's
# (rtol 1e-4, atol 1e-5: the emulated kernels sum in another order). GPT-2
# also with --precision bf16 (the kernels on __nv_bfloat16 storage, fp32
# accumulators in scratch): 2 steps equal the CPU target's bf16 program
# with --fused-attention on (the same storage plan) within
# docs/cpu-target.md's bound, losses 1e-3, every weight within 2 x lr x
# steps (AdamW's +-lr on a gradient within rounding of zero). gpt2d: the
# GPT-2 with --dropout 0.1 (make_model.py: on the attention probabilities,
# taken into the fused kernels, and both residual branches), fp32, equal to
# the unfused CPU program (the kernels draw galv.dropout's mask per score).
# With nvcc on
# PATH, program.cu also compiles warning-free (-Werror all-warnings).
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
. "$SRC/tests/lib/rank_compare.sh"
tiny_lms "$T"
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/gpt2d.onnx" --layers 2 --hidden 32 --heads 4 --vocab 64 --dropout 0.1 --no-verify \
  >/dev/null || bad "gpt2d: make_model --dropout 0.1"
lm_batches "$T/b" $B $S 11
for run in gpt2:fp32 llama:fp32 gpt2:bf16 gpt2d:fp32; do
  fam=${run%:*} p=${run#*:} ref=off bound=()
  # bf16: the CPU program of the same plan (fused); losses within 1e-3 (of ~4.2: rtol 2.4e-4), weights 2 x lr x steps
  [ $p = bf16 ] && ref=on bound=(4e-3 0 2.4e-4) # same_training's ATOL RTOL LOSS_RTOL
  single_program "$T/$fam-$p-cpu" "$T/$fam.onnx" "--batches $T/b --steps 2" --batch $B --seq $S --train --precision $p --fused-attention $ref
  d="$T/$fam-$p-cu"
  if ! "$G" "$T/$fam.onnx" --batch $B --seq $S --train --target cuda --precision $p --fused-attention on --no-build -q -o "$d/" </dev/null >"$d.gen.log" 2>&1; then
    bad "$fam: galvc --target cuda --fused-attention on: $(grep -m3 -i error "$d.gen.log")"
    continue
  fi
  ty=float
  [ $p = bf16 ] && ty=__nv_bfloat16
  nf=$(grep -c "galv_cu_fattn(&d, (const $ty \*)" "$d/program.cu") ng=$(grep -c "galv_cu_fattn_grad(&d, (const $ty \*)" "$d/program.cu")
  ni=$(grep -c 'galv_attention<' "$d/program.cu")
  nd=$(grep -c '{GALV_BOOL}, 1, {4, ' "$d/program.cu") # the fused calls with dropout in their descriptor
  [ $fam = gpt2d ] && [ "$nd" != $((2 * L)) ] && bad "$fam: $nd fused calls with dropout (expected $((2 * L)))"
  if [ "$nf" = $L ] && [ "$ng" = $L ] && [ "$ni" = 0 ]; then
    ok "$fam $p: program.cu calls galv_cu_fattn / _grad on $ty $nf / $ng times, the inference kernel never"
  else
    bad "$fam $p: program.cu calls galv_cu_fattn $nf, _grad $ng on $ty, galv_attention $ni (expected $L, $L, 0)"
  fi
  if command -v nvcc >/dev/null; then
    if nvcc -std=c++17 -gencode arch=compute_90,code=sm_90 -Xcompiler -Wall,-Wextra,-Wno-unused-parameter,-Wno-unused-variable \
      -Werror all-warnings -I"$d" -c "$d/program.cu" -o "$T/$fam.o" >"$T/$fam.nvcc" 2>&1; then
      ok "$fam $p: program.cu compiles with nvcc -Werror all-warnings"
    else
      bad "$fam $p: nvcc: $(head -3 "$T/$fam.nvcc")"
    fi
  fi
  if ! make -s -C "$d" emu >>"$d.gen.log" 2>&1 || ! "$d/program-emu" --batches "$T/b" --steps 2 -o "$d.w" >"$d.txt" 2>&1; then
    bad "$fam $p: make emu / program-emu: $(grep -m3 -i error "$d.gen.log" "$d.txt")"
    continue
  fi
  if r=$(same_training "$T/$fam-$p-cpu.log" "$d.txt" "$T/$fam-$p-cpu.w" "$d.w" "${bound[@]}"); then
    ok "$fam $p: cuda (emu) fused == cpu $p --fused-attention $ref: $r"
  else
    bad "$fam $p: cuda (emu) fused vs cpu $p --fused-attention $ref: $r"
  fi
done
echo "cuda_emu_fattn: $pass passed, $fail failed"
[ $fail = 0 ]
