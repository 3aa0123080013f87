#!/bin/bash
# predict_vs_measure.sh [BUILD_DIR] — the cost model against the clock: for a
# few GPT-2 sizes (examples/make_model.py), galvc's predicted step time of the
# single-device CPU program under the cpu-local cluster (calibrated first on
# this machine by bench/calibrate_cpu.sh) beside the program's measured time
# (one BLAS thread, as calibrated). Figures only: it never passes or fails.
#   GALV_PVM_CLUSTER=FILE.json   skip calibration, use this cluster file
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
build=${1:-$src/build}
galvc=$build/galvc
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cluster=${GALV_PVM_CLUSTER:-}
if [ -z "$cluster" ]; then
  cluster=$tmp/cpu-local.json
  "$here/calibrate_cpu.sh" "$cluster" 2 | sed 's/^/  /'
fi

# name hidden layers heads vocab batch seq
sizes="small 128 2 4 512 2 32
medium 256 2 4 1024 4 64
large 512 4 8 2048 4 128"

printf '%-8s %6s %6s %6s %10s %12s %14s %14s %14s %8s\n' model hidden layers vocab tokens GFLOP \
  "predicted ms" "measured min" "measured mean" "min/pred"
echo "$sizes" | while read -r name d L h V B T; do
  dir=$tmp/$name
  mkdir -p "$dir"
  python3 "$src/examples/make_model.py" gpt2 -o "$dir/m.onnx" --hidden "$d" --layers "$L" --heads "$h" \
    --vocab "$V" --no-verify > /dev/null
  python3 -c "import numpy as np; np.save('$dir/ids.npy', (np.arange($B*$T) % $V).reshape($B, $T).astype(np.int64))"
  "$galvc" "$dir/m.onnx" --batch "$B" --seq "$T" --cluster "$cluster" --report-cost -q -o "$dir/out/" > "$dir/cost.txt"
  pred=$(sed -n 's/^predicted step: \([0-9]*\) ns.*/\1/p' "$dir/cost.txt")
  flops=$(sed -n 's/^total: .*FLOPs \([0-9]*\) .*/\1/p' "$dir/cost.txt")
  OPENBLAS_NUM_THREADS=1 "$dir/out/program" --input "input_ids=$dir/ids.npy" --iters 10 --warmup 2 --threads 1 \
    > "$dir/run.txt" 2>&1
  mean=$(sed -n 's/.*mean \([0-9.]*\) ms, min \([0-9.]*\) ms.*/\1/p' "$dir/run.txt")
  min=$(sed -n 's/.*mean \([0-9.]*\) ms, min \([0-9.]*\) ms.*/\2/p' "$dir/run.txt")
  awk -v n="$name" -v d="$d" -v L="$L" -v V="$V" -v tok=$((B * T)) -v f="$flops" -v p="$pred" -v mn="$min" -v me="$mean" \
    'BEGIN { printf "%-8s %6d %6d %6d %10d %12.3f %14.3f %14.3f %14.3f %8.2f\n", n, d, L, V, tok, f / 1e9, p / 1e6, mn, me, mn / (p / 1e6) }'
done
echo "(predicted: galvc --report-cost under $(basename "$cluster"): roofline sum over the program's ops; measured: ./program --iters 10 --warmup 2 --threads 1)"
