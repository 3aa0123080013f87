#!/usr/bin/env bash
# cpu_vs_ort.sh [BUILD_DIR] — the generated CPU program against onnxruntime
# on a GPT-2-small-shaped model (examples/make_model.py gpt2: 12 layers,
# hidden 768, 12 heads, ffn 3072, vocab 50257, seq 128), batch 1 and 8,
# threads 1 and 2: same inputs, same thread count, outputs checked (rtol
# 1e-4 / atol 1e-5), one table of min/mean ms and the galvc/onnxruntime
# ratio (bench/cpu_vs_ort.py). Prints figures; never fails on time.
#
# Environment: VOCAB (50257), SEQ (128), BATCHES ("1 8"), THREADS ("1,2"),
# ITERS (10), WARMUP (2), ROUNDS (2: galvc and onnxruntime alternate, ITERS
# split among the rounds, against bursts of load), PROFILE=1 (print the program's per-kernel profile),
# BLAS_CORE (auto: the program runs with OPENBLAS_CORETYPE unset, so OpenBLAS
# picks its kernels for the CPU as onnxruntime does; NAME: that core),
# KEEP=DIR (keep the model and programs there and reuse them next time).
# Writes about 2 GB (model + two weights files) to a temp folder.
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$SRC/build}" && pwd)
PY=${PYTHON:-python3}
VOCAB=${VOCAB:-50257} SEQ=${SEQ:-128} BATCHES=${BATCHES:-"1 8"} THREADS=${THREADS:-1,2}
ITERS=${ITERS:-10} WARMUP=${WARMUP:-2}
[ -x "$BUILD/galvc" ] || { echo "cpu_vs_ort.sh: $BUILD/galvc not built" >&2; exit 2; }
if [ -n "${KEEP:-}" ]; then
  T=$KEEP
  mkdir -p "$T"
else
  T=$(mktemp -d "${TMPDIR:-/tmp}/galv_bench.XXXXXX")
  trap 'rm -rf "$T"' EXIT
fi
M=$T/gpt2_small_v$VOCAB.onnx
if [ ! -f "$M" ]; then
  "$PY" "$SRC/examples/make_model.py" gpt2 -o "$M" --layers 12 --hidden 768 --heads 12 --ffn 3072 \
    --vocab "$VOCAB" --max-pos 1024 --no-verify
fi
progs=()
for b in $BATCHES; do
  d=$T/prog_v${VOCAB}_b${b}_s$SEQ
  # always regenerate: the program must come from this galvc
  "$BUILD/galvc" "$M" --batch "$b" --seq "$SEQ" --target cpu -q -o "$d/"
  progs+=(--prog "$b=$d")
done
prof=()
[ -n "${PROFILE:-}" ] && prof=(--profile)
echo "model: gpt2 12 layers, hidden 768, 12 heads, ffn 3072, vocab $VOCAB, seq $SEQ; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$PY" "$SRC/bench/cpu_vs_ort.py" "$M" "${progs[@]}" --seq "$SEQ" --threads "$THREADS" --iters "$ITERS" \
  --warmup "$WARMUP" --rounds "${ROUNDS:-2}" --blas-core "${BLAS_CORE:-auto}" "${prof[@]}"
