#!/usr/bin/env bash
# bench/gpu_check.sh — the CUDA target on one GPU, in one prepared command.
#
#   bench/gpu_check.sh prepare DIR   (here, no GPU needed; needs galvc in $BUILD, default build-cuda)
#       GPT-2 small (12 layers, 768 hidden, 12 heads, vocab 50257; helper-built,
#       batch 1, seq 64) -> DIR/gpt2s_fp32/ and DIR/gpt2s_bf16/ (galvc --target cuda);
#       weights from `program --gen-weights 1`; the CPU target's logits on them ->
#       DIR/ref/logits.npy; then weights.bin is deleted so DIR stays small (~20 MB).
#   bench/gpu_check.sh run DIR       (on the GPU machine: nvcc, no network, no packages)
#       builds and runs every kernel test (correctness sweep, then --time: GB/s or
#       TFLOP/s against the H200's figures), regenerates the weights from the seed,
#       runs GPT-2 small fp32 and bf16 (--profile: time per kernel kind; step time,
#       GEMM+attention TFLOP/s) and compares with the CPU target's logits:
#       fp32 within atol 1e-4 + rtol 1e-4, bf16 within atol 5e-2 + rtol 5e-2
#       (bf16 storage of every activation and weight: ~3 significant digits).
#   Finishes in well under 4 minutes on an H200 (compiles run 8 at a time).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-}; DIR=${2:-}
[ -n "$mode" ] && [ -n "$DIR" ] || { echo "usage: $0 prepare|run DIR"; exit 2; }
mkdir -p "$DIR"; DIR=$(cd "$DIR" && pwd)
SEQ=64

if [ "$mode" = prepare ]; then
  BUILD=${BUILD:-$SRC/build-cuda}
  python3 "$SRC/examples/make_model.py" gpt2 --layers 12 --hidden 768 --heads 12 --vocab 50257 --ffn 3072 \
    --no-verify -o "$DIR/gpt2s.onnx" >/dev/null
  python3 -c "import numpy as np; np.save('$DIR/ids.npy', (np.arange($SEQ, dtype=np.int64).reshape(1, $SEQ) * 7919) % 50257)"
  for p in fp32 bf16; do
    "$BUILD/galvc" "$DIR/gpt2s.onnx" --batch 1 --seq $SEQ --target cuda --precision $p --no-build -q -o "$DIR/gpt2s_$p/"
  done
  d=$DIR/gpt2s_fp32
  make -s -C "$d" -j2 program >/dev/null
  "$d/program" --gen-weights 1
  make -s -C "$d" cpu
  "$d/program-cpu" --input input_ids="$DIR/ids.npy" -o "$DIR/ref" | tail -1
  for p in fp32 bf16; do (cd "$DIR/gpt2s_$p" && rm -f weights.bin program program-cpu io.o npy.o); done
  rm -f "$DIR/gpt2s.onnx"
  du -sh "$DIR"
  exit 0
fi

[ "$mode" = run ] || { echo "usage: $0 prepare|run DIR"; exit 2; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || echo "(nvidia-smi not available)"
B=$DIR/build; mkdir -p "$B"
NVF="-O3 -std=c++17 -gencode arch=compute_90,code=sm_90"
RT=$SRC/runtime
nvcc $NVF -c -o "$B/kernels.o" "$RT/cuda/kernels.cu" & nvcc $NVF -c -o "$B/context.o" "$RT/cuda/context.cu" &
cc -O2 -std=gnu11 -c -o "$B/io.o" "$RT/io.c" & cc -O2 -std=gnu11 -c -o "$B/npy.o" "$RT/npy.c" & wait
ar rcs "$B/libk.a" "$B/kernels.o" "$B/context.o" "$B/io.o" "$B/npy.o"
cc -O2 -o "$B/npy_compare" "$SRC/tests/cuda/npy_compare.c" "$RT/npy.c" -lm
for t in "$SRC"/tests/cuda/test_*.cu; do nvcc $NVF -o "$B/$(basename "$t" .cu)" "$t" "$B/libk.a" -lcublas -lcublasLt & done
for p in fp32 bf16; do make -s -C "$DIR/gpt2s_$p" -j4 program & done
wait
echo "== built in $(($(date +%s) - t0)) s"
fail=0
for t in "$B"/test_*; do
  [ -x "$t" ] || continue
  echo "== $(basename "$t")"
  "$t" --time || fail=1
done
for p in fp32 bf16; do
  d=$DIR/gpt2s_$p
  echo "== GPT-2 small ($p), batch 1, seq $SEQ"
  "$d/program" --gen-weights 1 >/dev/null
  "$d/program" --input input_ids="$DIR/ids.npy" --warmup 3 --iters 20 --profile -o "$d/res" || { fail=1; continue; }
  if [ $p = fp32 ]; then tol="1e-4 1e-4"; else tol="5e-2 5e-2"; fi
  echo -n "   vs the CPU target: "
  "$B/npy_compare" "$d/res/logits.npy" "$DIR/ref/logits.npy" $tol || fail=1
done
echo "== gpu_check: $(($(date +%s) - t0)) s, $([ $fail = 0 ] && echo PASS || echo FAIL)"
exit $fail
